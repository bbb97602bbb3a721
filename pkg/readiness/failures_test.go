package readiness

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sealane/sealane/pkg/resource"
)

func TestClassifyEvent(t *testing.T) {
	tests := []struct {
		reason, message string
		want            eventClass
	}{
		{"Failed", "Failed to pull image \"nope\": not found", failedEvent},
		{"FailedScheduling", "0/3 nodes are available", failedEvent},
		{"FailedMount", "MountVolume.SetUp failed", failedEvent},
		{"FailedCreate", "pods \"web-1\" is forbidden: exceeded quota", failedEvent},
		{"RecreatingFailedPod", "StatefulSet db is recreating failed Pod db-0", notAnError},
		{"FailedDelete", "failed to delete pod", notAnError},
		{"Killing", "Container app failed liveness probe, will be restarted", probeRestart},
		{"Killing", "Container app failed startup probe, will be restarted", probeRestart},
		{"Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 503", readinessFailure},
		{"Unhealthy", "Liveness probe failed: connection refused", notAnError},
		{"BackOff", "Back-off restarting failed container app", notAnError},
		{"Scheduled", "Successfully assigned", notAnError},
	}
	for _, tt := range tests {
		if got := classifyEvent(tt.reason, tt.message); got != tt.want {
			t.Errorf("classifyEvent(%q, %q) = %d, want %d", tt.reason, tt.message, got, tt.want)
		}
	}
}

func TestEventInfoOf(t *testing.T) {
	core := mustObj(t, `
apiVersion: v1
kind: Event
metadata: {name: web-1.abc, uid: e1, creationTimestamp: "2025-01-01T11:59:00Z"}
involvedObject: {kind: Pod, name: web-1, uid: p1, fieldPath: "spec.containers{app}"}
reason: Unhealthy
message: "Readiness probe failed: 503"
count: 4
firstTimestamp: "2025-01-01T12:00:00Z"
lastTimestamp: "2025-01-01T12:00:30Z"
`)
	want := EventInfo{UID: "e1", Reason: "Unhealthy", Message: "Readiness probe failed: 503", Count: 4,
		First: time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC), Last: time.Date(2025, 1, 1, 12, 0, 30, 0, time.UTC),
		InvolvedUID: "p1", InvolvedKind: "Pod", InvolvedName: "web-1", Container: "app"}
	if diff := cmp.Diff(want, EventInfoOf(core)); diff != "" {
		t.Errorf("core event (-want +got):\n%s", diff)
	}
	series := mustObj(t, `
apiVersion: v1
kind: Event
metadata: {name: web.def, uid: e2, creationTimestamp: "2025-01-01T12:00:00Z"}
involvedObject: {kind: Deployment, name: web, uid: d1}
reason: FailedCreate
eventTime: "2025-01-01T12:00:01.500000Z"
series: {count: 7, lastObservedTime: "2025-01-01T12:05:00.250000Z"}
`)
	got := EventInfoOf(series)
	if got.Count != 7 || !got.First.Equal(time.Date(2025, 1, 1, 12, 0, 1, 500_000_000, time.UTC)) ||
		!got.Last.Equal(time.Date(2025, 1, 1, 12, 5, 0, 250_000_000, time.UTC)) || got.Container != "" {
		t.Errorf("series event = %+v", got)
	}
	bare := EventInfoOf(mustObj(t, `
apiVersion: v1
kind: Event
metadata: {name: x, uid: e3, creationTimestamp: "2025-01-01T12:00:00Z"}
reason: Failed
`))
	if bare.Count != 1 || !bare.First.Equal(time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)) || !bare.Last.Equal(bare.First) {
		t.Errorf("event without counts and times = %+v, want count 1 at its creation", bare)
	}
}

