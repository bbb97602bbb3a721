package readiness

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// FailingContainerReasons are the container waiting reasons that fail a pod (and the workload
// owning it): the container cannot start without someone changing something.
var FailingContainerReasons = map[string]bool{
	"CrashLoopBackOff":           true,
	"ImagePullBackOff":           true,
	"ErrImagePull":               true,
	"ErrImageNeverPull":          true,
	"InvalidImageName":           true,
	"CreateContainerConfigError": true,
}

// podStatus: phase Failed fails the pod and Succeeded makes it Ready; a container waiting for a
// FailingContainerReasons reason fails it; else it is Ready when its Ready condition is True.
func podStatus(obj *unstructured.Unstructured) Status {
	o := obj.Object
	containers := slice(o, "spec", "containers")
	st := Status{State: Waiting, Desired: int32(len(containers))}
	statuses := slice(o, "status", "containerStatuses")
	for _, c := range statuses {
		if m, ok := c.(map[string]any); ok {
			if ready, _, _ := unstructured.NestedBool(m, "ready"); ready {
				st.Ready++
			}
		}
	}
	switch str(o, "status", "phase") {
	case "Failed":
		st.State, st.Message = Failed, withDetail("pod failed", strings.TrimSpace(str(o, "status", "reason")+" "+str(o, "status", "message")))
		return st
	case "Succeeded":
		st.State, st.Message = Ready, "succeeded"
		return st
	}
	if msg, failed := containerFailure(o); failed {
		st.State, st.Message = Failed, msg
		return st
	}
	if _, ok := conditionTrue(o, "Ready"); ok {
		st.State, st.Message = Ready, fmt.Sprintf("%d/%d containers ready", st.Ready, st.Desired)
		return st
	}
	st.Message = podWaitingMessage(o, st)
	return st
}

// containerFailure returns "container NAME: Reason: message" for the first init or regular
// container waiting for a FailingContainerReasons reason.
func containerFailure(pod map[string]any) (string, bool) {
	for _, field := range []string{"initContainerStatuses", "containerStatuses"} {
		list := slice(pod, "status", field)
		for _, c := range list {
			m, ok := c.(map[string]any)
			if !ok {
				continue
			}
			if reason := str(m, "state", "waiting", "reason"); FailingContainerReasons[reason] {
				return fmt.Sprintf("container %s: %s", str(m, "name"), withDetail(reason, str(m, "state", "waiting", "message"))), true
			}
		}
	}
	return "", false
}

// podWaitingMessage says why a pod is not ready yet, most specific first.
func podWaitingMessage(pod map[string]any, st Status) string {
	if c, ok := findCondition(pod, "PodScheduled"); ok && c.Status == "False" {
		return withDetail("not scheduled: "+c.Reason, c.Message)
	}
	phase := str(pod, "status", "phase")
	if phase == "" {
		return "waiting to be scheduled"
	}
	for _, field := range []string{"initContainerStatuses", "containerStatuses"} {
		list := slice(pod, "status", field)
		for _, c := range list {
			m, ok := c.(map[string]any)
			if !ok {
				continue
			}
			if reason := str(m, "state", "waiting", "reason"); reason != "" {
				return fmt.Sprintf("container %s: %s", str(m, "name"), reason)
			}
		}
	}
	if phase == "Running" {
		return fmt.Sprintf("%d/%d containers ready", st.Ready, st.Desired)
	}
	return "phase " + phase
}

// ComputeWithPodsAt is ComputeAt for a workload refined by its pods (as selected by PodsOf):
// while the workload is Waiting, its message names the first pod with a failing container
// ("pod NAME: container C: CrashLoopBackOff: …"), else the first pod that is not ready. Pods do
// not fail the workload: their container failures are errors Track counts against
// werf.io/failures-allowed-per-replica, and failed pods are replaced by the controller. A Ready
// or Failed workload status is returned as is.
func ComputeWithPodsAt(obj *unstructured.Unstructured, pods []*unstructured.Unstructured, now time.Time) Status {
	st := ComputeAt(obj, now)
	if st.State != Waiting || obj == nil {
		return st
	}
	sorted := append([]*unstructured.Unstructured(nil), pods...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].GetName() < sorted[j].GetName() })
	for _, p := range sorted {
		if msg, failed := containerFailure(p.Object); failed {
			st.Message += fmt.Sprintf("; pod %s: %s", p.GetName(), msg)
			return st
		}
	}
	for _, p := range sorted {
		if ps := podStatus(p); ps.State == Waiting {
			st.Message += fmt.Sprintf("; pod %s: %s", p.GetName(), ps.Message)
			break
		}
	}
	return st
}

// SoftPodFailure reports whether pod is failed only because a container waits for a
// FailingContainerReasons reason (its phase is not Failed): an error to count, not yet a
// failure, since the kubelet keeps retrying.
func SoftPodFailure(pod *unstructured.Unstructured) bool {
	switch str(pod.Object, "status", "phase") {
	case "Failed", "Succeeded":
		return false
	}
	_, failing := containerFailure(pod.Object)
	return failing
}

