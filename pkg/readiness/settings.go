package readiness

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sealane/sealane/pkg/resource"
)

// Settings are how failures of one tracked object are judged, from the werf annotations and
// the spec of the live object (see SettingsOf).
type Settings struct {
	// FailMode is werf.io/fail-mode (FailWholeDeployProcessImmediately by default).
	FailMode resource.FailMode
	// FailuresAllowed is how many errors the object may have before it fails:
	// werf.io/failures-allowed-per-replica times its replicas.
	FailuresAllowed int
	// NoActivityTimeout fails the object when its status has not changed for this long
	// (werf.io/no-activity-timeout, 4m by default).
	NoActivityTimeout time.Duration
	// IgnoreReadinessFor overrides the readiness-probe ignore window per container
	// (werf.io/ignore-readiness-probe-fails-for-<container>).
	IgnoreReadinessFor map[string]time.Duration
	// NonBlocking is werf.io/track-termination-mode: NonBlocking.
	NonBlocking bool
}

// DefaultSettings are the settings of an object without tracking annotations whose kind gets
// no failures allowed by default (anything but Deployment, StatefulSet and DaemonSet).
func DefaultSettings() Settings {
	return Settings{FailMode: resource.FailWholeDeployProcessImmediately, NoActivityTimeout: resource.DefaultNoActivityTimeout}
}

// SettingsOf computes obj's settings as werf does. Failures allowed per replica default to 1
// for Deployment, StatefulSet and DaemonSet and to 0 for other kinds; Jobs and objects whose
// pods have restartPolicy Never allow none, whatever the annotation says. The total is the
// per-replica number times spec.replicas (1 when unset; a DaemonSet's
// status.desiredNumberScheduled). Invalid annotation values leave the defaults in place and are
// returned as the error (package validate rejects them before a deploy).
func SettingsOf(obj *unstructured.Unstructured) (Settings, error) {
	s := DefaultSettings()
	if obj == nil {
		return s, nil
	}
	ann, err := resource.ParseTrackingAnnotations(obj.GetAnnotations())
	if ann.FailMode != "" {
		s.FailMode = ann.FailMode
	}
	if ann.NoActivityTimeout > 0 {
		s.NoActivityTimeout = ann.NoActivityTimeout
	}
	s.IgnoreReadinessFor = ann.IgnoreReadinessProbeFailsFor
	s.NonBlocking = ann.TrackTermination == resource.NonBlocking
	s.FailuresAllowed = failuresAllowed(obj, ann.FailuresAllowedPerReplica)
	return s, err
}

// failuresAllowed is nelm's rule for the total number of errors obj may have.
func failuresAllowed(obj *unstructured.Unstructured, perReplica *int) int {
	group, kind := obj.GroupVersionKind().Group, obj.GetKind()
	if kind == "Job" && group == "batch" {
		return 0
	}
	policyPath := []string{"spec", "template", "spec", "restartPolicy"}
	if kind == "Pod" && group == "" {
		policyPath = []string{"spec", "restartPolicy"}
	}
	if str(obj.Object, policyPath...) == "Never" {
		return 0
	}
	per := 0
	workload := group == "apps" || group == "extensions"
	if workload && (kind == "Deployment" || kind == "StatefulSet" || kind == "DaemonSet") {
		per = 1
	}
	if perReplica != nil {
		per = *perReplica
	}
	replicas := int64(1)
	if workload && kind == "DaemonSet" {
		if n, _ := num(obj.Object, "status", "desiredNumberScheduled"); n > 0 {
			replicas = n
		}
	} else if n, ok := num(obj.Object, "spec", "replicas"); ok {
		replicas = max(n, 0)
	}
	return per * int(replicas)
}
