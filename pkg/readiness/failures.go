package readiness

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sealane/sealane/pkg/resource"
)

// What counts as an error of a tracked object (kubedog's rules, as nelm uses them):
//   - a Kubernetes Event about the object, its current ReplicaSets or its pods whose reason
//     contains "Failed" (but not RecreatingFailedPod or FailedDelete);
//   - an Event saying a container "failed startup probe, will be restarted" or "failed liveness
//     probe, will be restarted";
//   - an Event "Readiness probe failed: ..." once the container's ignore window is over
//     (ReadinessIgnoreWindow);
//   - a container waiting for a FailingContainerReasons reason, and an init container that
//     exited with an error.
//
// Each occurrence counts once: an Event by its uid and count (a repeated event is the same
// object with a higher count), a container by its restartCount. Occurrences before the
// tracking start are not counted.

// eventClass says whether and how an Event is an error.
type eventClass int

const (
	notAnError eventClass = iota
	failedEvent
	probeRestart
	readinessFailure
)

var probeRestartRE = regexp.MustCompile(`failed (startup|liveness) probe, will be restarted`)

// classifyEvent sorts an Event by its reason and message.
func classifyEvent(reason, message string) eventClass {
	switch {
	case strings.HasPrefix(message, readinessPrefixReason):
		return readinessFailure
	case probeRestartRE.MatchString(message):
		return probeRestart
	case strings.Contains(reason, "Failed") && reason != "RecreatingFailedPod" && reason != "FailedDelete":
		return failedEvent
	}
	return notAnError
}

// EventInfo is what counting needs of one core/v1 Event.
type EventInfo struct {
	UID                   types.UID
	Type, Reason, Message string
	// Count is the number of occurrences so far (at least 1).
	Count int64
	// First and Last are the times of the first and the latest occurrence.
	First, Last time.Time
	// Involved is the object the event is about; Container is taken from its fieldPath
	// ("spec.containers{app}"), "" when it names none.
	InvolvedUID  types.UID
	InvolvedKind string
	InvolvedName string
	Container    string
}

// EventInfoOf reads an Event as the API serves it (core/v1, unstructured).
func EventInfoOf(ev *unstructured.Unstructured) EventInfo {
	o := ev.Object
	info := EventInfo{
		UID: ev.GetUID(), Type: str(o, "type"), Reason: str(o, "reason"), Message: str(o, "message"),
		InvolvedUID: types.UID(str(o, "involvedObject", "uid")), InvolvedKind: str(o, "involvedObject", "kind"),
		InvolvedName: str(o, "involvedObject", "name"),
	}
	if fp := str(o, "involvedObject", "fieldPath"); strings.HasSuffix(fp, "}") {
		if i := strings.IndexByte(fp, '{'); i >= 0 {
			info.Container = fp[i+1 : len(fp)-1]
		}
	}
	n, _ := num(o, "count")
	if sc, _ := num(o, "series", "count"); sc > n {
		n = sc
	}
	info.Count = max(n, 1)
	created := ev.GetCreationTimestamp().Time
	times := func(fields ...[]string) []time.Time {
		var out []time.Time
		for _, f := range fields {
			if t, err := time.Parse(time.RFC3339Nano, str(o, f...)); err == nil {
				out = append(out, t)
			}
		}
		return out
	}
	info.First = created
	if ts := times([]string{"firstTimestamp"}, []string{"eventTime"}); len(ts) > 0 {
		info.First = ts[0]
	}
	info.Last = info.First
	for _, t := range times([]string{"lastTimestamp"}, []string{"eventTime"}, []string{"series", "lastObservedTime"}) {
		if t.After(info.Last) {
			info.Last = t
		}
	}
	return info
}

// containerSeen is what ErrorLog remembers of one container of one pod.
type containerSeen struct {
	// baseline is the restartCount at first sight for a pod older than the tracking start:
	// restarts up to it happened before and are not counted.
	baseline int32
	// counted is the highest restartCount whose failure was counted, -1 for none.
	counted int32
	// started is when the container was first seen started (its startup probe passed); the
	// restartCount it was seen at is startedAt.
	started   time.Time
	startedAt int32
}

