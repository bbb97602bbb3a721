package resource

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseTrackingValues(t *testing.T) {
	tests := []struct {
		name    string
		parse   func(string) (any, error)
		value   string
		want    any
		wantErr string
	}{
		{"fail mode", wrap(ParseFailMode), "HopeUntilEndOfDeployProcess", HopeUntilEndOfDeployProcess, ""},
		{"fail mode ignore", wrap(ParseFailMode), "IgnoreAndContinueDeployProcess", IgnoreAndContinueDeployProcess, ""},
		{"fail mode bad", wrap(ParseFailMode), "ignore", nil,
			"must be one of FailWholeDeployProcessImmediately, HopeUntilEndOfDeployProcess, IgnoreAndContinueDeployProcess"},
		{"failures allowed", wrap(ParseFailuresAllowedPerReplica), "3", 3, ""},
		{"failures allowed zero", wrap(ParseFailuresAllowedPerReplica), "0", 0, ""},
		{"failures allowed negative", wrap(ParseFailuresAllowedPerReplica), "-1", nil, "must be a whole number >= 0"},
		{"no activity", wrap(ParseNoActivityTimeout), "8m30s", 8*time.Minute + 30*time.Second, ""},
		{"no activity zero", wrap(ParseNoActivityTimeout), "0s", nil, "must be a positive duration"},
		{"no activity bare number", wrap(ParseNoActivityTimeout), "90", nil, "must be a positive duration"},
		{"ignore readiness", wrap(ParseIgnoreReadinessProbeFailsFor), "20s", 20 * time.Second, ""},
		{"ignore readiness zero", wrap(ParseIgnoreReadinessProbeFailsFor), "0s", time.Duration(0), ""},
		{"ignore readiness negative", wrap(ParseIgnoreReadinessProbeFailsFor), "-1s", nil, "must be a non-negative duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.parse(tt.value)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("error = %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseTrackingAnnotations(t *testing.T) {
	three := 3
	got, err := ParseTrackingAnnotations(map[string]string{
		"werf.io/fail-mode":                            "HopeUntilEndOfDeployProcess",
		"werf.io/failures-allowed-per-replica":         "3",
		"werf.io/no-activity-timeout":                  "90s",
		"werf.io/ignore-readiness-probe-fails-for-app": "20s",
		"werf.io/ignore-readiness-probe-fails-for-db":  "1m",
		"werf.io/track-termination-mode":               "NonBlocking",
		"werf.io/weight":                               "10",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := TrackingAnnotations{
		FailMode: HopeUntilEndOfDeployProcess, FailuresAllowedPerReplica: &three, NoActivityTimeout: 90 * time.Second,
		IgnoreReadinessProbeFailsFor: map[string]time.Duration{"app": 20 * time.Second, "db": time.Minute},
		TrackTermination:             NonBlocking,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	none, err := ParseTrackingAnnotations(nil)
	if err != nil || !cmp.Equal(none, TrackingAnnotations{}) {
		t.Errorf("no annotations: %+v, %v; want the zero value", none, err)
	}

	bad, err := ParseTrackingAnnotations(map[string]string{
		"werf.io/fail-mode":                            "ignore",
		"werf.io/failures-allowed-per-replica":         "many",
		"werf.io/no-activity-timeout":                  "4 minutes",
		"werf.io/ignore-readiness-probe-fails-for-app": "20",
		"werf.io/ignore-readiness-probe-fails-for-":    "20s",
		"werf.io/ignore-readiness-probe-fails-for-ok":  "5s",
		"werf.io/track-termination-mode":               "Blocking",
	})
	if !errors.Is(err, ErrInvalidAnnotation) {
		t.Fatalf("error = %v, want ErrInvalidAnnotation", err)
	}
	for _, want := range []string{
		`annotation werf.io/fail-mode: invalid value "ignore": must be one of FailWholeDeployProcessImmediately, HopeUntilEndOfDeployProcess, IgnoreAndContinueDeployProcess`,
		`annotation werf.io/failures-allowed-per-replica: invalid value "many": must be a whole number >= 0`,
		`annotation werf.io/no-activity-timeout: invalid value "4 minutes": must be a positive duration`,
		`annotation werf.io/ignore-readiness-probe-fails-for-app: invalid value "20": must be a non-negative duration`,
		`annotation werf.io/ignore-readiness-probe-fails-for-: invalid value "20s": the key names no container`,
		`annotation werf.io/track-termination-mode: invalid value "Blocking": must be one of WaitUntilResourceReady, NonBlocking`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q\nlacks %q", err, want)
		}
	}
	wantBad := TrackingAnnotations{IgnoreReadinessProbeFailsFor: map[string]time.Duration{"ok": 5 * time.Second}}
	if diff := cmp.Diff(wantBad, bad); diff != "" {
		t.Errorf("valid values kept (-want +got):\n%s", diff)
	}
}
