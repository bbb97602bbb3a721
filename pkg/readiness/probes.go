package readiness

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The API server's defaults for probe timings, used when a field is zero.
const (
	defaultProbePeriod    = 10
	defaultProbeTimeout   = 1
	defaultProbeSuccess   = 1
	defaultProbeFailure   = 3
	readinessPrefixReason = "Readiness probe failed:"
)

// probeTiming is a probe's timing fields with the API defaults filled in.
type probeTiming struct{ initialDelay, period, timeout, success, failure int32 }

func timingOf(p *corev1.Probe) probeTiming {
	t := probeTiming{p.InitialDelaySeconds, p.PeriodSeconds, p.TimeoutSeconds, p.SuccessThreshold, p.FailureThreshold}
	if t.period <= 0 {
		t.period = defaultProbePeriod
	}
	if t.timeout <= 0 {
		t.timeout = defaultProbeTimeout
	}
	if t.success <= 0 {
		t.success = defaultProbeSuccess
	}
	if t.failure <= 0 {
		t.failure = defaultProbeFailure
	}
	return t
}

// ReadinessIgnoreWindow returns how long after a container has started (passed its startup
// probe, if any) its readiness-probe failures are not counted as errors: nelm's formula
//
//	max(0, realInitialDelay + timeout + (failureThreshold+successThreshold-3)*period + period/2 + timeout)
//
// seconds, where realInitialDelay is period+initialDelay without a startup probe; with one it is
// what remains of that delay after the startup probe's worst case (startup period +
// initialDelay + (failureThreshold+successThreshold-1)*period + timeout, plus one readiness
// period), or a single readiness period when the startup probe takes longer. A nil readiness
// probe has no window. Failures of a probe with failureThreshold 1 are never ignored, whatever
// this returns (see readinessFailureCounts).
func ReadinessIgnoreWindow(readiness, startup *corev1.Probe) time.Duration {
	if readiness == nil {
		return 0
	}
	r := timingOf(readiness)
	delay := r.period + r.initialDelay
	if startup != nil {
		s := timingOf(startup)
		startupWorst := s.period + s.initialDelay + (s.failure+s.success-1)*s.period + s.timeout + r.period
		if startupWorst > delay {
			delay = r.period
		} else {
			delay -= startupWorst
		}
	}
	secs := delay + r.timeout + (r.failure+r.success-3)*r.period + r.period/2 + r.timeout
	return time.Duration(max(secs, 0)) * time.Second
}

// readinessFailureCounts decides whether a readiness-probe failure at time at counts as an
// error: always when the probe's failureThreshold is 1; otherwise only from started+window on,
// where window is override when set (werf.io/ignore-readiness-probe-fails-for-<container>),
// else ReadinessIgnoreWindow. A container not known to have started (zero started) never
// counts: its failures are in the window that has not begun.
func readinessFailureCounts(readiness, startup *corev1.Probe, override *time.Duration, started, at time.Time) bool {
	if readiness != nil && readiness.FailureThreshold == 1 {
		return true
	}
	if started.IsZero() {
		return false
	}
	window := ReadinessIgnoreWindow(readiness, startup)
	if override != nil {
		window = *override
	}
	return !at.Before(started.Add(window))
}
