package readiness

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// NoStatusGrace is how long after creation an object of a non-built-in kind without any status
// counts as Waiting for its controller rather than Ready because it exists — only for kinds
// served with a status subresource (ComputeForAt): a kind without one has no controller
// reporting through it (monitoring rules, dashboards' kinds), and such an object is ready as
// soon as it exists, as in kubedog.
const NoStatusGrace = 5 * time.Second

// NoStatusMessage is the message of an object waiting out NoStatusGrace: its creation time
// plus the grace is when it turns Ready without any change to the object.
const NoStatusMessage = "waiting for a controller to report status"

// genericStatus judges kinds without a rule of their own (custom resources and built-ins such as
// Namespace or PodDisruptionBudget), modelled on kstatus and kubedog's generic tracker. The
// first of these that applies decides:
//  1. status.observedGeneration below metadata.generation: Waiting;
//  2. kstatus conditions: Stalled=True is Failed, Reconciling=True is Waiting;
//  3. the rule of a well-known kind in knownKinds;
//  4. the first of readyConditionTypes among status.conditions: True is Ready, False or Unknown
//     Waiting, but False with a reason containing "fail" or "error" is Failed;
//  5. the first of statusWordFields holding a ready, pending or failed word;
//  6. otherwise Ready ("exists"), unless the object has no status at all, is not of a built-in
//     group, its kind has a status subresource (not statusless) and it was created less than
//     NoStatusGrace before now: then Waiting.
func genericStatus(obj *unstructured.Unstructured, now time.Time, statusless bool) Status {
	o := obj.Object
	if og, ok := num(o, "status", "observedGeneration"); ok {
		if gen := obj.GetGeneration(); og < gen {
			return Status{State: Waiting, Message: fmt.Sprintf("waiting for the controller to observe generation %d (seen %d)", gen, og)}
		}
	}
	if c, ok := conditionFold(obj, "Stalled"); ok && strings.EqualFold(c.Status, "True") {
		return Status{State: Failed, Message: reasonDetail("stalled", c.Reason, c.Message)}
	}
	if c, ok := conditionFold(obj, "Reconciling"); ok && strings.EqualFold(c.Status, "True") {
		return Status{State: Waiting, Message: reasonDetail("reconciling", c.Reason, c.Message)}
	}
	if st, ok := knownKindStatus(obj); ok {
		return st
	}
	for _, typ := range readyConditionTypes {
		c, ok := conditionFold(obj, typ)
		if !ok {
			continue
		}
		st := conditionStatusAt(obj, c, []string{"True"}, nil)
		if st.State == Waiting && strings.EqualFold(c.Status, "False") && failureReason(c.Reason) {
			st.State = Failed
		}
		return st
	}
	for _, field := range statusWordFields {
		v := str(o, "status", field)
		if v == "" {
			continue
		}
		state, ok := statusWords[normalize(v)]
		if !ok {
			continue
		}
		st := Status{State: state, Message: field + ": " + Clip(v)}
		if state != Ready {
			st.Message = withDetail(st.Message, str(o, "status", "message"))
		}
		return st
	}
	if noStatus(o) && !statusless && !builtinGroups[obj.GroupVersionKind().Group] {
		if created := obj.GetCreationTimestamp().Time; !created.IsZero() {
			if age := now.Sub(created); age < NoStatusGrace && age > -NoStatusGrace {
				return Status{State: Waiting, Message: NoStatusMessage}
			}
		}
	}
	return Status{State: Ready, Message: "exists"}
}

// knownKind is how to judge one well-known kind: by a condition's status or by a string field,
// compared case-insensitively with the ready and failed values (anything else is Waiting).
// When the object lacks the condition or field, the generic rules that follow decide.
type knownKind struct {
	group     string
	kinds     []string
	condition string   // a status.conditions type, or
	field     []string // the path of a string field
	ready     []string
	failed    []string
}

