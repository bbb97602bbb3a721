package readiness

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sealane/sealane/pkg/resource"
)

func TestSettingsOf(t *testing.T) {
	def := DefaultSettings()
	with := func(f func(*Settings)) Settings {
		s := DefaultSettings()
		f(&s)
		return s
	}
	allowed := func(n int) Settings { return with(func(s *Settings) { s.FailuresAllowed = n }) }
	tests := []struct {
		name    string
		obj     string
		want    Settings
		wantErr string
	}{
		{"deployment: 1 per replica", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec: {replicas: 3}
`, allowed(3), ""},
		{"deployment without spec.replicas has one", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
`, allowed(1), ""},
		{"deployment scaled to zero", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec: {replicas: 0}
`, allowed(0), ""},
		{"annotation per replica times replicas", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, annotations: {werf.io/failures-allowed-per-replica: "2"}}
spec: {replicas: 3}
`, allowed(6), ""},
		{"restartPolicy Never allows none", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, annotations: {werf.io/failures-allowed-per-replica: "5"}}
spec: {replicas: 3, template: {spec: {restartPolicy: Never}}}
`, allowed(0), ""},
		{"statefulset", `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec: {replicas: 2}
`, allowed(2), ""},
		{"daemonset: its scheduled pods", `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
status: {desiredNumberScheduled: 4}
`, allowed(4), ""},
		{"daemonset before its first status", `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
`, allowed(1), ""},
		{"job allows none whatever the annotation", `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, annotations: {werf.io/failures-allowed-per-replica: "3"}}
`, allowed(0), ""},
		{"pod: none by default", `
apiVersion: v1
kind: Pod
metadata: {name: p}
`, def, ""},
		{"pod with the annotation", `
apiVersion: v1
kind: Pod
metadata: {name: p, annotations: {werf.io/failures-allowed-per-replica: "2"}}
`, allowed(2), ""},
		{"pod with restartPolicy Never", `
apiVersion: v1
kind: Pod
metadata: {name: p, annotations: {werf.io/failures-allowed-per-replica: "2"}}
spec: {restartPolicy: Never}
`, def, ""},
		{"replicaset: none by default", `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs}
spec: {replicas: 3}
`, def, ""},
		{"a Deployment of another group is not a workload", `
apiVersion: example.com/v1
kind: Deployment
metadata: {name: x}
spec: {replicas: 3}
`, def, ""},
		{"all annotations", `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations:
    werf.io/fail-mode: HopeUntilEndOfDeployProcess
    werf.io/no-activity-timeout: 90s
    werf.io/ignore-readiness-probe-fails-for-app: 20s
    werf.io/track-termination-mode: NonBlocking
spec: {replicas: 2}
`, Settings{FailMode: resource.HopeUntilEndOfDeployProcess, FailuresAllowed: 2, NoActivityTimeout: 90 * time.Second,
			IgnoreReadinessFor: map[string]time.Duration{"app": 20 * time.Second}, NonBlocking: true}, ""},
		{"invalid values keep the defaults", `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations:
    werf.io/fail-mode: ignore
    werf.io/no-activity-timeout: soon
    werf.io/failures-allowed-per-replica: many
spec: {replicas: 2}
`, allowed(2), `annotation werf.io/fail-mode: invalid value "ignore"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SettingsOf(mustObj(t, tt.obj))
			if tt.wantErr == "" && err != nil {
				t.Errorf("error = %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("error = %v, want one containing %q", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("SettingsOf (-want +got):\n%s", diff)
			}
		})
	}
	if got, err := SettingsOf(nil); err != nil || !cmp.Equal(got, def) {
		t.Errorf("SettingsOf(nil) = %+v, %v; want the defaults", got, err)
	}
}
