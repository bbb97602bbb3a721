package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"
	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	helmrelease "helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/bus/bustest"
	"github.com/sealane/sealane/pkg/deploy"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/lease"
	"github.com/sealane/sealane/pkg/lease/leasetest"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/pipeline/stagekit"
	"github.com/sealane/sealane/pkg/plan"
	"github.com/sealane/sealane/pkg/release"
	"github.com/sealane/sealane/pkg/resource"
	"github.com/sealane/sealane/pkg/stage"
	"github.com/sealane/sealane/test/harness"
)

// leaseTarget is the release every lease test works on.
var leaseTarget = events.Target{Cluster: "kind", Namespace: "shop", Release: "web"}

// leaseEnv is an embedded JetStream server with the lease bucket and a lease manager (real
// clock, unless a test sets clock), a fake cluster and in-memory blobs.
type leaseEnv struct {
	t       *testing.T
	kv      *bus.KV
	leases  *lease.Manager
	cluster *kube.Cluster
	typed   *k8sfake.Clientset
	dyn     *dynamicfake.FakeDynamicClient
	blobs   *bustest.Blobs

	mu    sync.Mutex
	clock time.Time // zero: time.Now
}

func newLeaseEnv(t *testing.T, objs ...runtime.Object) *leaseEnv {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore, harness.NATSLeftover) }) // runs last: no renewal goroutine outlives a test
	kv := leasetest.Bucket(t)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	e := &leaseEnv{t: t, kv: kv, typed: k8sfake.NewClientset(), blobs: bustest.NewBlobs(),
		dyn: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), objs...)}
	e.cluster = &kube.Cluster{Name: leaseTarget.Cluster, Typed: e.typed, Dynamic: e.dyn, Mapper: resettableMapper{mapper}}
	e.leases = lease.New(kv, lease.Options{TTL: time.Minute, Clock: e.now, Log: zaptest.NewLogger(t)})
	return e
}

type resettableMapper struct{ meta.RESTMapper }

func (resettableMapper) Reset() {}

func (e *leaseEnv) now() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.clock.IsZero() {
		return time.Now()
	}
	return e.clock
}

func (e *leaseEnv) setClock(t time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.clock = t
}

// Get makes leaseEnv the Clusters of its Deps.
func (e *leaseEnv) Get(name string) (*kube.Cluster, error) {
	if name != leaseTarget.Cluster {
		return nil, fmt.Errorf("no cluster %q", name)
	}
	return e.cluster, nil
}

func (e *leaseEnv) deps() Deps {
	return Deps{Blobs: e.blobs, Clusters: e, Leases: e.leases, LeaseTTL: time.Minute, Log: zaptest.NewLogger(e.t)}
}

func (e *leaseEnv) store() *release.Store {
	return release.Open(e.typed, leaseTarget, events.ReleaseStorage{}, nil)
}

func (e *leaseEnv) acquire(deployID string, ttl time.Duration) uint64 {
	e.t.Helper()
	token, err := e.leases.Acquire(testContext(e.t), leaseTarget, deployID, ttl)
	if err != nil {
		e.t.Fatalf("Acquire(%s): %v", deployID, err)
	}
	return token
}

// takeOver writes the lease for deployID without compare-and-set, as if it had taken the
// lease over while the holder could not renew it.
func (e *leaseEnv) takeOver(deployID string) {
	e.t.Helper()
	b, err := json.Marshal(lease.Record{DeployID: deployID, Acquired: time.Now(), Expires: time.Now().Add(time.Hour)})
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.kv.Put(testContext(e.t), lease.LeaseKey(leaseTarget), b); err != nil {
		e.t.Fatal(err)
	}
}

func (e *leaseEnv) holder() *lease.Held {
	e.t.Helper()
	h, err := e.leases.Get(testContext(e.t), leaseTarget)
	if err != nil {
		e.t.Fatal(err)
	}
	return h
}

