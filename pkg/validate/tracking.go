package validate

import "github.com/sealane/sealane/pkg/resource"

// The failure-detection annotations are checked with the parsers resource.ParseTrackingAnnotations
// uses, so that a value accepted here is one the tracker understands.
func init() { addTrackingAnnotationRules() }

// addTrackingAnnotationRules points the checks of werf.io/fail-mode,
// failures-allowed-per-replica, no-activity-timeout and
// ignore-readiness-probe-fails-for-<container> at package resource's parsers.
func addTrackingAnnotationRules() {
	exactRules[annFailMode] = parsed(resource.ParseFailMode)
	exactRules[annFailuresAllowed] = parsed(resource.ParseFailuresAllowedPerReplica)
	exactRules[annNoActivityTimeout] = parsed(resource.ParseNoActivityTimeout)
	exactRules[annTrackTerminationMode] = parsed(resource.ParseTrackTerminationMode)
	for i := range prefixRules {
		if prefixRules[i].prefix == annIgnoreReadinessPrefix {
			prefixRules[i].check = parsed(resource.ParseIgnoreReadinessProbeFailsFor)
		}
	}
}