func TestObserveEventCountsEachOccurrenceOnce(t *testing.T) {
	since := time.Date(2025, 1, 1, 12, 0, 0, 400_000_000, time.UTC) // counted from 12:00:00
	at := func(s int) time.Time { return since.Truncate(time.Second).Add(time.Duration(s) * time.Second) }
	always := func(EventInfo) bool { return true }
	never := func(EventInfo) bool { return false }
	type step struct {
		ev     EventInfo
		counts func(EventInfo) bool
		want   int // total after the step
	}
	failed := func(uid string, n int64, first, last int) EventInfo {
		return EventInfo{UID: typesUID(uid), Reason: "Failed", Message: "Failed to pull image", Count: n, First: at(first), Last: at(last)}
	}
	steps := []struct {
		name string
		step
	}{
		{"new event", step{failed("a", 1, 1, 1), always, 1}},
		{"the same event again (resync)", step{failed("a", 1, 1, 1), always, 1}},
		{"its count grows by 2", step{failed("a", 3, 1, 5), always, 3}},
		{"an event from before the start", step{failed("old", 4, -60, -10), always, 3}},
		{"it repeats after the start", step{failed("old", 5, -60, 6), always, 4}},
		{"repeated since before the start, first seen now: its latest occurrence only", step{failed("b", 9, -60, 7), always, 5}},
		{"new with several occurrences, all after the start", step{failed("c", 2, 8, 9), always, 7}},
		{"not an error", step{EventInfo{UID: "d", Reason: "Pulled", Count: 1, First: at(9), Last: at(9)}, always, 7}},
		{"readiness failure inside the window: consumed", step{EventInfo{UID: "r", Reason: "Unhealthy",
			Message: "Readiness probe failed: 503", Count: 2, First: at(10), Last: at(11)}, never, 7}},
		{"the same readiness event repeats after the window", step{EventInfo{UID: "r", Reason: "Unhealthy",
			Message: "Readiness probe failed: 503", Count: 3, First: at(10), Last: at(30)}, always, 8}},
	}
	l := NewErrorLog(since)
	for _, s := range steps {
		l.ObserveEvent(s.ev, "pod web-1: ", s.counts)
		if l.count != s.want {
			t.Fatalf("%s: count = %d, want %d", s.name, l.count, s.want)
		}
	}
	if want := "pod web-1: Unhealthy: Readiness probe failed: 503"; l.last != want {
		t.Errorf("last = %q, want %q", l.last, want)
	}
}