// knownKinds lists custom resources (and built-ins) whose readiness the generic rules would
// misjudge; kubedog's contrib rules cover the same ground.
var knownKinds = []knownKind{
	{group: "cert-manager.io", kinds: []string{"Certificate", "Issuer", "ClusterIssuer"}, condition: "Ready", ready: []string{"True"}},
	{group: "helm.toolkit.fluxcd.io", kinds: []string{"HelmRelease"}, condition: "Ready", ready: []string{"True"}},
	{group: "kustomize.toolkit.fluxcd.io", kinds: []string{"Kustomization"}, condition: "Ready", ready: []string{"True"}},
	{group: "source.toolkit.fluxcd.io", kinds: []string{"GitRepository", "HelmRepository", "HelmChart", "OCIRepository", "Bucket"}, condition: "Ready", ready: []string{"True"}},
	{group: "argoproj.io", kinds: []string{"Application"}, field: []string{"status", "health", "status"}, ready: []string{"Healthy"}, failed: []string{"Degraded"}},
	{group: "argoproj.io", kinds: []string{"ApplicationSet"}, condition: "ResourcesUpToDate", ready: []string{"True"}},
	{group: "external-secrets.io", kinds: []string{"ExternalSecret"}, condition: "Ready", ready: []string{"True"}, failed: []string{"False"}},
	{group: "external-secrets.io", kinds: []string{"SecretStore", "ClusterSecretStore", "ClusterExternalSecret"}, condition: "Ready", ready: []string{"True"}},
	{group: "bitnami.com", kinds: []string{"SealedSecret"}, condition: "Synced", ready: []string{"True"}},
	{group: "monitoring.coreos.com", kinds: []string{"Prometheus", "PrometheusAgent", "Alertmanager", "ThanosRuler"}, condition: "Available", ready: []string{"True"}},
	{group: "kyverno.io", kinds: []string{"Policy", "ClusterPolicy"}, condition: "Ready", ready: []string{"True"}},
	{group: "acid.zalan.do", kinds: []string{"postgresql"}, field: []string{"status", "PostgresClusterStatus"}, ready: []string{"Running"}, failed: []string{"CreateFailed", "UpdateFailed", "SyncFailed", "DeleteFailed"}},
	// An aggregated API reports FailedDiscoveryCheck while its backend starts: not a failure.
	{group: "apiregistration.k8s.io", kinds: []string{"APIService"}, condition: "Available", ready: []string{"True"}},
}

// knownKindStatus applies the knownKinds rule of obj's kind, if it has one and obj has the
// condition or field the rule reads.
func knownKindStatus(obj *unstructured.Unstructured) (Status, bool) {
	gvk := obj.GroupVersionKind()
	for _, k := range knownKinds {
		if k.group != gvk.Group || !containsFold(k.kinds, gvk.Kind) {
			continue
		}
		if k.condition != "" {
			c, ok := conditionFold(obj, k.condition)
			if !ok {
				return Status{}, false
			}
			return conditionStatusAt(obj, c, k.ready, k.failed), true
		}
		v, ok, _ := unstructured.NestedString(obj.Object, k.field...)
		if !ok || v == "" {
			return Status{}, false
		}
		st := Status{State: Waiting, Message: strings.Join(k.field, ".") + ": " + Clip(v)}
		switch {
		case containsFold(k.ready, v):
			st.State = Ready
		case containsFold(k.failed, v):
			st.State = Failed
		}
		return st, true
	}
	return Status{}, false
}

// readyConditionTypes are the condition types that say an object is ready, by priority; they
// match condition types case-insensitively, ignoring '-', '_' and spaces.
var readyConditionTypes = []string{
	"ready", "succeeded", "success", "complete", "completed", "finished", "finalized", "done",
	"available", "running", "ok", "active", "live", "healthy", "started", "initialized",
	"approved", "established",
}

// statusWordFields are the fields of status that may hold a state word, by priority.
var statusWordFields = []string{"phase", "currentPhase", "state", "currentState", "status", "currentStatus", "health", "currentHealth"}

// statusWords maps normalized state words to what they mean.
var statusWords = func() map[string]State {
	m := map[string]State{}
	for _, w := range []string{"ready", "success", "succeeded", "successful", "complete", "completed",
		"finished", "finalized", "done", "available", "running", "ok", "active", "live", "healthy",
		"started", "initialized", "approved", "established", "bound", "valid", "green"} {
		m[w] = Ready
	}
	for _, w := range []string{"pending", "unknown", "progressing", "inprogress", "creating", "updating",
		"provisioning", "deploying", "reconciling", "initializing", "starting", "waiting", "deleting",
		"terminating", "invalid", "yellow", "red"} {
		m[w] = Waiting
	}
	for _, w := range []string{"failure", "failed", "abort", "aborted", "terminated", "error", "errored",
		"rejection", "rejected"} {
		m[w] = Failed
	}
	return m
}()

