package readiness

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func probe(delay, period, timeout, success, failure int32) *corev1.Probe {
	return &corev1.Probe{InitialDelaySeconds: delay, PeriodSeconds: period, TimeoutSeconds: timeout,
		SuccessThreshold: success, FailureThreshold: failure}
}

func TestReadinessIgnoreWindow(t *testing.T) {
	tests := []struct {
		name               string
		readiness, startup *corev1.Probe
		want               time.Duration
	}{
		{"no readiness probe", nil, nil, 0},
		// (10+0) + 1 + (3+1-3)*10 + 10/2 + 1
		{"API defaults", probe(0, 10, 1, 1, 3), nil, 27 * time.Second},
		{"zero fields take the API defaults", &corev1.Probe{}, nil, 27 * time.Second},
		// (1+0) + 1 + 1*1 + 0 + 1
		{"fast probe", probe(0, 1, 1, 1, 3), nil, 4 * time.Second},
		// (5+20) + 2 + 1*5 + 2 + 2
		{"initial delay", probe(20, 5, 2, 1, 3), nil, 36 * time.Second},
		// 10 + 1 + (1+1-3)*10 + 5 + 1
		{"failure threshold 1", probe(0, 10, 1, 1, 1), nil, 7 * time.Second},
		// startup worst case 10+0+(30+1-1)*10+1+10 = 321 > 10: one readiness period remains
		{"startup probe takes longer than the readiness delay", probe(0, 10, 1, 1, 3), probe(0, 10, 1, 1, 30), 27 * time.Second},
		// readiness delay 10+100 = 110; startup worst case 1+0+1*1+1+10 = 13: 97 remain; 97+1+10+5+1
		{"readiness delay longer than the startup probe", probe(100, 10, 1, 1, 3), probe(0, 1, 1, 1, 1), 114 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ReadinessIgnoreWindow(tt.readiness, tt.startup); got != tt.want {
				t.Errorf("ReadinessIgnoreWindow = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestReadinessFailureCounts(t *testing.T) {
	started := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	fast := probe(0, 1, 1, 1, 3) // window 4s
	zero, long := time.Duration(0), time.Minute
	tests := []struct {
		name     string
		p        *corev1.Probe
		override *time.Duration
		started  time.Time
		at       time.Duration // after started
		want     bool
	}{
		{"inside the window", fast, nil, started, 3 * time.Second, false},
		{"at the end of the window", fast, nil, started, 4 * time.Second, true},
		{"after the window", fast, nil, started, 10 * time.Second, true},
		{"override longer", fast, &long, started, 10 * time.Second, false},
		{"override zero counts at once", fast, &zero, started, 0, true},
		{"not started: not counted", fast, nil, time.Time{}, time.Hour, false},
		{"failureThreshold 1 always counts", probe(0, 1, 1, 1, 1), &long, time.Time{}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := readinessFailureCounts(tt.p, nil, tt.override, tt.started, started.Add(tt.at)); got != tt.want {
				t.Errorf("readinessFailureCounts = %v, want %v", got, tt.want)
			}
		})
	}
}
