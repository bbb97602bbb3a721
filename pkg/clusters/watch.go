package clusters

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/sealane/sealane/pkg/clusterspec"
)

// DefaultSyncTimeout bounds WatchSecrets' first listing of the Secrets.
const DefaultSyncTimeout = 30 * time.Second

// WatchSecrets registers the cluster Secrets of namespace (those labelled
// clusterspec.ClusterLabel) in r and keeps them current: an informer watches them until stop
// is called (stop waits for it to end). It returns once the first listing is in r, or an error
// when the Secrets cannot be listed within DefaultSyncTimeout or ctx (e.g. RBAC forbids it).
func (r *Registry) WatchSecrets(ctx context.Context, cs kubernetes.Interface, namespace string) (stop func(), err error) {
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = clusterspec.ClusterLabel }))
	inf := factory.Core().V1().Secrets().Informer()
	var lastErr atomic.Value // error, from the reflector's goroutine
	_ = inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
		lastErr.Store(fmt.Sprint(err))
		r.log.Warn("watch cluster Secrets", zap.String("namespace", namespace), zap.Error(err))
	})
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.putObject(obj) },
		UpdateFunc: func(_, obj any) { r.putObject(obj) },
		DeleteFunc: func(obj any) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				r.DeleteSecret(key)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("watch cluster Secrets in %s: %w", namespace, err)
	}
	r.mu.Lock()
	r.watching = true
	r.mu.Unlock()
	done := make(chan struct{})
	factory.Start(done)
	stop = func() {
		close(done)
		factory.Shutdown()
	}
	syncCtx, cancel := context.WithTimeout(ctx, DefaultSyncTimeout)
	defer cancel()
	// The handler's HasSynced, not the informer's: the informer has listed everything before
	// its handler has registered it all, and a rollout resolved then misses clusters.
	if !cache.WaitForCacheSync(syncCtx.Done(), reg.HasSynced) {
		stop()
		return nil, fmt.Errorf("list cluster Secrets (label %s) in namespace %s: not done within %s: %v; "+
			"the service account needs get, list and watch on secrets there", clusterspec.ClusterLabel, namespace, DefaultSyncTimeout, lastErr.Load())
	}
	return stop, nil
}

func (r *Registry) putObject(obj any) {
	if s, ok := obj.(*corev1.Secret); ok {
		r.PutSecret(s)
	}
}