// Owned returns the objects (ReplicaSets and Pods) whose controller owner has the given UID.
type Owned func(owner types.UID) []*unstructured.Unstructured

// RevisionAnnotation is the Deployment revision the deployment controller stamps on a
// Deployment and its ReplicaSets.
const RevisionAnnotation = "deployment.kubernetes.io/revision"

// PodsOf returns workload's live pods (not being deleted): pods controlled by it, or for a
// Deployment pods controlled by its ReplicaSets of the current revision (all of its ReplicaSets
// while the Deployment carries no revision yet). Other kinds have no pods.
func PodsOf(workload *unstructured.Unstructured, owned Owned) []*unstructured.Unstructured {
	if workload == nil || !HasPods(workload.GetKind()) {
		return nil
	}
	owners := []types.UID{workload.GetUID()}
	if workload.GetKind() == "Deployment" {
		owners = CurrentReplicaSets(workload, owned)
	}
	var pods []*unstructured.Unstructured
	for _, uid := range owners {
		for _, p := range owned(uid) {
			if p.GetKind() == "Pod" && p.GetDeletionTimestamp() == nil {
				pods = append(pods, p)
			}
		}
	}
	return pods
}

// CurrentReplicaSets returns the UIDs of a Deployment's ReplicaSets of its current revision (all
// of its ReplicaSets while it carries no revision yet); other kinds have none.
func CurrentReplicaSets(workload *unstructured.Unstructured, owned Owned) []types.UID {
	if workload.GetKind() != "Deployment" {
		return nil
	}
	var out []types.UID
	rev := annotation(workload, RevisionAnnotation)
	for _, rs := range owned(workload.GetUID()) {
		if rs.GetKind() == "ReplicaSet" && (rev == "" || annotation(rs, RevisionAnnotation) == rev) {
			out = append(out, rs.GetUID())
		}
	}
	return out
}

// HasPods reports whether Track looks at the pods of objects of kind.
func HasPods(kind string) bool {
	switch kind {
	case "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job":
		return true
	}
	return false
}

// ControllerUID returns the UID of obj's controller owner, "" when it has none.
func ControllerUID(obj *unstructured.Unstructured) types.UID {
	for _, r := range obj.GetOwnerReferences() {
		if r.Controller != nil && *r.Controller {
			return r.UID
		}
	}
	return ""
}

// PodCompletion is the status of a Pod run to completion (a hook or a test): Ready once it
// Succeeded, Failed once it Failed, Waiting while it runs.
func PodCompletion(pod *unstructured.Unstructured) Status {
	phase, _, _ := unstructured.NestedString(pod.Object, "status", "phase")
	switch phase {
	case "Succeeded":
		return Status{State: Ready, Ready: 1, Desired: 1, Message: "completed"}
	case "Failed":
		reason, _, _ := unstructured.NestedString(pod.Object, "status", "reason")
		msg, _, _ := unstructured.NestedString(pod.Object, "status", "message")
		if reason == "" && msg == "" {
			msg = exitedContainers(pod)
		}
		head := "pod failed"
		if reason != "" {
			head += ": " + reason
		}
		return Status{State: Failed, Desired: 1, Message: withDetail(head, msg)}
	case "":
		return Status{State: Waiting, Desired: 1, Message: "pod has no status yet"}
	}
	return Status{State: Waiting, Desired: 1, Message: "pod " + strings.ToLower(phase)}
}

// exitedContainers describes the containers of pod that exited with an error.
func exitedContainers(pod *unstructured.Unstructured) string {
	statuses := slice(pod.Object, "status", "containerStatuses")
	var parts []string
	for _, st := range statuses {
		m, _ := st.(map[string]any)
		name, _, _ := unstructured.NestedString(m, "name")
		code, ok, _ := unstructured.NestedInt64(m, "state", "terminated", "exitCode")
		if !ok || code == 0 {
			continue
		}
		reason, _, _ := unstructured.NestedString(m, "state", "terminated", "reason")
		parts = append(parts, fmt.Sprintf("container %s exited with %d (%s)", name, code, reason))
	}
	return strings.Join(parts, "; ")
}

// PodStatus is one pod of a tracked workload as the progress table shows it: its state, ready
// and total containers, restarts summed over its containers, and what it waits for or why it
// failed.
type PodStatus struct {
	Name     string
	State    State
	Ready    int32
	Desired  int32
	Restarts int32
	Message  string
}

// Equal reports whether s and o are the same status, pods included.
func (s Status) Equal(o Status) bool {
	return s.State == o.State && s.Ready == o.Ready && s.Desired == o.Desired && s.Message == o.Message &&
		s.Errors == o.Errors && s.LastError == o.LastError && s.NonBlocking == o.NonBlocking && slices.Equal(s.Pods, o.Pods)
}
