package track_test

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sealane/sealane/pkg/kube/kubetest"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/track"
)

// Every target is reported to OnPods once, pods or not, before any Event about it goes to
// OnEvent: the log relay learns a resource's werf.io/show-service-messages there, and an Event
// passed before would be dropped for good (a Deployment's ScalingReplicaSet came before its
// pods existed and was never shown).
func TestOnPodsComesBeforeOnEvent(t *testing.T) {
	c := kubetest.Cluster(t)
	ns := kubetest.Namespace(t, c)
	ctx := testCtx(t)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "lb", Annotations: map[string]string{"werf.io/show-service-messages": "true"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}}}
	created, err := c.Typed.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.NewTime(time.Now())
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "lb.1", Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: "Service", Name: "lb", Namespace: ns, UID: created.UID, APIVersion: "v1"},
		Reason:         "EnsuringLoadBalancer", Message: "Ensuring load balancer", Type: "Normal", Count: 1,
		FirstTimestamp: now, LastTimestamp: now, Source: corev1.EventSource{Component: "service-controller"}}
	if _, err := c.Typed.CoreV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ref := manifest.Ref{APIVersion: "v1", Kind: "Service", Namespace: ns, Name: "lb"}
	var mu sync.Mutex
	var calls []string
	tctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	gotEvent := make(chan struct{})
	var once sync.Once
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		_, _ = track.TrackTargets(tctx, c, []track.Target{{Ref: ref}}, track.Options{Timeout: time.Minute, Since: now.Add(-time.Minute),
			OnPods: func(p track.PodsSeen) {
				mu.Lock()
				defer mu.Unlock()
				calls = append(calls, "pods:"+p.Ref.Name)
			},
			OnEvent: func(r manifest.Ref, e track.Event) {
				mu.Lock()
				defer mu.Unlock()
				calls = append(calls, "event:"+e.Reason)
				once.Do(func() { close(gotEvent) })
			}}, nil)
	}()
	select {
	case <-gotEvent:
	case <-tctx.Done():
		t.Fatal("no Event passed to OnEvent")
	}
	cancel()
	<-finished
	mu.Lock()
	defer mu.Unlock()
	if len(calls) < 2 || calls[0] != "pods:lb" {
		t.Errorf("calls %v; want OnPods for the Service first, then its Event", calls)
	}
}
