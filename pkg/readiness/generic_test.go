package readiness

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestComputeGeneric(t *testing.T) {
	// now is 2s after "young" objects were created and a minute after "old" ones.
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name string
		obj  string
		want Status
	}{
		// observedGeneration
		{"generation not observed", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, generation: 3}
status:
  observedGeneration: 2
  conditions: [{type: Ready, status: "True"}]
`, Status{State: Waiting, Message: "waiting for the controller to observe generation 3 (seen 2)"}},
		{"generation observed, nothing else", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, generation: 3, creationTimestamp: "2025-01-02T03:04:03Z"}
status: {observedGeneration: 3}
`, Status{State: Ready, Message: "exists"}},
		// kstatus conditions
		{"stalled", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, generation: 1}
status:
  observedGeneration: 1
  conditions:
  - {type: Ready, status: "True"}
  - {type: Stalled, status: "True", reason: InvalidSpec, message: spec.size must be positive}
`, Status{State: Failed, Message: "stalled: InvalidSpec: spec.size must be positive"}},
		{"stalled false, reconciling", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
status:
  conditions:
  - {type: Stalled, status: "False"}
  - {type: Reconciling, status: "True", reason: Progressing, message: creating 2 replicas}
  - {type: Ready, status: "True"}
`, Status{State: Waiting, Message: "reconciling: Progressing: creating 2 replicas"}},
		{"stalled beats a known kind", `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: app}
status:
  conditions:
  - {type: Ready, status: "False", reason: InstallFailed, message: install retries exhausted}
  - {type: Stalled, status: "True", reason: RetriesExceeded, message: Failed to install after 3 attempts}
`, Status{State: Failed, Message: "stalled: RetriesExceeded: Failed to install after 3 attempts"}},
		// known kinds
		{"cert-manager certificate ready", `
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: tls, generation: 1}
status:
  conditions:
  - {type: Ready, status: "True", reason: Ready, message: Certificate is up to date and has not expired, observedGeneration: 1}
`, Status{State: Ready, Message: "Ready=True (Ready): Certificate is up to date and has not expired"}},
		{"cert-manager failure reason still waits", `
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: tls}
status:
  conditions:
  - {type: Ready, status: "False", reason: Failed, message: The certificate request has failed to complete and will be retried}
`, Status{State: Waiting, Message: "Ready=False (Failed): The certificate request has failed to complete and will be retried"}},
		{"cert-manager condition for an older generation", `
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: tls, generation: 2}
status:
  conditions:
  - {type: Ready, status: "True", reason: Ready, observedGeneration: 1}
`, Status{State: Waiting, Message: "waiting for condition Ready to observe generation 2 (seen 1)"}},
		{"cluster issuer not ready", `
apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: letsencrypt}
status:
  conditions:
  - {type: Ready, status: "Unknown"}
`, Status{State: Waiting, Message: "Ready=Unknown"}},
		{"flux helmrelease installing", `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: app}
status:
  conditions:
  - {type: Ready, status: "Unknown", reason: Progressing, message: Running 'install' action}
`, Status{State: Waiting, Message: "Ready=Unknown (Progressing): Running 'install' action"}},
		{"flux kustomization failed attempt is not final", `
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps}
status:
  conditions:
  - {type: Ready, status: "False", reason: ReconciliationFailed, message: kustomize build failed}
`, Status{State: Waiting, Message: "Ready=False (ReconciliationFailed): kustomize build failed"}},
		{"flux gitrepository ready", `
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: repo}
status:
  conditions:
  - {type: Ready, status: "True", reason: Succeeded, message: stored artifact for revision 'main@sha1:abc'}
`, Status{State: Ready, Message: "Ready=True (Succeeded): stored artifact for revision 'main@sha1:abc'"}},
		{"argo application healthy", `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: guestbook}
status: {health: {status: Healthy}, sync: {status: Synced}}
`, Status{State: Ready, Message: "status.health.status: Healthy"}},
		{"argo application degraded", `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: guestbook}
status: {health: {status: Degraded}}
`, Status{State: Failed, Message: "status.health.status: Degraded"}},
		{"argo application progressing", `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: guestbook}
status: {health: {status: Progressing}}
`, Status{State: Waiting, Message: "status.health.status: Progressing"}},
		{"argo application missing", `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: guestbook}
status: {health: {status: Missing}}
`, Status{State: Waiting, Message: "status.health.status: Missing"}},
		{"external secret failed to sync", `
apiVersion: external-secrets.io/v1beta1
kind: ExternalSecret
metadata: {name: db}
status:
  conditions:
  - {type: Ready, status: "False", reason: SecretSyncedError, message: could not get secret data from provider}
`, Status{State: Failed, Message: "Ready=False (SecretSyncedError): could not get secret data from provider"}},
		{"external secret synced", `
apiVersion: external-secrets.io/v1beta1
kind: ExternalSecret
metadata: {name: db}
status:
  conditions:
  - {type: Ready, status: "True", reason: SecretSynced, message: Secret was synced}
`, Status{State: Ready, Message: "Ready=True (SecretSynced): Secret was synced"}},
		{"sealed secret not synced waits", `
apiVersion: bitnami.com/v1alpha1
kind: SealedSecret
metadata: {name: creds}
status:
  conditions:
  - {type: Synced, status: "False", message: no key could decrypt secret}
`, Status{State: Waiting, Message: "Synced=False: no key could decrypt secret"}},
		{"sealed secret synced", `
apiVersion: bitnami.com/v1alpha1
kind: SealedSecret
metadata: {name: creds}
status:
  conditions:
  - {type: Synced, status: "True"}
`, Status{State: Ready, Message: "Synced=True"}},
		{"prometheus degraded", `
apiVersion: monitoring.coreos.com/v1
kind: Prometheus
metadata: {name: k8s}
status:
  conditions:
  - {type: Available, status: Degraded, reason: SomePodsNotReady}
  - {type: Reconciled, status: "True"}
`, Status{State: Waiting, Message: "Available=Degraded (SomePodsNotReady)"}},
		{"prometheus available", `
apiVersion: monitoring.coreos.com/v1
kind: Prometheus
metadata: {name: k8s}
status:
  conditions:
  - {type: Available, status: "True"}
`, Status{State: Ready, Message: "Available=True"}},
		{"apiservice discovery failing waits", `
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io}
status:
  conditions:
  - {type: Available, status: "False", reason: FailedDiscoveryCheck, message: failing or missing response}
`, Status{State: Waiting, Message: "Available=False (FailedDiscoveryCheck): failing or missing response"}},
		{"known kind matched case-insensitively on a field", `
apiVersion: acid.zalan.do/v1
kind: Postgresql
metadata: {name: db}
status: {PostgresClusterStatus: SyncFailed}
`, Status{State: Failed, Message: "status.PostgresClusterStatus: SyncFailed"}},
		{"known kind without its condition falls through", `
apiVersion: bitnami.com/v1alpha1
kind: SealedSecret
metadata: {name: creds, creationTimestamp: "2025-01-02T03:00:00Z"}
status: {observedGeneration: 1}
`, Status{State: Ready, Message: "exists"}},
		// universal conditions
		{"ready true", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
status:
  conditions:
  - {type: Ready, status: "True", reason: Reconciled}
`, Status{State: Ready, Message: "Ready=True (Reconciled)"}},
		{"condition type and status case-insensitive", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
status:
  conditions:
  - {type: READY, status: "true"}
`, Status{State: Ready, Message: "READY=true"}},
		{"snake and kebab condition types", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
status:
  conditions:
  - {type: is_ready, status: "False"}
  - {type: Succeeded, status: "True"}
`, Status{State: Ready, Message: "Succeeded=True"}},
		{"ready has priority over available", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
status:
  conditions:
  - {type: Available, status: "True"}
  - {type: Initialized, status: "True"}
  - {type: Ready, status: "False", reason: WaitingForBackend, message: 0/2 backends up}
`, Status{State: Waiting, Message: "Ready=False (WaitingForBackend): 0/2 backends up"}},
		{"ready unknown", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
status:
  conditions:
  - {type: Ready, status: Unknown, reason: ProvisioningFailed}
`, Status{State: Waiting, Message: "Ready=Unknown (ProvisioningFailed)"}},
		{"false with a failure reason fails", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
status:
  conditions:
  - {type: Available, status: "False", reason: ProvisioningFailed, message: quota exceeded}
`, Status{State: Failed, Message: "Available=False (ProvisioningFailed): quota exceeded"}},
		{"false with an error reason fails", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
status:
  conditions:
  - {type: healthy, status: "False", reason: ErrorConnecting}
`, Status{State: Failed, Message: "healthy=False (ErrorConnecting)"}},
		{"condition for an older generation waits", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, generation: 4}
status:
  conditions:
  - {type: Ready, status: "True", observedGeneration: 3}
`, Status{State: Waiting, Message: "waiting for condition Ready to observe generation 4 (seen 3)"}},
		{"unrelated conditions fall through", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
status:
  conditions:
  - {type: DisruptionAllowed, status: "False", reason: InsufficientPods}
`, Status{State: Ready, Message: "exists"}},
		// status words
		{"phase running", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
status: {phase: Running}
`, Status{State: Ready, Message: "phase: Running"}},
		{"phase pending", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
status: {phase: Pending, message: waiting for a node}
`, Status{State: Waiting, Message: "phase: Pending: waiting for a node"}},
		{"phase failed", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
status: {phase: Failed, message: image not found}
`, Status{State: Failed, Message: "phase: Failed: image not found"}},
		{"state in kebab case", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
status: {state: in-progress}
`, Status{State: Waiting, Message: "state: in-progress"}},
		{"current state upper case", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
status: {currentState: ERRORED}
`, Status{State: Failed, Message: "currentState: ERRORED"}},
		{"status rejected", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
status: {status: Rejected}
`, Status{State: Failed, Message: "status: Rejected"}},
		{"health green", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
status: {health: green}
`, Status{State: Ready, Message: "health: green"}},
		{"terminated fails", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
status: {currentPhase: Terminated}
`, Status{State: Failed, Message: "currentPhase: Terminated"}},
		{"unknown word falls to the next field", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
status: {phase: Sleeping, state: aborted}
`, Status{State: Failed, Message: "state: aborted"}},
		{"non-string status field is ignored", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
status: {health: {status: Healthy}, state: 3}
`, Status{State: Ready, Message: "exists"}},
		{"conditions before words", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
status:
  phase: Failed
  conditions: [{type: Ready, status: "True"}]
`, Status{State: Ready, Message: "Ready=True"}},
		{"namespace active", `
apiVersion: v1
kind: Namespace
metadata: {name: app, creationTimestamp: "2025-01-02T03:04:04Z"}
status: {phase: Active}
`, Status{State: Ready, Message: "phase: Active"}},
		{"namespace terminating", `
apiVersion: v1
kind: Namespace
metadata: {name: app}
status: {phase: Terminating}
`, Status{State: Waiting, Message: "phase: Terminating"}},
		{"unmatched phase exists", `
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-1}
status: {phase: Released}
`, Status{State: Ready, Message: "exists"}},
		// no status
		{"young custom resource without status", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, creationTimestamp: "2025-01-02T03:04:03Z"}