// builtinGroups are the API groups of Kubernetes itself: their kinds either have a rule or
// never get a status (ConfigMap, Secret, RBAC), so they get no grace for a missing status.
var builtinGroups = map[string]bool{
	"": true, "apps": true, "batch": true, "autoscaling": true, "policy": true, "extensions": true,
	"admissionregistration.k8s.io": true, "apiextensions.k8s.io": true, "apiregistration.k8s.io": true,
	"authentication.k8s.io": true, "authorization.k8s.io": true, "certificates.k8s.io": true,
	"coordination.k8s.io": true, "discovery.k8s.io": true, "events.k8s.io": true,
	"flowcontrol.apiserver.k8s.io": true, "internal.apiserver.k8s.io": true, "networking.k8s.io": true,
	"node.k8s.io": true, "rbac.authorization.k8s.io": true, "resource.k8s.io": true,
	"scheduling.k8s.io": true, "storage.k8s.io": true, "storagemigration.k8s.io": true,
}

// genCondition is a status condition with the generation it was computed for (0 if unset).
type genCondition struct {
	condition
	generation int64
}

// conditionFold finds the condition whose type equals typ, ignoring case, '-', '_' and spaces.
func conditionFold(obj *unstructured.Unstructured, typ string) (genCondition, bool) {
	list := slice(obj.Object, "status", "conditions")
	want := normalize(typ)
	for _, c := range list {
		m, ok := c.(map[string]any)
		if !ok || normalize(str(m, "type")) != want {
			continue
		}
		gen, _ := num(m, "observedGeneration")
		return genCondition{
			condition:  condition{Type: str(m, "type"), Status: str(m, "status"), Reason: str(m, "reason"), Message: str(m, "message")},
			generation: gen,
		}, true
	}
	return genCondition{}, false
}

// conditionStatus judges condition c by its status: Ready when among ready, Failed when among
// failed, Waiting otherwise; a Ready condition computed for an older generation is Waiting.
// The message is "Type=Status (Reason): message".
func conditionStatus(c genCondition, ready, failed []string) Status {
	head := c.Type + "=" + c.Status
	if c.Reason != "" {
		head += " (" + Clip(c.Reason) + ")"
	}
	st := Status{State: Waiting, Message: withDetail(head, c.Message)}
	switch {
	case containsFold(failed, c.Status):
		st.State = Failed
	case containsFold(ready, c.Status):
		st.State = Ready
	}
	return st
}

// conditionStatusAt is conditionStatus that also distrusts a condition computed for a
// generation older than obj's.
func conditionStatusAt(obj *unstructured.Unstructured, c genCondition, ready, failed []string) Status {
	st := conditionStatus(c, ready, failed)
	if gen := obj.GetGeneration(); st.State == Ready && c.generation != 0 && c.generation < gen {
		return Status{State: Waiting, Message: fmt.Sprintf("waiting for condition %s to observe generation %d (seen %d)", c.Type, gen, c.generation)}
	}
	return st
}

// failureReason reports whether a condition reason names a failure ("InstallFailed",
// "ErrorSyncing").
func failureReason(reason string) bool {
	r := strings.ToLower(reason)
	return strings.Contains(r, "fail") || strings.Contains(r, "error")
}

// noStatus reports whether obj has no status or an empty one.
func noStatus(obj map[string]any) bool {
	s, ok := obj["status"]
	if !ok || s == nil {
		return true
	}
	m, ok := s.(map[string]any)
	return ok && len(m) == 0
}

// normalize folds case and drops '-', '_' and spaces, so that "InProgress", "in-progress" and
// "IN_PROGRESS" compare equal.
func normalize(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '-', '_', ' ':
			return -1
		}
		return r
	}, strings.ToLower(s))
}

func containsFold(list []string, s string) bool {
	for _, v := range list {
		if normalize(v) == normalize(s) {
			return true
		}
	}
	return false
}

// reasonDetail joins a head, an optional reason and an optional message as
// "head: reason: message".
func reasonDetail(head, reason, message string) string {
	if reason != "" {
		head += ": " + Clip(reason)
	}
	return withDetail(head, message)
}