// queue queues deployID's request behind the holder, as the renderer does.
func (e *leaseEnv) queue(deployID string) {
	e.t.Helper()
	ctx := testContext(e.t)
	if _, err := e.leases.Acquire(ctx, leaseTarget, deployID, 0); !errors.Is(err, lease.ErrBusy) {
		e.t.Fatalf("Acquire(%s) = %v, want busy", deployID, err)
	}
	msg, err := events.Encode(input(e.t, events.DeployRequested, deployID, events.RequestedData{Target: leaseTarget}, nil).Event)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, _, err := e.leases.Enqueue(ctx, leaseTarget, lease.RequestOf(deployID, deployID+".requested", msg, false)); err != nil {
		e.t.Fatal(err)
	}
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// input builds the stage input of an event of deployID.
func input(t *testing.T, typ events.Type, deployID string, data any, st *deploy.State) stage.Input {
	t.Helper()
	ev, err := events.New(typ, events.Meta{ID: events.StepID(deployID, typ.Token()), Source: "/test", Target: leaseTarget,
		CorrelationID: deployID, Time: time.Now()}, data)
	if err != nil {
		t.Fatal(err)
	}
	return stage.Input{Event: ev, Type: typ, DeployID: deployID, Target: leaseTarget, State: st,
		Publish: func(context.Context, stage.Emit) error { return nil }}
}

var testChart = &helmchart.Chart{Metadata: &helmchart.Metadata{APIVersion: "v2", Name: "web", Version: "1.0.0"}}

// recordRevision writes revision rev pending, as the recorder does, then final unless final is "".
func recordRevision(t *testing.T, s *release.Store, rev int, final string) {
	t.Helper()
	ctx := testContext(t)
	if _, err := s.RecordPending(ctx, release.Pending{Name: leaseTarget.Release, Namespace: leaseTarget.Namespace, Revision: rev,
		Chart: testChart, Description: "Deploy in progress " + release.SealaneMark}); err != nil {
		t.Fatal(err)
	}
	switch final {
	case "deployed":
		_, err := s.RecordResult(ctx, leaseTarget.Release, rev, true, "")
		if err != nil {
			t.Fatal(err)
		}
	case "failed":
		if _, err := s.RecordResult(ctx, leaseTarget.Release, rev, false, "earlier"); err != nil {
			t.Fatal(err)
		}
	}
}

func status(t *testing.T, s *release.Store, rev int) string {
	t.Helper()
	rel, err := s.Get(testContext(t), leaseTarget.Release, rev)
	if errors.Is(err, release.ErrNotFound) {
		return "absent"
	}
	if err != nil {
		t.Fatal(err)
	}
	return rel.Info.Status.String()
}

// recorded returns the release_recorded data of out, failing the test if there is none.
func recorded(t *testing.T, out stage.Output) events.RecordedData {
	t.Helper()
	for _, em := range out.Emits {
		if rec, ok := em.Data.(events.RecordedData); ok && em.Type == events.ReleaseRecorded {
			return rec
		}
	}
	t.Fatalf("no release_recorded in %+v", out.Emits)
	return events.RecordedData{}
}

// failedReason returns the deploy.failed reason of out, or "" when it emits none.
func failedReason(out stage.Output) string {
	for _, em := range out.Emits {
		if d, ok := em.Data.(events.FailedData); ok && em.Type == events.DeployFailed {
			return d.Reason
		}
	}
	return ""
}

// emitTypes lists the types of an output's own events (not the lease hand-overs: handedTo).
func emitTypes(out stage.Output) []events.Type {
	var ts []events.Type
	for _, em := range out.Emits {
		if em.Event == nil {
			ts = append(ts, em.Type)
		}
	}
	return ts
}

// TestFenceRenews: the fence renews the lease (a full TTL ahead) instead of only checking
// it: an expired lease nobody took over is held again, safe from a takeover, before the write.
func TestFenceRenews(t *testing.T) {
	e := newLeaseEnv(t)
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	e.setClock(t0)
	d := e.deps()
	token := e.acquire("a", time.Minute)
	in := input(t, events.DeployStarted, "a", events.StartedData{Target: leaseTarget}, &deploy.State{ID: "a", LeaseToken: token})

	e.setClock(t0.Add(2 * time.Minute)) // expired, nobody took it over
	if err := d.Fence(testContext(t), in); err != nil {
		t.Fatalf("fence over an expired lease nobody took: %v", err)
	}
	if h := e.holder(); h.DeployID != "a" || h.Token != token || !h.Expires.Equal(t0.Add(3*time.Minute)) {
		t.Fatalf("lease after fence = %+v, want a's, token %d, expiring a TTL after the fence", h, token)
	}
	if _, err := e.leases.Acquire(testContext(t), leaseTarget, "b", 0); !errors.Is(err, lease.ErrBusy) {
		t.Fatalf("Acquire by b after the fence = %v, want busy", err)
	}

	e.setClock(t0.Add(4 * time.Minute)) // expired again, and b takes it over
	e.acquire("b", 0)
	err := d.Fence(testContext(t), in)
	var lost *lease.LostError
	if !errors.As(err, &lost) || lost.Holder != "b" || !strings.Contains(err.Error(), "release lease of "+leaseTarget.String()) {
		t.Fatalf("fence after a takeover = %v, want a *lease.LostError naming b", err)
	}
	out, stop, err := d.Fenced(testContext(t), events.StageApplier, in)
	if !stop || err != nil || !strings.Contains(failedReason(out), "deploy b holds it now") {
		t.Fatalf("fenced after a takeover = %+v, %v, %v; want the deploy failed", out, stop, err)
	}
}

// configMap is a live ConfigMap of the release for the fake dynamic client.
func configMap(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace(leaseTarget.Namespace)
	u.SetName(name)
	u.SetUID(types.UID("uid-" + name))
	u.SetAnnotations(map[string]string{resource.AnnotationReleaseName: leaseTarget.Release, resource.AnnotationReleaseNamespace: leaseTarget.Namespace})
	return u
}

func cmManifest(name string, annotations ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n", name)
	if len(annotations) > 0 {
		b.WriteString("  annotations:\n")
		for i := 0; i+1 < len(annotations); i += 2 {
			fmt.Fprintf(&b, "    %s: %s\n", annotations[i], annotations[i+1])
		}
	}
	b.WriteString("data:\n  a: b\n")
	return b.String()
}

// bundle is an upgrade of the release: a hook recreated before (phase 1), ConfigMap "new"
// applied (phase 2), ConfigMap "old" (of the previous revision) deleted (phase 3).
func (e *leaseEnv) bundle() *stagekit.RenderBundle {
	e.t.Helper()
	hook := &helmrelease.Hook{Name: "hook", Kind: "ConfigMap", Path: "web/templates/hook.yaml",
		Manifest: cmManifest("hook", "helm.sh/hook", "pre-upgrade", "helm.sh/hook-delete-policy", "before-hook-creation")}
	b := &stagekit.RenderBundle{
		Manifest: "---\n# Source: web/templates/new.yaml\n" + cmManifest("new"),
		Hooks:    []*helmrelease.Hook{hook},
		Previous: "---\n# Source: web/templates/old.yaml\n" + cmManifest("old"),
	}
	objs, err := manifest.Parse(b.Manifest + "\n" + stagekit.HookText(b.Hooks))
	if err != nil {
		e.t.Fatal(err)
	}
	if b.Plan, err = stagekit.BuildPlan(e.cluster, stagekit.PlanInput{Kind: plan.Upgrade, Target: leaseTarget, Objects: objs, Previous: b.Previous}); err != nil {
		e.t.Fatal(err)
	}
	if len(b.Plan.Phases) != 3 {
		e.t.Fatalf("plan has %d phases, want 3 (hook, main, cleanup)", len(b.Plan.Phases))
	}
	return b
}

// writes lists the fake cluster's write actions ("delete configmaps/old").
func (e *leaseEnv) writes() []string {
	var out []string
	for _, a := range e.dyn.Actions() {
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		}
		name := ""
		if n, ok := a.(interface{ GetName() string }); ok {
			name = n.GetName()
		}
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource+"/"+name)
	}
	return out
}