spec: {size: 1}
`, Status{State: Waiting, Message: "waiting for a controller to report status"}},
		{"young custom resource with an empty status", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, creationTimestamp: "2025-01-02T03:04:03Z"}
status: {}
`, Status{State: Waiting, Message: "waiting for a controller to report status"}},
		{"custom resource without status after the grace", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, creationTimestamp: "2025-01-02T03:04:00Z"}
`, Status{State: Ready, Message: "exists"}},
		{"custom resource created far in the future (clock skew)", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, creationTimestamp: "2025-01-02T03:05:05Z"}
`, Status{State: Ready, Message: "exists"}},
		{"custom resource without a creation time", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
`, Status{State: Ready, Message: "exists"}},
		{"young configmap has no grace", `
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, creationTimestamp: "2025-01-02T03:04:05Z"}
data: {key: value}
`, Status{State: Ready, Message: "exists"}},
		{"young rbac Role has no grace", `
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: r, creationTimestamp: "2025-01-02T03:04:05Z"}
rules: []
`, Status{State: Ready, Message: "exists"}},
		{"secret data is never shown", `
apiVersion: v1
kind: Secret
metadata: {name: creds, creationTimestamp: "2025-01-02T03:04:05Z"}
stringData: {status: failed}
data: {password: c2VjcmV0}
`, Status{State: Ready, Message: "exists"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ComputeAt(mustObj(t, tt.obj), now)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ComputeAt (-want +got):\n%s", diff)
			}
		})
	}
}

// TestComputeAtGraceEnds checks that the same object without status turns from Waiting to Ready
// once NoStatusGrace has passed, without any change to the object.
func TestComputeAtGraceEnds(t *testing.T) {
	obj := mustObj(t, `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, creationTimestamp: "2025-01-02T03:04:05Z"}
