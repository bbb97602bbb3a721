// Package pipelinetest is the environment the stages' tests share: an embedded JetStream lease
// bucket, a fake cluster and in-memory blobs (Env), and builders of the events, charts and
// release records they work on, with readers of what a handler emitted. Only tests import it.
package pipelinetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/bus/bustest"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/lease"
	"github.com/sealane/sealane/pkg/lease/leasetest"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/pipeline/stagekit"
	"github.com/sealane/sealane/pkg/plan"
	"github.com/sealane/sealane/pkg/release"
	"github.com/sealane/sealane/test/harness"
)

// Target is the release every stage test works on.
var Target = events.Target{Cluster: "kind", Namespace: "shop", Release: "web"}

// Env is an embedded JetStream server with the lease bucket and a lease manager (real clock,
// unless a test sets one with SetClock), a fake cluster and in-memory blobs.
type Env struct {
	// T is the test the environment belongs to.
	T *testing.T
	// KV is the lease bucket, Leases the lease manager on it.
	KV     *bus.KV
	Leases *lease.Manager
	// Cluster is the fake cluster of Target, over the fake clientsets Typed and Dyn.
	Cluster *kube.Cluster
	Typed   *k8sfake.Clientset
	Dyn     *dynamicfake.FakeDynamicClient
	// Blobs are the stages' blobs and the clients' uploads.
	Blobs *bustest.Blobs

	mu    sync.Mutex
	clock time.Time // zero: time.Now
}

// NewEnv starts an Env whose fake cluster holds objs; when the test ends, no goroutine it
// started (a lease renewal) may be left running.
func NewEnv(t *testing.T, objs ...runtime.Object) *Env {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore, harness.NATSLeftover) }) // runs last: no renewal goroutine outlives a test
	kv := leasetest.Bucket(t)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	e := &Env{T: t, KV: kv, Typed: k8sfake.NewClientset(), Blobs: bustest.NewBlobs(),
		Dyn: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), objs...)}
	e.Cluster = &kube.Cluster{Name: Target.Cluster, Typed: e.Typed, Dynamic: e.Dyn, Mapper: ResettableMapper{mapper}}
	e.Leases = lease.New(kv, lease.Options{TTL: time.Minute, Clock: e.now, Log: zaptest.NewLogger(t)})
	return e
}

// ResettableMapper is a REST mapper as kube.Cluster wants one, with nothing to reset.
type ResettableMapper struct{ meta.RESTMapper }

// Reset does nothing: the mapper's kinds are fixed.
func (ResettableMapper) Reset() {}

func (e *Env) now() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.clock.IsZero() {
		return time.Now()
	}
	return e.clock
}

// SetClock sets the time the lease manager sees (zero: the real clock).
func (e *Env) SetClock(t time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.clock = t
}

// Get makes Env the Clusters of its Deps.
func (e *Env) Get(name string) (*kube.Cluster, error) {
	if name != Target.Cluster {
		return nil, fmt.Errorf("no cluster %q", name)
	}
	return e.Cluster, nil
}

// Deps are the stages' Deps on the environment: its blobs, cluster and lease manager.
func (e *Env) Deps() stagekit.Deps {
	return stagekit.Deps{Blobs: e.Blobs, Clusters: e, Leases: e.Leases, LeaseTTL: time.Minute, Log: zaptest.NewLogger(e.T)}
}

// Store opens the release records of Target on the fake cluster.
func (e *Env) Store() *release.Store {
	return release.Open(e.Typed, Target, events.ReleaseStorage{}, nil)
}

// Acquire takes Target's lease for deployID with ttl (0: the manager's), failing the test if it cannot.
func (e *Env) Acquire(deployID string, ttl time.Duration) uint64 {
	e.T.Helper()
	token, err := e.Leases.Acquire(Context(e.T), Target, deployID, ttl)
	if err != nil {
		e.T.Fatalf("Acquire(%s): %v", deployID, err)
	}
	return token
}

// TakeOver writes the lease for deployID without compare-and-set, as if it had taken the
// lease over while the holder could not renew it.
func (e *Env) TakeOver(deployID string) {
	e.T.Helper()
	b, err := json.Marshal(lease.Record{DeployID: deployID, Acquired: time.Now(), Expires: time.Now().Add(time.Hour)})
	if err != nil {
		e.T.Fatal(err)
	}
	if _, err := e.KV.Put(Context(e.T), lease.LeaseKey(Target), b); err != nil {
		e.T.Fatal(err)
	}
}

// Holder reads Target's lease (nil: free).
func (e *Env) Holder() *lease.Held {
	e.T.Helper()
	h, err := e.Leases.Get(Context(e.T), Target)
	if err != nil {
		e.T.Fatal(err)
	}
	return h
}

// Queue queues deployID's request behind the holder, as the renderer does.
func (e *Env) Queue(deployID string) {
	e.T.Helper()
	ctx := Context(e.T)
	if _, err := e.Leases.Acquire(ctx, Target, deployID, 0); !errors.Is(err, lease.ErrBusy) {
		e.T.Fatalf("Acquire(%s) = %v, want busy", deployID, err)
	}
	msg, err := events.Encode(Input(e.T, events.DeployRequested, deployID, events.RequestedData{Target: Target}, nil).Event)
	if err != nil {
		e.T.Fatal(err)
	}
	if _, _, err := e.Leases.Enqueue(ctx, Target, lease.RequestOf(deployID, deployID+".requested", msg, false)); err != nil {
		e.T.Fatal(err)
	}
}

// Bundle is an upgrade of the release: a hook recreated before (phase 1), ConfigMap "new"
// applied (phase 2), ConfigMap "old" (of the previous revision) deleted (phase 3).
func (e *Env) Bundle() *stagekit.RenderBundle {
	e.T.Helper()
	hook := &helmrelease.Hook{Name: "hook", Kind: "ConfigMap", Path: "web/templates/hook.yaml",
		Manifest: CMManifest("hook", "helm.sh/hook", "pre-upgrade", "helm.sh/hook-delete-policy", "before-hook-creation")}
	b := &stagekit.RenderBundle{
		Manifest: "---\n# Source: web/templates/new.yaml\n" + CMManifest("new"),
		Hooks:    []*helmrelease.Hook{hook},
		Previous: "---\n# Source: web/templates/old.yaml\n" + CMManifest("old"),
	}
	objs, err := manifest.Parse(b.Manifest + "\n" + stagekit.HookText(b.Hooks))
	if err != nil {
		e.T.Fatal(err)
	}
	if b.Plan, err = stagekit.BuildPlan(e.Cluster, stagekit.PlanInput{Kind: plan.Upgrade, Target: Target, Objects: objs, Previous: b.Previous}); err != nil {
		e.T.Fatal(err)
	}
	if len(b.Plan.Phases) != 3 {
		e.T.Fatalf("plan has %d phases, want 3 (hook, main, cleanup)", len(b.Plan.Phases))
	}
	return b
}
