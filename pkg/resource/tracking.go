package resource

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// FailMode is werf.io/fail-mode: what an object's failure does to the deploy.
type FailMode string

// The fail modes of werf.io/fail-mode (werf docs, "Fail mode").
const (
	// FailWholeDeployProcessImmediately fails the deploy as soon as the object fails (default).
	FailWholeDeployProcessImmediately FailMode = "FailWholeDeployProcessImmediately"
	// HopeUntilEndOfDeployProcess keeps tracking a failed object while other objects are still
	// awaited; the deploy fails if only such failed objects are left.
	HopeUntilEndOfDeployProcess FailMode = "HopeUntilEndOfDeployProcess"
	// IgnoreAndContinueDeployProcess: the object's failure does not affect the deploy.
	IgnoreAndContinueDeployProcess FailMode = "IgnoreAndContinueDeployProcess"
)

// DefaultNoActivityTimeout is werf.io/no-activity-timeout when not set (werf's 4m).
const DefaultNoActivityTimeout = 4 * time.Minute

// ParseFailMode parses werf.io/fail-mode: FailWholeDeployProcessImmediately,
// HopeUntilEndOfDeployProcess or IgnoreAndContinueDeployProcess (exact spelling).
func ParseFailMode(v string) (FailMode, error) {
	s, err := ParseOneOf(v, string(FailWholeDeployProcessImmediately), string(HopeUntilEndOfDeployProcess),
		string(IgnoreAndContinueDeployProcess))
	return FailMode(s), err
}

// ParseFailuresAllowedPerReplica parses werf.io/failures-allowed-per-replica: a whole number >= 0.
func ParseFailuresAllowedPerReplica(v string) (int, error) {
	n, err := ParseCount(v)
	if err != nil {
		return 0, errors.New(`must be a whole number >= 0 in quotes (errors tolerated per replica), e.g. "0" or "3"`)
	}
	return n, nil
}

// ParseNoActivityTimeout parses werf.io/no-activity-timeout: a positive Go duration such as
// "90s" or "8m30s".
func ParseNoActivityTimeout(v string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d <= 0 {
		return 0, errors.New(`must be a positive duration such as "90s", "4m" or "8m30s"`)
	}
	return d, nil
}

// ParseIgnoreReadinessProbeFailsFor parses werf.io/ignore-readiness-probe-fails-for-<container>:
// a Go duration >= 0 ("0s" counts every readiness-probe failure).
func ParseIgnoreReadinessProbeFailsFor(v string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d < 0 {
		return 0, errors.New(`must be a non-negative duration such as "20s", "1m" or "1m30s"`)
	}
	return d, nil
}

// TrackingAnnotations are the failure-detection annotations of one object, parsed. Zero
// values mean "not set": the tracker applies werf's defaults, which depend on the object's kind
// and spec (see package track).
type TrackingAnnotations struct {
	// FailMode is werf.io/fail-mode.
	FailMode FailMode
	// FailuresAllowedPerReplica is werf.io/failures-allowed-per-replica; nil when not set.
	FailuresAllowedPerReplica *int
	// NoActivityTimeout is werf.io/no-activity-timeout.
	NoActivityTimeout time.Duration
	// IgnoreReadinessProbeFailsFor maps a container name to its
	// werf.io/ignore-readiness-probe-fails-for-<container>; nil when none is set.
	IgnoreReadinessProbeFailsFor map[string]time.Duration
	// TrackTermination is werf.io/track-termination-mode.
	TrackTermination TrackTermination
}

// ParseTrackingAnnotations reads the failure-detection annotations among ann (an object's
// annotations or Resource.Tracking). Each invalid value is an *AnnotationError naming the key,
// the value and what is allowed, all of them joined into the error; the result holds the valid
// values.
func ParseTrackingAnnotations(ann map[string]string) (TrackingAnnotations, error) {
	var a TrackingAnnotations
	var errs []error
	note := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if m, set, err := ParseAnnotation(ann, AnnotationFailMode, ParseFailMode); set && err == nil {
		a.FailMode = m
	} else {
		note(err)
	}
	if n, set, err := ParseAnnotation(ann, AnnotationFailuresAllowedPerReplica, ParseFailuresAllowedPerReplica); set && err == nil {
		a.FailuresAllowedPerReplica = &n
	} else {
		note(err)
	}
	if d, set, err := ParseAnnotation(ann, AnnotationNoActivityTimeout, ParseNoActivityTimeout); set && err == nil {
		a.NoActivityTimeout = d
	} else {
		note(err)
	}
	if m, set, err := ParseAnnotation(ann, AnnotationTrackTerminationMode, ParseTrackTerminationMode); set && err == nil {
		a.TrackTermination = m
	} else {
		note(err)
	}
	keys := make([]string, 0, len(ann))
	for k := range ann {
		if strings.HasPrefix(k, AnnotationIgnoreReadinessPrefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		container := strings.TrimPrefix(k, AnnotationIgnoreReadinessPrefix)
		if container == "" {
			note(&AnnotationError{Key: k, Value: ann[k], Err: fmt.Errorf("the key names no container: write %s<container>", AnnotationIgnoreReadinessPrefix)})
			continue
		}
		d, _, err := ParseAnnotation(ann, k, ParseIgnoreReadinessProbeFailsFor)
		if err != nil {
			note(err)
			continue
		}
		if a.IgnoreReadinessProbeFailsFor == nil {
			a.IgnoreReadinessProbeFailsFor = map[string]time.Duration{}
		}
		a.IgnoreReadinessProbeFailsFor[container] = d
	}
	return a, errors.Join(errs...)
}