// ErrorLog counts the distinct errors of one tracked object and its pods.
type ErrorLog struct {
	// since is the tracking start, to the second (the precision of Kubernetes timestamps).
	since      time.Time
	count      int
	last       string
	events     map[types.UID]int64
	containers map[string]*containerSeen
}

// NewErrorLog starts the error log of an object tracked from since: errors older than since
// (events, container failures) are not counted.
func NewErrorLog(since time.Time) *ErrorLog {
	return &ErrorLog{since: since.Truncate(time.Second), events: map[types.UID]int64{}, containers: map[string]*containerSeen{}}
}

// Count is the number of errors counted so far.
func (l *ErrorLog) Count() int { return l.count }

// Last is the message of the latest error counted ("" when none).
func (l *ErrorLog) Last() string { return l.last }

func (l *ErrorLog) add(n int, msg string) {
	if n <= 0 {
		return
	}
	l.count += n
	l.last = Clip(msg)
}

// containerState is what one container status of a pod says for counting errors: its
// restartCount, whether it has started, and its failure ("" when it is not failing).
type containerState struct {
	restarts int32
	started  bool
	failure  string
}

// observeContainer counts the failure of one container seen in state st. The first failure
// seen counts once per restart since the tracking start (at least once): a crash loop that
// began before the pod was watched is not underestimated. Later it counts once per
// restartCount increase, so seeing the same state again counts nothing.
func (l *ErrorLog) observeContainer(key string, podCreated, now time.Time, st containerState) {
	restarts, failure := st.restarts, st.failure
	c := l.containers[key]
	if c == nil {
		c = &containerSeen{counted: -1}
		if podCreated.Before(l.since) {
			c.baseline = restarts
		}
		l.containers[key] = c
	}
	if st.started && (c.started.IsZero() || restarts != c.startedAt) {
		c.started, c.startedAt = now, restarts
	}
	if failure == "" {
		return
	}
	switch {
	case c.counted < 0:
		l.add(int(max(1, restarts-c.baseline)), failure)
	case restarts > c.counted:
		l.add(int(restarts-c.counted), failure)
	default:
		return
	}
	c.counted = restarts
}

// ObservePod counts the container failures of pod; prefix ("pod NAME: " or "") starts the
// messages.
func (l *ErrorLog) ObservePod(pod *unstructured.Unstructured, prefix string, now time.Time) {
	created := pod.GetCreationTimestamp().Time
	for _, field := range []string{"initContainerStatuses", "containerStatuses"} {
		list := slice(pod.Object, "status", field)
		what := "container"
		if field == "initContainerStatuses" {
			what = "init container"
		}
		for _, c := range list {
			m, ok := c.(map[string]any)
			if !ok {
				continue
			}
			name := str(m, "name")
			restarts := count(m, "restartCount")
			started, _, _ := unstructured.NestedBool(m, "started")
			failure := ""
			if reason := str(m, "state", "waiting", "reason"); FailingContainerReasons[reason] {
				failure = fmt.Sprintf("%s%s %s: %s", prefix, what, name, withDetail(reason, str(m, "state", "waiting", "message")))
			} else if code, _ := num(m, "state", "terminated", "exitCode"); what == "init container" && code != 0 {
				failure = fmt.Sprintf("%sinit container %s: exited with %d (%s)", prefix, name, code, str(m, "state", "terminated", "reason"))
			}
			l.observeContainer(string(pod.GetUID())+"/"+field+"/"+name, created, now,
				containerState{restarts: restarts, started: started, failure: failure})
		}
	}
}