func TestObserveContainer(t *testing.T) {
	since := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	after, before := since.Add(time.Second), since.Add(-time.Hour)
	type obs struct {
		restarts int32
		failure  string
		want     int
	}
	tests := []struct {
		name    string
		created time.Time
		seq     []obs
	}{
		{"crash loop of a new pod: every restart counts, each once", after, []obs{
			{5, "CrashLoopBackOff", 5}, {5, "CrashLoopBackOff", 5}, {6, "", 5}, {6, "CrashLoopBackOff", 6}, {8, "CrashLoopBackOff", 8}}},
		{"crash loop of an older pod: restarts before the start do not count", before, []obs{
			{5, "CrashLoopBackOff", 1}, {5, "CrashLoopBackOff", 1}, {7, "CrashLoopBackOff", 3}}},
		{"image pull back-off at restart 0 counts once", after, []obs{
			{0, "ErrImagePull", 1}, {0, "ImagePullBackOff", 1}, {0, "ErrImagePull", 1}}},
		{"healthy", after, []obs{{0, "", 0}, {3, "", 0}}},
		{"healthy restarts then failing", before, []obs{{2, "", 0}, {4, "CrashLoopBackOff", 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewErrorLog(since)
			for i, o := range tt.seq {
				l.observeContainer("p1/containerStatuses/app", tt.created, since, containerState{restarts: o.restarts, failure: o.failure})
				if l.count != o.want {
					t.Fatalf("observation %d (%+v): count = %d, want %d", i, o, l.count, o.want)
				}
			}
		})
	}
}

func TestObservePod(t *testing.T) {
	since := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	pod := mustObj(t, `
apiVersion: v1
kind: Pod
metadata: {name: web-1, uid: p1, creationTimestamp: "2025-01-01T12:00:05Z"}
status:
  initContainerStatuses:
  - {name: migrate, restartCount: 0, state: {terminated: {exitCode: 2, reason: Error}}}
  - {name: ok, restartCount: 0, state: {terminated: {exitCode: 0, reason: Completed}}}
  containerStatuses:
  - {name: app, restartCount: 0, state: {waiting: {reason: CreateContainerConfigError, message: "secret \"db\" not found"}}}
  - {name: side, restartCount: 3, state: {running: {startedAt: "2025-01-01T12:00:10Z"}}}
`)
	l := NewErrorLog(since)
	l.ObservePod(pod, "pod web-1: ", since)
	l.ObservePod(pod, "pod web-1: ", since.Add(time.Second)) // seen again: nothing new
	if l.count != 2 {
		t.Errorf("count = %d, want 2 (the failed init container and the config error)", l.count)
	}
	if want := `pod web-1: container app: CreateContainerConfigError: secret "db" not found`; l.last != want {
		t.Errorf("last = %q, want %q", l.last, want)
	}
	l2 := NewErrorLog(since)
	init := mustObj(t, `
apiVersion: v1
kind: Pod
metadata: {name: web-1, uid: p1, creationTimestamp: "2025-01-01T12:00:05Z"}
status:
  initContainerStatuses:
  - {name: migrate, restartCount: 0, state: {terminated: {exitCode: 2, reason: Error}}}
`)
	l2.ObservePod(init, "", since)
	if want := "init container migrate: exited with 2 (Error)"; l2.count != 1 || l2.last != want {
		t.Errorf("init container: count %d, last %q; want 1, %q", l2.count, l2.last, want)
	}
}

func TestReadinessCounter(t *testing.T) {
	since := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	pod := mustObj(t, `
apiVersion: v1
kind: Pod
metadata: {name: web-1, uid: p1, creationTimestamp: "2025-01-01T12:00:00Z"}
spec:
  containers:
  - name: app
    readinessProbe: {periodSeconds: 1, timeoutSeconds: 1, successThreshold: 1, failureThreshold: 3}
  - name: slow
    readinessProbe: {periodSeconds: 1, timeoutSeconds: 1, successThreshold: 1, failureThreshold: 3}
    startupProbe: {periodSeconds: 1, timeoutSeconds: 1, successThreshold: 1, failureThreshold: 3}
  - name: plain
status:
  containerStatuses:
  - {name: app, started: true, state: {running: {startedAt: "2025-01-01T12:00:10Z"}}}
  - {name: slow, started: false, state: {running: {startedAt: "2025-01-01T12:00:10Z"}}}
`)
	at := func(s int) time.Time { return since.Add(time.Duration(s) * time.Second) }
	l := NewErrorLog(since)
	l.ObservePod(pod, "", at(10))
	tests := []struct {
		name      string
		container string
		at        time.Time
		settings  Settings
		want      bool
	}{
		{"inside the 4s window after startedAt", "app", at(13), DefaultSettings(), false},
		{"after the window", "app", at(14), DefaultSettings(), true},
		{"annotation widens the window", "app", at(14), Settings{IgnoreReadinessFor: map[string]time.Duration{"app": 20 * time.Second}}, false},
		{"annotation zero", "app", at(10), Settings{IgnoreReadinessFor: map[string]time.Duration{"app": 0}}, true},
		{"startup probe not passed yet: the window has not begun", "slow", at(100), DefaultSettings(), false},
		{"container without readiness probe", "plain", at(100), DefaultSettings(), false},
		{"several probed containers and no fieldPath: cannot tell", "", at(100), DefaultSettings(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			counts := l.ReadinessCounter(pod, tt.settings)
			if got := counts(EventInfo{Container: tt.container, Last: tt.at}); got != tt.want {
				t.Errorf("counts = %v, want %v", got, tt.want)
			}
		})
	}
	// Once the startup probe passed, the window starts when the container was seen started.
	started := mustObj(t, `
apiVersion: v1
kind: Pod
metadata: {name: web-1, uid: p1, creationTimestamp: "2025-01-01T12:00:00Z"}
status:
  containerStatuses:
  - {name: slow, started: true, state: {running: {startedAt: "2025-01-01T12:00:10Z"}}}
`)
	l.ObservePod(started, "", at(50))
	counts := l.ReadinessCounter(pod, DefaultSettings())
	// window: startup worst case 1+0+3*1+1+1 = 6 > 2, so 1 + 1 + 1 + 0 + 1 = 4s from 12:00:50
	if counts(EventInfo{Container: "slow", Last: at(53)}) || !counts(EventInfo{Container: "slow", Last: at(54)}) {
		t.Errorf("slow container: want failures counted from 12:00:54 on")
	}
}

func TestInError(t *testing.T) {
	def := DefaultSettings()
	with := func(f func(*Settings)) Settings {
		s := DefaultSettings()
		f(&s)
		return s
	}
	waiting := Status{State: Waiting, Message: "0/1 replicas available", Errors: 2, LastError: "pod web-1: container app: CrashLoopBackOff"}
	tests := []struct {
		name   string
		st     Status
		s      Settings
		quiet  time.Duration
		want   string
		wantOK bool
	}{
		{"ready wins", Status{State: Ready, Errors: 9}, def, time.Hour, "", false},
		{"failed by its kind's rules", Status{State: Failed, Message: "job failed: BackoffLimitExceeded"}, def, 0, "job failed: BackoffLimitExceeded", true},
		{"errors over the allowance", waiting, with(func(s *Settings) { s.FailuresAllowed = 1 }), 0,
			"allowed failures (1) exceeded: pod web-1: container app: CrashLoopBackOff", true},
		{"errors within the allowance", waiting, with(func(s *Settings) { s.FailuresAllowed = 3 }), 0, "", false},
		{"IgnoreAndContinue ignores error counts", waiting, with(func(s *Settings) { s.FailMode = resource.IgnoreAndContinueDeployProcess }), 0, "", false},
		{"no activity", Status{State: Waiting, Message: "0/1 replicas available"}, def, 4 * time.Minute,
			"no activity for 4m0s: 0/1 replicas available", true},
		{"some activity", Status{State: Waiting, Message: "0/1 replicas available"}, def, 4*time.Minute - time.Second, "", false},
		{"no activity of a non-blocking target does not count", Status{State: Waiting}, with(func(s *Settings) { s.NonBlocking = true }), time.Hour, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := InError(tt.st, tt.s, tt.quiet)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("InError = %q, %v; want %q, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	const (
		fail   = resource.FailWholeDeployProcessImmediately
		hope   = resource.HopeUntilEndOfDeployProcess
		ignore = resource.IgnoreAndContinueDeployProcess
	)
	j := func(state State, mode resource.FailMode, nonBlocking bool) Judged {
		return Judged{State: state, Mode: mode, NonBlocking: nonBlocking}
	}
	tests := []struct {
		name     string
		in       []Judged
		want     []Role
		wantDone bool
	}{
		{"all ready", []Judged{j(Ready, fail, false), j(Ready, hope, false)}, []Role{RoleReady, RoleReady}, true},
		{"in progress", []Judged{j(Ready, fail, false), j(Waiting, fail, false)}, []Role{RoleReady, RoleAwaited}, false},
		{"fail immediately, even with others in progress", []Judged{j(Failed, fail, false), j(Waiting, fail, false)},
			[]Role{RoleFailed, RoleAwaited}, true},
		{"hope while another is awaited", []Judged{j(Failed, hope, false), j(Waiting, fail, false)},
			[]Role{RoleHoping, RoleAwaited}, false},
		{"hope while another hoper is still in progress", []Judged{j(Failed, hope, false), j(Waiting, hope, false)},
			[]Role{RoleHoping, RoleAwaited}, false},
		{"hope ends when only failed hopers are left", []Judged{j(Failed, hope, false), j(Failed, hope, false), j(Ready, fail, false)},
			[]Role{RoleFailed, RoleFailed, RoleReady}, true},
		{"hope ends when only non-blocking targets are in progress", []Judged{j(Failed, hope, false), j(Waiting, fail, true)},
			[]Role{RoleFailed, RoleTracked}, true},
		{"a hoper that recovers is ready", []Judged{j(Ready, hope, false), j(Ready, fail, false)}, []Role{RoleReady, RoleReady}, true},
		{"ignore and continue: given up, the others go on", []Judged{j(Failed, ignore, false), j(Waiting, fail, false)},
			[]Role{RoleIgnored, RoleAwaited}, false},
		{"ignore and continue: done without failure", []Judged{j(Failed, ignore, false), j(Ready, fail, false)},
			[]Role{RoleIgnored, RoleReady}, true},
		{"ignore and continue in progress is still awaited", []Judged{j(Waiting, ignore, false)}, []Role{RoleAwaited}, false},
		{"non-blocking does not hold", []Judged{j(Waiting, fail, true), j(Ready, fail, false)}, []Role{RoleTracked, RoleReady}, true},
		{"non-blocking only: nothing to wait for", []Judged{j(Waiting, fail, true)}, []Role{RoleTracked}, true},
		{"non-blocking in error fails by its fail mode", []Judged{j(Failed, fail, true), j(Waiting, fail, false)},
			[]Role{RoleFailed, RoleAwaited}, true},
		{"non-blocking with IgnoreAndContinue in error is ignored", []Judged{j(Failed, ignore, true), j(Waiting, fail, false)},
			[]Role{RoleIgnored, RoleAwaited}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, done := Decide(tt.in)
			if diff := cmp.Diff(tt.want, got); diff != "" || done != tt.wantDone {
				t.Errorf("Decide: done = %v (want %v), roles (-want +got):\n%s", done, tt.wantDone, diff)
			}
		})
	}
}

func TestPresented(t *testing.T) {
	st := Status{State: Waiting, Message: "0/1 replicas available", Errors: 3}
	tests := []struct {
		r    Role
		want Status
	}{
		{RoleAwaited, st},
		{RoleFailed, Status{State: Failed, Message: "allowed failures (1) exceeded: x", Errors: 3}},
		{RoleHoping, Status{State: Waiting, Message: "allowed failures (1) exceeded: x (HopeUntilEndOfDeployProcess: tracked on while other resources are awaited)", Errors: 3}},
		{RoleIgnored, Status{State: Failed, Message: "allowed failures (1) exceeded: x (ignored: IgnoreAndContinueDeployProcess)", Errors: 3}},
	}
	for _, tt := range tests {
		if got := Presented(st, tt.r, "allowed failures (1) exceeded: x"); !got.Equal(tt.want) {
			t.Errorf("Presented(Role %d) = %+v, want %+v", tt.r, got, tt.want)
		}
	}
}

func TestPodStatuses(t *testing.T) {
	pod := func(name, state string) string {
		switch state {
		case "ready":
			return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: %s}
spec: {containers: [{name: app}]}
status:
  phase: Running
  conditions: [{type: Ready, status: "True"}]
  containerStatuses: [{name: app, ready: true, restartCount: 1}]
`, name)
		case "crash":
			return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: %s}
spec: {containers: [{name: app}, {name: side}]}
status:
  phase: Running
  containerStatuses:
  - {name: app, restartCount: 5, state: {waiting: {reason: CrashLoopBackOff}}}
  - {name: side, ready: true, restartCount: 1}
`, name)
		}
		return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: %s}
spec: {containers: [{name: app}]}
status: {phase: Pending}
`, name)
	}
	var objs = mustObjs(t, pod("c", "ready"), pod("b", "pending"), pod("a", "ready"), pod("z", "crash"))
	want := []PodStatus{
		{Name: "z", State: Failed, Ready: 1, Desired: 2, Restarts: 6, Message: "container app: CrashLoopBackOff"},
		{Name: "b", State: Waiting, Desired: 1, Message: "phase Pending"},
		{Name: "a", State: Ready, Ready: 1, Desired: 1, Restarts: 1, Message: "1/1 containers ready"},
		{Name: "c", State: Ready, Ready: 1, Desired: 1, Restarts: 1, Message: "1/1 containers ready"},
	}
	if diff := cmp.Diff(want, PodStatuses(objs)); diff != "" {
		t.Errorf("PodStatuses (-want +got):\n%s", diff)
	}
	var many []string
	for i := range 15 {
		many = append(many, pod(fmt.Sprintf("p%02d", i), "ready"))
	}
	if got := PodStatuses(mustObjs(t, many...)); len(got) != maxPods || got[0].Name != "p00" {
		t.Errorf("PodStatuses of 15 pods: %d, first %q; want %d from p00", len(got), got[0].Name, maxPods)
	}
	if PodStatuses(nil) != nil {
		t.Errorf("PodStatuses(nil) is not nil")
	}
}

func TestStatusEqual(t *testing.T) {
	a := Status{State: Waiting, Message: "m", Errors: 1, LastError: "e", Pods: []PodStatus{{Name: "p", State: Waiting}}, NonBlocking: true}
	b := a
	b.Pods = []PodStatus{{Name: "p", State: Waiting}}
	if !a.Equal(b) {
		t.Errorf("equal statuses with distinct pod slices are not Equal")
	}
	for _, change := range []func(*Status){
		func(s *Status) { s.Pods[0].Restarts = 1 },
		func(s *Status) { s.Pods = nil },
		func(s *Status) { s.Errors = 2 },
		func(s *Status) { s.LastError = "f" },
		func(s *Status) { s.NonBlocking = false },
		func(s *Status) { s.Message = "n" },
	} {
		c := a
		c.Pods = append([]PodStatus(nil), a.Pods...)
		change(&c)
		if a.Equal(c) {
			t.Errorf("%+v and %+v are Equal", a, c)
		}
	}
}

func typesUID(s string) types.UID { return types.UID(s) }

func mustObjs(t *testing.T, docs ...string) []*unstructured.Unstructured {
	t.Helper()
	out := make([]*unstructured.Unstructured, len(docs))
	for i, d := range docs {
		out[i] = mustObj(t, d)
	}
	return out
}