// TestPhaseFencesEachWriteBatch: the phase runner fences before each delete batch and before
// each apply batch of a step, and a failing fence stops the step before its batch.
func TestPhaseFencesEachWriteBatch(t *testing.T) {
	lostErr := &lease.LostError{Target: leaseTarget, Token: 7, Holder: "b"}
	for _, tc := range []struct {
		name     string
		failAt   int // the fence call that fails; 0: none
		phase    int
		wantCall int
		want     []string
	}{
		{name: "recreate: fence fails before the delete", failAt: 1, phase: 0, wantCall: 1},
		{name: "recreate: fence fails before the apply", failAt: 2, phase: 0, wantCall: 2, want: []string{"delete configmaps/hook"}},
		{name: "apply: fence fails before the apply", failAt: 1, phase: 1, wantCall: 1},
		{name: "delete: fence fails before the delete", failAt: 1, phase: 2, wantCall: 1},
		{name: "delete: fence holds", phase: 2, wantCall: 1, want: []string{"delete configmaps/old"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newLeaseEnv(t, configMap("hook"), configMap("old"))
			b := e.bundle()
			p, err := stagekit.Prepare(leaseTarget, b)
			if err != nil {
				t.Fatal(err)
			}
			run := newPhaseRun(e.cluster, leaseTarget, b, p)
			run.deployID = "a"
			calls := 0
			run.fence = func(context.Context) error {
				calls++
				if calls == tc.failAt {
					return lostErr
				}
				return nil
			}
			e.dyn.ClearActions()
			_, _, err = run.run(testContext(t), b.Plan.Phases[tc.phase])
			if tc.failAt > 0 && !errors.Is(err, lostErr) {
				t.Fatalf("run = %v, want the fence's error", err)
			}
			if tc.failAt == 0 && err != nil {
				t.Fatalf("run = %v", err)
			}
			if calls != tc.wantCall {
				t.Errorf("fence called %d times, want %d", calls, tc.wantCall)
			}
			if got := e.writes(); strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("cluster writes %q, want %q", got, tc.want)
			}
		})
	}
}

// stuckDeletes makes the fake cluster accept deletes of ConfigMaps without removing them, as
// a finalizer would.
func (e *leaseEnv) stuckDeletes() {
	e.dyn.PrependReactor("delete", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, nil
	})
}

// cleanupPhaseInput is the phase_tracked that makes the applier run the cleanup phase (the
// delete of "old") of e.bundle, with the deploy holding token.
func (e *leaseEnv) cleanupPhaseInput(token uint64, deadline time.Time) stage.Input {
	e.t.Helper()
	b := e.bundle()
	data, err := json.Marshal(b)
	if err != nil {
		e.t.Fatal(err)
	}
	ref := putBlob(e.t, e.blobs, "renders/a", data)
	st := &deploy.State{ID: "a", Target: leaseTarget, Status: deploy.Status("tracked"), Revision: 2, Phases: 3, RenderRef: ref,
		LeaseToken: token, Deadline: deadline}
	return input(e.t, events.PhaseTracked, "a", events.PhaseTrackedData{Target: leaseTarget, Revision: 2, Phase: 1, Phases: 3, Ready: true}, st)
}