// ObserveEvent counts the new occurrences of one Event. readinessCounts decides, for a
// readiness-probe failure, whether it is past the container's ignore window; occurrences inside
// the window are consumed without counting. prefix starts the message.
func (l *ErrorLog) ObserveEvent(ev EventInfo, prefix string, readinessCounts func(EventInfo) bool) {
	class := classifyEvent(ev.Reason, ev.Message)
	if class == notAnError {
		return
	}
	prev, seen := l.events[ev.UID]
	var n int64
	switch {
	case seen:
		n = ev.Count - prev
	case ev.Last.Before(l.since):
		n = 0 // happened before tracking started
	case ev.First.Before(l.since):
		n = 1 // repeated since before the start: only the latest occurrence is known to be new
	default:
		n = ev.Count
	}
	if n <= 0 {
		if !seen {
			l.events[ev.UID] = ev.Count
		}
		return
	}
	l.events[ev.UID] = ev.Count
	if class == readinessFailure && !readinessCounts(ev) {
		return
	}
	l.add(int(n), prefix+withDetail(ev.Reason, ev.Message))
}

// ReadinessCounter returns the readinessCounts function of ObserveEvent for the events of pod,
// with the ignore windows of settings.
func (l *ErrorLog) ReadinessCounter(pod *unstructured.Unstructured, s Settings) func(EventInfo) bool {
	return func(ev EventInfo) bool {
		var spec corev1.PodSpec
		raw, _, _ := unstructured.NestedMap(pod.Object, "spec")
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &spec); err != nil {
			return true
		}
		var probed []corev1.Container
		for _, c := range spec.Containers {
			if c.ReadinessProbe != nil && (ev.Container == "" || c.Name == ev.Container) {
				probed = append(probed, c)
			}
		}
		if len(probed) != 1 {
			return false // no such container, or cannot tell which: not counted
		}
		c := probed[0]
		var override *time.Duration
		if d, ok := s.IgnoreReadinessFor[c.Name]; ok {
			override = &d
		}
		return readinessFailureCounts(c.ReadinessProbe, c.StartupProbe, override, l.containerStarted(pod, c.Name, c.StartupProbe != nil), ev.Last)
	}
}

// containerStarted returns when container name of pod started, zero if it has not: the
// container's running.startedAt, or with a startup probe the time it was first seen started
// (the status does not say when the startup probe passed).
func (l *ErrorLog) containerStarted(pod *unstructured.Unstructured, name string, startupProbe bool) time.Time {
	list := slice(pod.Object, "status", "containerStatuses")
	for _, c := range list {
		m, ok := c.(map[string]any)
		if !ok || str(m, "name") != name {
			continue
		}
		if startupProbe {
			if seen := l.containers[string(pod.GetUID())+"/containerStatuses/"+name]; seen != nil {
				return seen.started
			}
			return time.Time{}
		}
		t, err := time.Parse(time.RFC3339Nano, str(m, "state", "running", "startedAt"))
		if err != nil {
			return time.Time{}
		}
		return t
	}
	return time.Time{}
}

// maxPods bounds Status.Pods: a large workload shows its pods that are not ready first.
const maxPods = 10

// PodStatuses summarizes pods for Status.Pods: failed pods first, then waiting, then ready,
// by name within each, at most maxPods.
func PodStatuses(pods []*unstructured.Unstructured) []PodStatus {
	if len(pods) == 0 {
		return nil
	}
	out := make([]PodStatus, 0, len(pods))
	for _, p := range pods {
		st := podStatus(p)
		ps := PodStatus{Name: p.GetName(), State: st.State, Ready: st.Ready, Desired: st.Desired, Message: st.Message}
		list := slice(p.Object, "status", "containerStatuses")
		for _, c := range list {
			if m, ok := c.(map[string]any); ok {
				ps.Restarts += count(m, "restartCount")
			}
		}
		out = append(out, ps)
	}
	rank := map[State]int{Failed: 0, Waiting: 1, Ready: 2}
	sort.Slice(out, func(i, j int) bool {
		if ri, rj := rank[out[i].State], rank[out[j].State]; ri != rj {
			return ri < rj
		}
		return out[i].Name < out[j].Name
	})
	if len(out) > maxPods {
		out = out[:maxPods]
	}
	return out
}

