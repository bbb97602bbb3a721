// Package readiness decides whether a Kubernetes object is ready or has failed: the rules of
// each kind (ComputeAt, ComputeWithPodsAt, PodsOf), the failure rules that count errors seen
// on its pods and events (ErrorLog), and the werf annotations that tune them (Settings). It is
// pure — objects and the time in, a Status out; pkg/track feeds it from informers.
package readiness

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// State is the readiness verdict for one object.
type State string

// The states an object can be in.
const (
	Waiting State = "WAITING"
	Ready   State = "READY"
	Failed  State = "FAILED"
)

// Status is the readiness of one object. Ready and Desired count replicas (pods for a
// DaemonSet, completions for a Job, containers for a Pod) where the kind has them; Message says
// what is missing or wrong, e.g. "2/3 replicas available" or "container app: CrashLoopBackOff".
//
// Track adds what it learns beyond the object itself: Errors counts the errors seen on the
// object and its pods (failed events, crash loops, probe failures) and LastError is the latest;
// Pods are the object's pods (see PodStatus); NonBlocking says the deploy does not wait for it
// (werf.io/track-termination-mode: NonBlocking). Compare Statuses with Equal.
type Status struct {
	State       State
	Ready       int32
	Desired     int32
	Message     string
	Errors      int
	LastError   string
	Pods        []PodStatus
	NonBlocking bool
}

// maxMessage bounds messages copied from the cluster (condition and container messages).
const maxMessage = 200

// ComputeAt returns obj's readiness by the rules of its kind: Deployment, StatefulSet,
// DaemonSet, ReplicaSet, Job, Pod, Service, Ingress, PersistentVolumeClaim and
// CustomResourceDefinition have their own rules (see the kind functions); any other kind is
// Judged by the generic rules of genericStatus, whose grace for objects without a status is
// measured at now. A nil obj is Waiting ("not found"). It looks only at obj and now.
func ComputeAt(obj *unstructured.Unstructured, now time.Time) Status {
	return ComputeForAt(obj, now, false)
}

// ComputeForAt is ComputeAt for an object whose kind the cluster serves without a status
// subresource when statusless is set: an object of such a kind without any status is Ready at
// once (no NoStatusGrace), since no controller reports its status through one.
func ComputeForAt(obj *unstructured.Unstructured, now time.Time, statusless bool) Status {
	if obj == nil {
		return Status{State: Waiting, Message: "not found"}
	}
	group := obj.GroupVersionKind().Group
	switch kind := obj.GetKind(); {
	case kind == "Deployment" && (group == "apps" || group == "extensions"):
		return deploymentStatus(obj)
	case kind == "StatefulSet" && group == "apps":
		return statefulSetStatus(obj)
	case kind == "DaemonSet" && (group == "apps" || group == "extensions"):
		return daemonSetStatus(obj)
	case kind == "ReplicaSet" && (group == "apps" || group == "extensions"):
		return replicaSetStatus(obj)
	case kind == "Job" && group == "batch":
		return jobStatus(obj)
	case kind == "Pod" && group == "":
		return podStatus(obj)
	case kind == "Service" && group == "":
		return serviceStatus(obj)
	case kind == "Ingress" && (group == "networking.k8s.io" || group == "extensions"):
		return IngressStatus(obj, nil)
	case kind == "PersistentVolumeClaim" && group == "":
		return pvcStatus(obj)
	case kind == "CustomResourceDefinition" && group == "apiextensions.k8s.io":
		return crdStatus(obj)
	}
	return genericStatus(obj, now, statusless)
}

// num reads an integer field (int64, as decoded by the apimachinery JSON decoder, or float64).
func num(obj map[string]any, fields ...string) (int64, bool) {
	v, ok, _ := unstructured.NestedFieldNoCopy(obj, fields...)
	if !ok {
		return 0, false
	}
	switch n := v.(type) {
	case int64:
		return n, true
	case int32:
		return int64(n), true
	case int:
		return int64(n), true
	case float64:
		return int64(n), true
	}
	return 0, false
}

// count reads an integer field that the API omits when zero.
func count(obj map[string]any, fields ...string) int32 {
	n, _ := num(obj, fields...)
	return int32(n)
}

// str reads a string field, "" when absent.
// slice returns the list at fields of obj, not copied: read it, never change it.
func slice(obj map[string]any, fields ...string) []any {
	v, _, _ := unstructured.NestedFieldNoCopy(obj, fields...)
	l, _ := v.([]any)
	return l
}

// annotation returns the annotation key of obj without copying its annotations.
func annotation(obj *unstructured.Unstructured, key string) string {
	return str(obj.Object, "metadata", "annotations", key)
}

func str(obj map[string]any, fields ...string) string {
	s, _, _ := unstructured.NestedString(obj, fields...)
	return s
}

// condition is one entry of status.conditions.
type condition struct{ Type, Status, Reason, Message string }

func findCondition(obj map[string]any, typ string) (condition, bool) {
	list := slice(obj, "status", "conditions")
	for _, c := range list {
		m, ok := c.(map[string]any)
		if !ok || str(m, "type") != typ {
			continue
		}
		return condition{Type: typ, Status: str(m, "status"), Reason: str(m, "reason"), Message: str(m, "message")}, true
	}
	return condition{}, false
}

func conditionTrue(obj map[string]any, typ string) (condition, bool) {
	c, ok := findCondition(obj, typ)
	return c, ok && c.Status == "True"
}

// observed reports whether the controller has seen the object's current generation; when not,
// it returns the Waiting status to report.
func observed(obj *unstructured.Unstructured) (Status, bool) {
	og, ok := num(obj.Object, "status", "observedGeneration")
	if !ok {
		return Status{State: Waiting, Message: "waiting for the controller to observe the object"}, false
	}
	if gen := obj.GetGeneration(); og < gen {
		return Status{State: Waiting, Message: fmt.Sprintf("waiting for the controller to observe generation %d (seen %d)", gen, og)}, false
	}
	return Status{}, true
}

// desiredReplicas reads spec.replicas, which defaults to 1.
func desiredReplicas(obj *unstructured.Unstructured) int32 {
	if n, ok := num(obj.Object, "spec", "replicas"); ok {
		return int32(n)
	}
	return 1
}

// Clip shortens s to maxMessage runes and keeps it on one line.
func Clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > maxMessage {
		return string(r[:maxMessage-1]) + "…"
	}
	return s
}

// withDetail joins a reason and an optional message as "reason: message".
func withDetail(reason, message string) string {
	if message == "" {
		return reason
	}
	return reason + ": " + Clip(message)
}
