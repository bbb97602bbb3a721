package clusters

import (
	"cmp"
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

// DefaultSyncTimeout is how long WatchSecrets' first listing of the Secrets may fail before
// WatchSecrets does; a listing that is only slow is waited for.
const DefaultSyncTimeout = 30 * time.Second

// syncCheck is how often WatchSecrets looks at a first listing not done yet (tests shorten it).
var syncCheck = DefaultSyncTimeout

// WatchSecrets registers the cluster Secrets of namespace (those labelled
// clusterspec.ClusterLabel) in r and keeps them current: an informer watches them until stop
// is called (stop waits for it to end). It returns once the first listing is in r, or an error
// when the Secrets cannot be listed (e.g. RBAC forbids it: after DefaultSyncTimeout) or ctx ends.
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
	// The handler's HasSynced, not the informer's: the informer has listed everything before
	// its handler has registered it all, and a rollout resolved then misses clusters. A
	// listing that fails (RBAC, a bad token) fails WatchSecrets after DefaultSyncTimeout; one
	// that is only slow (10,000 Secrets on a busy apiserver) is waited for, until ctx ends.
	for waited := syncCheck; ; waited += syncCheck {
		if syncedWithin(ctx, reg.HasSynced, syncCheck) {
			return stop, nil
		}
		failure := lastErr.Load()
		if ctx.Err() != nil || failure != nil {
			stop()
			return nil, fmt.Errorf("list cluster Secrets (label %s) in namespace %s: not done within %s: %v; "+
				"the service account needs get, list and watch on secrets there", clusterspec.ClusterLabel, namespace, waited, cmp.Or(failure, any(ctx.Err())))
		}
		r.log.Info("still listing cluster Secrets", zap.String("namespace", namespace), zap.Duration("waited", waited))
	}
}

// syncedWithin waits up to d (and ctx) for synced.
func syncedWithin(ctx context.Context, synced cache.InformerSynced, d time.Duration) bool {
	wait, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return cache.WaitForCacheSync(wait.Done(), synced)
}

func (r *Registry) putObject(obj any) {
	if s, ok := obj.(*corev1.Secret); ok {
		r.PutSecret(s)
	}
}