// InError says whether a target is in error by its own rules, and why: its kind's rules failed
// it (st.State Failed), it has more errors than allowed (not with
// IgnoreAndContinueDeployProcess, which ignores error counts), or it has been quiet for its
// no-activity timeout (not a NonBlocking target, which nothing waits for). A Ready target is
// never in error.
func InError(st Status, s Settings, quiet time.Duration) (string, bool) {
	switch {
	case st.State == Ready:
		return "", false
	case st.State == Failed:
		return st.Message, true
	case s.FailMode != resource.IgnoreAndContinueDeployProcess && st.Errors > s.FailuresAllowed:
		return fmt.Sprintf("allowed failures (%d) exceeded: %s", s.FailuresAllowed, st.LastError), true
	case !s.NonBlocking && s.NoActivityTimeout > 0 && quiet >= s.NoActivityTimeout:
		return fmt.Sprintf("no activity for %s: %s", s.NoActivityTimeout, st.Message), true
	}
	return "", false
}

// Role is what a target means for the outcome at one evaluation.
type Role int

const (
	// RoleAwaited: blocking, in progress; tracking goes on for it.
	RoleAwaited Role = iota
	// RoleReady: the target is ready.
	RoleReady
	// RoleTracked: non-blocking, in progress; reported while something is awaited, never
	// waited for.
	RoleTracked
	// RoleFailed: in error; fails the deploy.
	RoleFailed
	// RoleHoping: in error with HopeUntilEndOfDeployProcess; tracked on while others are
	// awaited, failed when nothing else is.
	RoleHoping
	// RoleIgnored: in error with IgnoreAndContinueDeployProcess; the deploy goes on without it.
	RoleIgnored
)

// Judged is one target at one evaluation: its state (Ready, Waiting, or Failed meaning in error
// by its own rules, see InError), fail mode and termination mode.
type Judged struct {
	State       State
	Mode        resource.FailMode
	NonBlocking bool
}

// Decide applies the fail modes and termination modes (werf docs, "Fail mode" and "Track
// termination mode") to every target and says whether tracking is over:
//   - FailWholeDeployProcessImmediately (default): a target in error fails the deploy at once,
//     blocking or not;
//   - HopeUntilEndOfDeployProcess: a target in error is tracked on while some blocking target
//     is still in progress (it may recover and become ready); once nothing else is awaited and
//     it is still in error, it fails the deploy;
//   - IgnoreAndContinueDeployProcess: a target in error is given up and does not affect the
//     deploy;
//   - NonBlocking: an in-progress target is tracked while blocking targets are awaited and
//     never holds tracking; its errors are judged by its fail mode like any other's.
//
// Tracking is over when a target fails, or when no blocking target is in progress.
func Decide(js []Judged) ([]Role, bool) {
	roles := make([]Role, len(js))
	failed, awaited := false, false
	for i, j := range js {
		switch {
		case j.State == Ready:
			roles[i] = RoleReady
		case j.State != Failed && j.NonBlocking:
			roles[i] = RoleTracked
		case j.State != Failed:
			roles[i], awaited = RoleAwaited, true
		case j.Mode == resource.IgnoreAndContinueDeployProcess:
			roles[i] = RoleIgnored
		case j.Mode == resource.HopeUntilEndOfDeployProcess:
			roles[i] = RoleHoping
		default:
			roles[i], failed = RoleFailed, true
		}
	}
	if failed {
		return roles, true
	}
	if awaited {
		return roles, false
	}
	for i := range roles {
		if roles[i] == RoleHoping {
			roles[i] = RoleFailed
		}
	}
	return roles, true
}

// Presented is the status reported for a target with the given role: a failed target shows
// why; a hoping one is still Waiting, saying it is in error; an ignored one is Failed, saying
// the deploy goes on.
func Presented(st Status, r Role, reason string) Status {
	switch r {
	case RoleFailed:
		st.State, st.Message = Failed, reason
	case RoleHoping:
		st.State, st.Message = Waiting, reason+" (HopeUntilEndOfDeployProcess: tracked on while other resources are awaited)"
	case RoleIgnored:
		st.State, st.Message = Failed, reason+" (ignored: IgnoreAndContinueDeployProcess)"
	}
	return st
}