// hookPhaseInput is the deploy.started that makes the applier run the first phase (the
// recreation of the hook "hook") of e.bundle, with the deploy holding token.
func (e *leaseEnv) hookPhaseInput(token uint64, deadline time.Time) stage.Input {
	e.t.Helper()
	in := e.cleanupPhaseInput(token, deadline)
	return input(e.t, events.DeployStarted, "a", events.StartedData{Target: leaseTarget, Revision: 2, RenderRef: in.State.RenderRef}, in.State)
}

// TestApplierLeavesDeletedObjectsToTheTracker: a delete the plan waits to be gone (a
// wait-absent: the tracker's watch sees it go) does not hold the applier, even when a
// finalizer keeps the object: the phase is applied and the tracker waits.
func TestApplierLeavesDeletedObjectsToTheTracker(t *testing.T) {
	e := newLeaseEnv(t, configMap("old"))
	e.stuckDeletes()
	d := e.deps()
	token := e.acquire("a", 0)
	out, err := (&Applier{d}).Handle(testContext(t), e.cleanupPhaseInput(token, time.Now().Add(time.Hour)))
	if err != nil || len(out.Emits) != 1 || out.Emits[0].Type != events.PhaseApplied {
		t.Fatalf("applier = %+v, %v; want phase_applied", out, err)
	}
	data := out.Emits[0].Data.(events.PhaseAppliedData)
	if len(data.Waits) != 1 || data.Waits[0].Until != "absent" || data.Waits[0].Resource.Name != "old" {
		t.Errorf("waits = %+v, want the tracker to wait until old is gone", data.Waits)
	}
}