`)
	created := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tt := range []struct {
		after time.Duration
		want  State
	}{
		{0, Waiting},
		{NoStatusGrace - time.Second, Waiting},
		{NoStatusGrace, Ready},
		{time.Hour, Ready},
	} {
		if got := ComputeAt(obj, created.Add(tt.after)).State; got != tt.want {
			t.Errorf("%s after creation: %s, want %s", tt.after, got, tt.want)
		}
	}
}

// TestComputeForAtStatusless checks that an object without status of a kind served without a
// status subresource is Ready at once (no grace: no controller reports through one), while
// one whose kind has a status subresource waits for the grace, and a status, once there,
// decides either way.
func TestComputeForAtStatusless(t *testing.T) {
	created := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	bare := mustObj(t, `
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata: {name: r, creationTimestamp: "2025-01-02T03:04:05Z"}
spec: {groups: []}
`)
	failing := mustObj(t, `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, creationTimestamp: "2025-01-02T03:04:05Z"}
status: {phase: Failed}
`)
	for _, tt := range []struct {
		name       string
		obj        *unstructured.Unstructured
		statusless bool
		want       State
	}{
		{"no status subresource, no status", bare, true, Ready},
		{"status subresource, no status yet", bare, false, Waiting},
		{"no status subresource, a status all the same", failing, true, Failed},
	} {
		if got := ComputeForAt(tt.obj, created, tt.statusless).State; got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
}