// TestApplierKeepsLeaseWhileDeleteWaits: while a delete waits for its object to go (a hook
// recreated, whose old object a finalizer keeps), the applier renews the lease on a ticker, so
// nobody can take the release over; when the lease is lost all the same, the work is
// cancelled and the deploy fails.
func TestApplierKeepsLeaseWhileDeleteWaits(t *testing.T) {
	e := newLeaseEnv(t, configMap("hook"), configMap("old"))
	e.stuckDeletes()
	d := e.deps()
	d.LeaseTTL = time.Second
	token := e.acquire("a", d.LeaseTTL)
	in := e.hookPhaseInput(token, time.Now().Add(time.Hour))

	type result struct {
		out stage.Output
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := (&Applier{d}).Handle(testContext(t), in)
		done <- result{out, err}
	}()
	time.Sleep(5 * d.LeaseTTL / 2) // the phase outlives the TTL
	select {
	case r := <-done:
		t.Fatalf("the applier returned while the delete waits: %+v, %v", r.out, r.err)
	default:
	}
	if _, err := e.leases.Acquire(testContext(t), leaseTarget, "b", 0); !errors.Is(err, lease.ErrBusy) {
		t.Fatalf("Acquire by b while the applier works = %v, want busy (the lease is renewed)", err)
	}
	if h := e.holder(); h.DeployID != "a" || h.Token != token || !h.Expires.After(time.Now()) {
		t.Fatalf("lease while the applier works = %+v, want a's, unexpired", h)
	}

	e.takeOver("b") // lost all the same (say, the bucket was unreachable for a TTL)
	select {
	case r := <-done:
		if r.err != nil || !strings.Contains(failedReason(r.out), "deploy b holds it now") {
			t.Fatalf("applier after the lease was lost = %+v, %v; want the deploy failed, naming the holder", r.out, r.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the applier went on after its lease was lost")
	}
}

// TestApplierStopsAtDeadline: a delete stuck on a finalizer (a hook's, recreated) ends with
// the deploy's deadline (the lease, renewed meanwhile, is not held forever): the deploy fails,
// permanently.
func TestApplierStopsAtDeadline(t *testing.T) {
	defer func(d time.Duration) { minApplyBudget = d }(minApplyBudget)
	minApplyBudget = 0
	e := newLeaseEnv(t, configMap("hook"), configMap("old"))
	e.stuckDeletes()
	d := e.deps()
	token := e.acquire("a", 0)
	in := e.hookPhaseInput(token, time.Now().Add(300*time.Millisecond))
	out, err := (&Applier{d}).Handle(testContext(t), in)
	if err != nil || !strings.Contains(failedReason(out), errApplyDeadline.Error()) || !strings.Contains(failedReason(out), "configmaps") &&
		!strings.Contains(failedReason(out), "ConfigMap") {
		t.Fatalf("applier past the deadline = %+v, %v; want the deploy failed with the timeout and the object", out, err)
	}
	t.Logf("reason: %s", failedReason(out))
	if h := e.holder(); h == nil || h.DeployID != "a" {
		t.Fatalf("lease = %+v, want still a's (the recorder releases it)", h)
	}
}

// closingRecorder is the recorder as the pipeline wires it: renewing around Recorder.
func closingRecorder(d Deps) stage.Handler {
	return &renewing{Deps: d, name: events.StageRecorder, next: &Recorder{d}, closer: &Recorder{d}}
}

// TestRecorderClosingRetriedAfterRelease: the recorder's closing handler retried after it
// released the lease (it crashed, or saving the state failed, after Release) reports the
// deploy's own outcome, and the same events, not a lost lease.
func TestRecorderClosingRetriedAfterRelease(t *testing.T) {
	for _, tc := range []struct {
		name       string
		op         events.Operation
		keep       bool
		event      events.Type
		reason     string
		after      func(e *leaseEnv) // between the two attempts (the lease is released)
		queue      bool              // a request waits: the release hands it the lease (From = a)
		wantStatus string            // the recorded status reported
		wantOK     bool              // succeeded
		wantTypes  []events.Type     // the emits of both attempts
	}{
		{name: "deploy succeeded", event: events.DeploySucceeded, wantStatus: "deployed", wantOK: true,
			wantTypes: []events.Type{events.CDServiceUpgraded, events.ReleaseRecorded}},
		{name: "deploy succeeded, lease handed on", event: events.DeploySucceeded, queue: true, wantStatus: "deployed", wantOK: true,
			wantTypes: []events.Type{events.CDServiceUpgraded, events.ReleaseRecorded}},
		{name: "deploy failed, lease handed on", event: events.DeployFailed, reason: "boom", queue: true, wantStatus: "failed",
			wantTypes: []events.Type{events.CDPipelineRunFinished, events.ReleaseRecorded}},
		{name: "deploy failed, lease taken by another since", event: events.DeployFailed, reason: "boom", wantStatus: "failed",
			after: func(e *leaseEnv) { e.acquire("c", 0) }, wantTypes: []events.Type{events.CDPipelineRunFinished, events.ReleaseRecorded}},
		{name: "uninstall", op: events.OperationUninstall, event: events.DeploySucceeded, wantStatus: "uninstalled", wantOK: true,
			wantTypes: []events.Type{events.CDServiceRemoved, events.ReleaseRecorded}},
		{name: "uninstall, another deploy installed since", op: events.OperationUninstall, event: events.DeploySucceeded, queue: true,
			after: func(e *leaseEnv) { recordRevision(e.t, e.store(), 1, "") }, wantStatus: "uninstalled", wantOK: true,
			wantTypes: []events.Type{events.CDServiceRemoved, events.ReleaseRecorded}},
		{name: "uninstall --keep-history, lease taken by another since", op: events.OperationUninstall, keep: true, event: events.DeploySucceeded,
			after: func(e *leaseEnv) { e.acquire("c", 0) }, wantStatus: "uninstalled", wantOK: true,
			wantTypes: []events.Type{events.CDServiceRemoved, events.ReleaseRecorded}},
		{name: "uninstall failed, lease taken by another since", op: events.OperationUninstall, event: events.DeployFailed, reason: "hook failed",
			after: func(e *leaseEnv) { e.acquire("c", 0) }, wantStatus: "failed", wantTypes: []events.Type{events.CDPipelineRunFinished, events.ReleaseRecorded}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newLeaseEnv(t)
			d := e.deps()
			s := e.store()
			recordRevision(t, s, 1, "deployed")
			revision := 2
			if tc.op == events.OperationUninstall {
				revision = 1
				if _, err := s.MarkUninstalling(testContext(t), leaseTarget.Release); err != nil {
					t.Fatal(err)
				}
			} else {
				recordRevision(t, s, 2, "")
			}
			token := e.acquire("a", 0)
			if tc.queue {
				e.queue("b")
			}
			st := &deploy.State{ID: "a", Target: leaseTarget, Status: deploy.Status("applied"), Revision: revision, Operation: tc.op,
				KeepHistory: tc.keep, LeaseToken: token}
			var data any = events.SucceededData{Target: leaseTarget, Revision: revision}
			if tc.event == events.DeployFailed {
				data = events.FailedData{Target: leaseTarget, Revision: revision, Stage: events.StageApplier, Reason: tc.reason}
			}
			in := input(t, tc.event, "a", data, st)
			h := closingRecorder(d)

			first, err := h.Handle(testContext(t), in)
			if err != nil {
				t.Fatal(err)
			}
			if held := e.holder(); held != nil && held.DeployID == "a" {
				t.Fatalf("lease still held by a after the closing: %+v", held)
			}
			if tc.after != nil {
				tc.after(e)
			}
			second, err := h.Handle(testContext(t), in) // saving the state failed: retried
			if err != nil {
				t.Fatal(err)
			}
			for i, out := range []stage.Output{first, second} {
				rec := recorded(t, out)
				wantOutcome, wantReason := events.OutcomeFailed, tc.reason
				if tc.wantOK {
					wantOutcome = events.OutcomeSucceeded
				}
				if rec.Outcome != wantOutcome || rec.Reason != wantReason || rec.Status != tc.wantStatus || rec.Revision != revision {
					t.Errorf("attempt %d: recorded %+v, want outcome %s, reason %q, status %s, revision %d",
						i+1, rec, wantOutcome, wantReason, tc.wantStatus, revision)
				}
				if got := emitTypes(out); fmt.Sprint(got) != fmt.Sprint(tc.wantTypes) {
					t.Errorf("attempt %d: emits %v, want %v", i+1, got, tc.wantTypes)
				}
			}
			// The closing that released the lease hands it on; its retry (whose first attempt's
			// events may be lost) publishes the same hand-over again, under the same id.
			wantHanded := map[bool]string{true: "b"}[tc.queue]
			if got := handedTo(first); got != wantHanded {
				t.Errorf("attempt 1 re-publishes the requests of %q, want %q", got, wantHanded)
			}
			if got := handedTo(second); got != wantHanded {
				t.Errorf("attempt 2 re-publishes the requests of %q, want %q", got, wantHanded)
			}
			if wantHanded != "" && handoverID(first) != handoverID(second) {
				t.Errorf("the retry re-publishes b's request as %s, the first attempt as %s", handoverID(second), handoverID(first))
			}
		})
	}
}

// TestRecorderClosingLostLease: a deploy whose lease another deploy took before the recorder
// finished its revision is closed as failed, naming the lease, without writing the records;
// also when the fence inside the recorder, not the renewal before it, finds the lease lost.
func TestRecorderClosingLostLease(t *testing.T) {
	for _, inside := range []bool{false, true} {
		t.Run(fmt.Sprintf("found by the fence inside: %v", inside), func(t *testing.T) {
			e := newLeaseEnv(t)
			d := e.deps()
			s := e.store()
			recordRevision(t, s, 1, "deployed")
			recordRevision(t, s, 2, "")
			token := e.acquire("a", 0)
			st := &deploy.State{ID: "a", Target: leaseTarget, Revision: 2, LeaseToken: token}
			in := input(t, events.DeployFailed, "a", events.FailedData{Target: leaseTarget, Revision: 2, Reason: "boom"}, st)
			var h stage.Handler = closingRecorder(d)
			if inside {
				h = &renewing{Deps: d, name: events.StageRecorder, closer: &Recorder{d}, next: stage.HandlerFunc(func(ctx context.Context, in stage.Input) (stage.Output, error) {
					e.takeOver("c") // between the renewal and the recorder's fence
					return (&Recorder{d}).Handle(ctx, in)
				})}
			} else {
				e.takeOver("c")
			}
			out, err := h.Handle(testContext(t), in)
			if err != nil {
				t.Fatal(err)
			}
			rec := recorded(t, out)
			if rec.Outcome != events.OutcomeFailed || !strings.HasPrefix(rec.Reason, "boom; release lease") || !strings.Contains(rec.Reason, "deploy c holds it now") {
				t.Errorf("recorded %+v, want failed: boom and the lost lease", rec)
			}
			if got := status(t, s, 2); got != "pending-upgrade" {
				t.Errorf("revision 2 is %s, want left pending-upgrade for the new holder", got)
			}
			if h := e.holder(); h.DeployID != "c" {
				t.Errorf("lease held by %s, want c (not released by a)", h.DeployID)
			}
		})
	}
}

// TestRecorderFencesWrites: the recorder renews the lease before each write; with the lease
// lost it writes nothing: no uninstalling mark, no namespace, no uninstall result.
func TestRecorderFencesWrites(t *testing.T) {
	t.Run("uninstalling mark", func(t *testing.T) {
		e := newLeaseEnv(t)
		recordRevision(t, e.store(), 1, "deployed")
		token := e.acquire("a", 0)
		e.takeOver("b")
		st := &deploy.State{ID: "a", Target: leaseTarget, Revision: 1, Operation: events.OperationUninstall, LeaseToken: token}
		out, err := (&Recorder{e.deps()}).Handle(testContext(t), input(t, events.DeployRendered, "a",
			events.RenderedData{Target: leaseTarget, Revision: 1, Operation: events.OperationUninstall}, st))
		if err != nil || !strings.Contains(failedReason(out), "deploy b holds it now") {
			t.Fatalf("pending = %+v, %v; want the deploy failed", out, err)
		}
		if got := status(t, e.store(), 1); got != "deployed" {
			t.Errorf("revision 1 is %s, want deployed (not marked)", got)
		}
	})
	t.Run("namespace", func(t *testing.T) {
		e := newLeaseEnv(t)
		archive := chartArchive(t)
		chartRef := putBlob(t, e.blobs, "charts/web", archive)
		renderRef := putBlob(t, e.blobs, "renders/a", []byte(`{"manifest":""}`))
		token := e.acquire("a", 0)
		e.takeOver("b")
		st := &deploy.State{ID: "a", Target: leaseTarget, Revision: 1, LeaseToken: token}
		out, err := (&Recorder{e.deps()}).Handle(testContext(t), input(t, events.DeployRendered, "a",
			events.RenderedData{Target: leaseTarget, Revision: 1, RenderRef: renderRef, Chart: events.ChartSource{Name: "web", Ref: chartRef}}, st))
		if err != nil || !strings.Contains(failedReason(out), "deploy b holds it now") {
			t.Fatalf("pending = %+v, %v; want the deploy failed", out, err)
		}
		if nss, _ := e.typed.CoreV1().Namespaces().List(testContext(t), metav1.ListOptions{}); len(nss.Items) != 0 {
			t.Errorf("namespaces %v created without the lease", nss.Items)
		}
	})
	for _, ok := range []bool{true, false} {
		t.Run(fmt.Sprintf("uninstall result, succeeded %v", ok), func(t *testing.T) {
			e := newLeaseEnv(t)
			s := e.store()
			recordRevision(t, s, 1, "deployed")
			if _, err := s.MarkUninstalling(testContext(t), leaseTarget.Release); err != nil {
				t.Fatal(err)
			}
			if _, err := e.typed.CoreV1().Namespaces().Create(testContext(t), namespace(leaseTarget.Namespace), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			token := e.acquire("a", 0)
			e.takeOver("b")
			st := &deploy.State{ID: "a", Target: leaseTarget, Revision: 1, Operation: events.OperationUninstall, WithNamespace: true, LeaseToken: token}
			var in stage.Input
			if ok {
				in = input(t, events.DeploySucceeded, "a", events.SucceededData{Target: leaseTarget, Revision: 1}, st)
			} else {
				in = input(t, events.DeployFailed, "a", events.FailedData{Target: leaseTarget, Revision: 1, Reason: "boom"}, st)
			}
			_, err := (&Recorder{e.deps()}).Handle(testContext(t), in)
			var lost *lease.LostError
			if !errors.As(err, &lost) {
				t.Fatalf("recorder = %v, want the lost lease", err)
			}
			if got := status(t, s, 1); got != "uninstalling" {
				t.Errorf("revision 1 is %s, want left uninstalling", got)
			}
			if _, err := e.typed.CoreV1().Namespaces().Get(testContext(t), leaseTarget.Namespace, metav1.GetOptions{}); err != nil {
				t.Errorf("namespace: %v, want kept", err)
			}
		})
	}
}

// TestUninstallLostBeforeNamespaceDelete: the lease lost between deleting the records and
// deleting the namespace (--with-namespace): the namespace is kept and the deploy reported
// failed, saying what was done.
func TestUninstallLostBeforeNamespaceDelete(t *testing.T) {
	e := newLeaseEnv(t)
	d := e.deps()
	s := e.store()
	recordRevision(t, s, 1, "deployed")
	if _, err := e.typed.CoreV1().Namespaces().Create(testContext(t), namespace(leaseTarget.Namespace), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	token := e.acquire("a", 0)
	st := &deploy.State{ID: "a", Target: leaseTarget, Revision: 1, Operation: events.OperationUninstall, WithNamespace: true, LeaseToken: token}
	in := input(t, events.DeploySucceeded, "a", events.SucceededData{Target: leaseTarget, Revision: 1}, st)
	deletes := 0
	e.typed.PrependReactor("delete", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		deletes++
		if deletes == 1 {
			e.takeOver("b") // after the records' fence, before the namespace's
		}
		return false, nil, nil
	})
	out, err := closingRecorder(d).Handle(testContext(t), in)
	if err != nil {
		t.Fatal(err)
	}
	rec := recorded(t, out)
	if rec.Outcome != events.OutcomeFailed || !strings.Contains(rec.Reason, "namespace shop was not deleted") || !strings.Contains(rec.Reason, "deploy b holds it now") {
		t.Errorf("recorded %+v, want failed: namespace not deleted, lease lost", rec)
	}
	if _, err := e.typed.CoreV1().Namespaces().Get(testContext(t), leaseTarget.Namespace, metav1.GetOptions{}); err != nil {
		t.Errorf("namespace: %v, want kept for the new holder", err)
	}
}

// TestHandedLeaseReleasedOnRefusal: a queued deploy handed the lease (its state has no token)
// and then refused — by Helm's pending check, or closed otherwise (dead-lettered) — releases
// it at once, handing it to the next queued request; a closed deploy that does not hold the
// lease releases nothing.
func TestHandedLeaseReleasedOnRefusal(t *testing.T) {
	t.Run("helm pending", func(t *testing.T) {
		e := newLeaseEnv(t)
		d := e.deps()
		s := e.store()
		recordRevision(t, s, 1, "deployed")
		if _, err := s.RecordPending(testContext(t), release.Pending{Name: leaseTarget.Release, Namespace: leaseTarget.Namespace, Revision: 2,
			Chart: testChart}); err != nil { // helm's own, mid-upgrade
			t.Fatal(err)
		}
		e.acquire("a", 0)
		e.queue("b")
		e.queue("c")
		if _, err := e.leases.Release(testContext(t), leaseTarget, e.holder().Token); err != nil { // a ends: b is handed the lease
			t.Fatal(err)
		}
		if h := e.holder(); h.DeployID != "b" {
			t.Fatalf("lease held by %s, want b", h.DeployID)
		}
		r := &leasedRenderer{Deps: d, next: requestFunc(func(context.Context, stage.Input, *request) (stage.Output, error) {
			t.Fatal("a refused request was rendered")
			return stage.Output{}, nil
		})}
		out, err := r.handleRequest(testContext(t), input(t, events.DeployRequested, "b", events.RequestedData{Target: leaseTarget},
			&deploy.State{ID: "b", Target: leaseTarget, Status: deploy.Queued}), &request{RequestedData: events.RequestedData{Target: leaseTarget}})
		if err != nil || !strings.Contains(failedReason(out), "another operation") {
			t.Fatalf("renderer = %+v, %v; want helm's refusal", out, err)
		}
		if h := e.holder(); h == nil || h.DeployID != "c" || h.From != "b" {
			t.Errorf("lease = %+v, want handed from b to c", h)
		}
		if got := handedTo(out); got != "c" {
			t.Errorf("renderer re-publishes the requests of %q, want c's", got)
		}
	})
	t.Run("closed while holding the lease", func(t *testing.T) {
		e := newLeaseEnv(t)
		d := e.deps()
		e.acquire("a", 0)
		e.queue("b")
		e.queue("c")
		if _, err := e.leases.Release(testContext(t), leaseTarget, e.holder().Token); err != nil {
			t.Fatal(err)
		}
		// b was handed the lease, then the renderer gave up on its request (dead letter):
		// its state never got the token.
		reason := "renderer gave up on event b.requested: boom"
		st := &deploy.State{ID: "b", Target: leaseTarget, Status: deploy.Queued}
		out, err := closingRecorder(d).Handle(testContext(t), input(t, events.DeployFailed, "b",
			events.FailedData{Target: leaseTarget, Stage: events.StageRenderer, Reason: reason}, st))
		if err != nil {
			t.Fatal(err)
		}
		if rec := recorded(t, out); rec.Reason != reason {
			t.Errorf("recorded %+v", rec)
		}
		if h := e.holder(); h == nil || h.DeployID != "c" || h.From != "b" {
			t.Errorf("lease = %+v, want handed from b to c", h)
		}
		if got := handedTo(out); got != "c" {
			t.Errorf("recorder re-publishes the requests of %q, want c's", got)
		}
	})
	t.Run("closed, not holding it", func(t *testing.T) {
		e := newLeaseEnv(t)
		e.acquire("a", 0)
		st := &deploy.State{ID: "b", Target: leaseTarget, Status: deploy.Queued}
		if _, err := closingRecorder(e.deps()).Handle(testContext(t), input(t, events.DeployFailed, "b",
			events.FailedData{Target: leaseTarget, Stage: events.StageRenderer, Reason: "superseded"}, st)); err != nil {
			t.Fatal(err)
		}
		if h := e.holder(); h == nil || h.DeployID != "a" {
			t.Errorf("lease = %+v, want still a's", h)
		}
	})
}

// handedTo lists the deploys whose queued requests an output re-publishes (lease hand-overs).
func handedTo(out stage.Output) string {
	var ids []string
	for _, em := range out.Emits {
		if em.Event != nil {
			ids = append(ids, events.CorrelationID(*em.Event))
		}
	}
	return strings.Join(ids, ",")
}

// handoverID is the id of an output's (single) lease hand-over.
func handoverID(out stage.Output) string {
	for _, em := range out.Emits {
		if em.Event != nil {
			return em.Event.ID()
		}
	}
	return ""
}

// TestRecordPendingRevisionTaken: a revision number that is no longer the next one fails the
// deploy at once instead of being retried.
func TestRecordPendingRevisionTaken(t *testing.T) {
	e := newLeaseEnv(t)
	s := e.store()
	recordRevision(t, s, 1, "deployed")
	recordRevision(t, s, 2, "deployed") // written meanwhile by another writer
	chartRef := putBlob(t, e.blobs, "charts/web", chartArchive(t))
	renderRef := putBlob(t, e.blobs, "renders/a", []byte(`{"manifest":""}`))
	token := e.acquire("a", 0)
	st := &deploy.State{ID: "a", Target: leaseTarget, Revision: 4, LeaseToken: token}
	out, err := (&Recorder{e.deps()}).Handle(testContext(t), input(t, events.DeployRendered, "a",
		events.RenderedData{Target: leaseTarget, Revision: 4, RenderRef: renderRef, Chart: events.ChartSource{Name: "web", Ref: chartRef}}, st))
	if err != nil || !strings.Contains(failedReason(out), "the next revision is 3") {
		t.Fatalf("pending = %+v, %v; want the deploy failed", out, err)
	}
}

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func chartArchive(t *testing.T) []byte {
	t.Helper()
	ch := &helmchart.Chart{Metadata: &helmchart.Metadata{APIVersion: "v2", Name: "web", Version: "1.0.0"},
		Templates: []*helmchart.File{{Name: "templates/cm.yaml", Data: []byte(cmManifest("web"))}}}
	path, err := chartutil.Save(ch, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
