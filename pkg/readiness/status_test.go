package readiness

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// mustObj decodes a YAML literal the way the dynamic client decodes JSON (integers as int64).
func mustObj(t testing.TB, doc string) *unstructured.Unstructured {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatalf("test object: %v", err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		t.Fatalf("test object: %v", err)
	}
	return u
}

func TestCompute(t *testing.T) {
	tests := []struct {
		name string
		obj  string
		want Status
	}{
		// Deployment
		{"deployment without status", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, generation: 1}
spec: {replicas: 2}
`, Status{State: Waiting, Message: "waiting for the controller to observe the object"}},
		{"deployment generation not observed", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, generation: 3}
spec: {replicas: 2}
status: {observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 2}
`, Status{State: Waiting, Message: "waiting for the controller to observe generation 3 (seen 2)"}},
		{"deployment rolling out", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, generation: 2}
spec: {replicas: 3}
status: {observedGeneration: 2, replicas: 4, updatedReplicas: 1, availableReplicas: 3}
`, Status{State: Waiting, Ready: 3, Desired: 3, Message: "1/3 replicas updated"}},
		{"deployment old replicas terminating", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, generation: 2}
spec: {replicas: 3}
status: {observedGeneration: 2, replicas: 4, updatedReplicas: 3, availableReplicas: 3}
`, Status{State: Waiting, Ready: 3, Desired: 3, Message: "1 old replicas pending termination"}},
		{"deployment not all available", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, generation: 1}
spec: {replicas: 2}
status: {observedGeneration: 1, replicas: 2, updatedReplicas: 2, availableReplicas: 1}
`, Status{State: Waiting, Ready: 1, Desired: 2, Message: "1/2 replicas available"}},
		{"deployment ready", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, generation: 4}
spec: {replicas: 2}
status: {observedGeneration: 4, replicas: 2, updatedReplicas: 2, availableReplicas: 2, readyReplicas: 2}
`, Status{State: Ready, Ready: 2, Desired: 2, Message: "2/2 replicas available"}},
		{"deployment replicas default to 1", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, generation: 1}
status: {observedGeneration: 1, replicas: 1, updatedReplicas: 1, availableReplicas: 1}
`, Status{State: Ready, Ready: 1, Desired: 1, Message: "1/1 replicas available"}},
		{"deployment scaled to zero", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, generation: 2}
spec: {replicas: 0}
status: {observedGeneration: 2}
`, Status{State: Ready, Message: "0/0 replicas available"}},
		{"deployment progress deadline exceeded", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, generation: 1}
spec: {replicas: 2}
status:
  observedGeneration: 1
  replicas: 2
  updatedReplicas: 2
  conditions:
  - {type: Progressing, status: "False", reason: ProgressDeadlineExceeded, message: ReplicaSet "web-5d8" has timed out progressing.}
`, Status{State: Failed, Desired: 2, Message: `progress deadline exceeded: ReplicaSet "web-5d8" has timed out progressing.`}},
		// StatefulSet
		{"statefulset without status", `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, generation: 1}
spec: {replicas: 3}
`, Status{State: Waiting, Message: "waiting for the controller to observe the object"}},
		{"statefulset replicas not ready", `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, generation: 1}
spec: {replicas: 3}
status: {observedGeneration: 1, replicas: 3, readyReplicas: 1, currentRevision: db-1, updateRevision: db-1}
`, Status{State: Waiting, Ready: 1, Desired: 3, Message: "1/3 replicas ready"}},
		{"statefulset rolling update in progress", `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, generation: 2}
spec: {replicas: 3}
status: {observedGeneration: 2, replicas: 3, readyReplicas: 3, updatedReplicas: 1, currentRevision: db-1, updateRevision: db-2}
`, Status{State: Waiting, Ready: 3, Desired: 3, Message: "1/3 replicas updated to revision db-2"}},
		{"statefulset rolling update done", `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, generation: 2}
spec: {replicas: 3, updateStrategy: {type: RollingUpdate}}
status: {observedGeneration: 2, replicas: 3, readyReplicas: 3, updatedReplicas: 3, currentRevision: db-2, updateRevision: db-2}
`, Status{State: Ready, Ready: 3, Desired: 3, Message: "3/3 replicas ready"}},
		{"statefulset partition waiting", `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, generation: 2}
spec: {replicas: 4, updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 2}}}
status: {observedGeneration: 2, replicas: 4, readyReplicas: 4, updatedReplicas: 1, currentRevision: db-1, updateRevision: db-2}
`, Status{State: Waiting, Ready: 4, Desired: 4, Message: "1/2 replicas updated (partition 2)"}},
		{"statefulset partition reached", `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, generation: 2}
spec: {replicas: 4, updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 2}}}
status: {observedGeneration: 2, replicas: 4, readyReplicas: 4, updatedReplicas: 2, currentRevision: db-1, updateRevision: db-2}
`, Status{State: Ready, Ready: 4, Desired: 4, Message: "4/4 replicas ready"}},
		{"statefulset OnDelete ready with old revision", `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, generation: 2}
spec: {replicas: 2, updateStrategy: {type: OnDelete}}
status: {observedGeneration: 2, replicas: 2, readyReplicas: 2, currentRevision: db-1, updateRevision: db-2}
`, Status{State: Ready, Ready: 2, Desired: 2, Message: "2/2 replicas ready"}},
		// DaemonSet
		{"daemonset without status", `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, generation: 1}
`, Status{State: Waiting, Message: "waiting for the controller to observe the object"}},
		{"daemonset updating", `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, generation: 2}
status: {observedGeneration: 2, desiredNumberScheduled: 3, updatedNumberScheduled: 1, numberReady: 3, numberAvailable: 3}
`, Status{State: Waiting, Ready: 3, Desired: 3, Message: "1/3 pods updated"}},
		{"daemonset not ready", `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, generation: 1}
status: {observedGeneration: 1, desiredNumberScheduled: 3, updatedNumberScheduled: 3, numberReady: 2}
`, Status{State: Waiting, Ready: 2, Desired: 3, Message: "2/3 pods ready"}},
		{"daemonset ready", `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, generation: 1}
status: {observedGeneration: 1, desiredNumberScheduled: 3, updatedNumberScheduled: 3, numberReady: 3, numberAvailable: 3}
`, Status{State: Ready, Ready: 3, Desired: 3, Message: "3/3 pods ready"}},
		{"daemonset OnDelete ignores updated count", `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, generation: 2}
spec: {updateStrategy: {type: OnDelete}}
status: {observedGeneration: 2, desiredNumberScheduled: 1, numberReady: 1, numberAvailable: 1}
`, Status{State: Ready, Ready: 1, Desired: 1, Message: "1/1 pods ready"}},
		// ReplicaSet
		{"replicaset waiting with replica failure", `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-5d8, generation: 1}
spec: {replicas: 2}
status:
  observedGeneration: 1
  replicas: 0
  conditions:
  - {type: ReplicaFailure, status: "True", reason: FailedCreate, message: 'pods "web-5d8-x" is forbidden: exceeded quota'}
`, Status{State: Waiting, Desired: 2, Message: `0/2 replicas available; FailedCreate: pods "web-5d8-x" is forbidden: exceeded quota`}},
		{"replicaset ready", `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-5d8, generation: 1}
spec: {replicas: 2}
status: {observedGeneration: 1, replicas: 2, readyReplicas: 2, availableReplicas: 2}
`, Status{State: Ready, Ready: 2, Desired: 2, Message: "2/2 replicas available"}},
		// Job
		{"job just created", `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
status: {}
`, Status{State: Waiting, Desired: 1, Message: "0 active, 0/1 succeeded, 0 failed"}},
		{"job running", `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec: {completions: 3}
status: {active: 1, succeeded: 1, failed: 1}
`, Status{State: Waiting, Ready: 1, Desired: 3, Message: "1 active, 1/3 succeeded, 1 failed"}},
		{"job complete", `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
status:
  succeeded: 1
  conditions:
  - {type: SuccessCriteriaMet, status: "True"}
  - {type: Complete, status: "True"}
`, Status{State: Ready, Ready: 1, Desired: 1, Message: "completed (1/1 succeeded)"}},
		{"job failed", `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
status:
  failed: 7
  conditions:
  - {type: Failed, status: "True", reason: BackoffLimitExceeded, message: Job has reached the specified backoff limit}
`, Status{State: Failed, Desired: 1, Message: "job failed: BackoffLimitExceeded: Job has reached the specified backoff limit"}},
		{"job suspended", `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec: {suspend: true}
status:
  conditions:
  - {type: Suspended, status: "True"}
`, Status{State: Waiting, Desired: 1, Message: "suspended"}},
		// Pod
		{"pod not scheduled yet", `
apiVersion: v1
kind: Pod
metadata: {name: web-x}
spec: {containers: [{name: app, image: nginx}]}
`, Status{State: Waiting, Desired: 1, Message: "waiting to be scheduled"}},
		{"pod unschedulable", `
apiVersion: v1
kind: Pod
metadata: {name: web-x}
spec: {containers: [{name: app, image: nginx}]}
status:
  phase: Pending
  conditions:
  - {type: PodScheduled, status: "False", reason: Unschedulable, message: 0/1 nodes are available}
`, Status{State: Waiting, Desired: 1, Message: "not scheduled: Unschedulable: 0/1 nodes are available"}},
		{"pod container creating", `
apiVersion: v1
kind: Pod
metadata: {name: web-x}
spec: {containers: [{name: app, image: nginx}]}
status:
  phase: Pending
  containerStatuses:
  - {name: app, ready: false, state: {waiting: {reason: ContainerCreating}}}
`, Status{State: Waiting, Desired: 1, Message: "container app: ContainerCreating"}},
		{"pod running not ready", `
apiVersion: v1
kind: Pod
metadata: {name: web-x}
spec: {containers: [{name: app, image: nginx}, {name: sidecar, image: envoy}]}
status:
  phase: Running
  conditions:
  - {type: Ready, status: "False", reason: ContainersNotReady}
  containerStatuses:
  - {name: app, ready: false, started: true, state: {running: {}}}
  - {name: sidecar, ready: true, state: {running: {}}}
`, Status{State: Waiting, Ready: 1, Desired: 2, Message: "1/2 containers ready"}},
		{"pod ready", `
apiVersion: v1
kind: Pod
metadata: {name: web-x}
spec: {containers: [{name: app, image: nginx}]}
status:
  phase: Running
  conditions:
  - {type: Ready, status: "True"}
  containerStatuses:
  - {name: app, ready: true, state: {running: {}}}
`, Status{State: Ready, Ready: 1, Desired: 1, Message: "1/1 containers ready"}},
		{"pod succeeded", `
apiVersion: v1
kind: Pod
metadata: {name: hook}
spec: {containers: [{name: app, image: busybox}]}
status: {phase: Succeeded}
`, Status{State: Ready, Desired: 1, Message: "succeeded"}},
		{"pod failed", `
apiVersion: v1
kind: Pod
metadata: {name: hook}
spec: {containers: [{name: app, image: busybox}]}
status: {phase: Failed, reason: Evicted, message: The node was low on resource memory.}
`, Status{State: Failed, Desired: 1, Message: "pod failed: Evicted The node was low on resource memory."}},
		{"pod crash loop", `
apiVersion: v1
kind: Pod
metadata: {name: web-x}
spec: {containers: [{name: app, image: nginx}]}
status:
  phase: Running
  containerStatuses:
  - name: app
    ready: false
    restartCount: 5
    state: {waiting: {reason: CrashLoopBackOff, message: back-off 5m0s restarting failed container=app}}
`, Status{State: Failed, Desired: 1, Message: "container app: CrashLoopBackOff: back-off 5m0s restarting failed container=app"}},
		{"pod image pull back-off", `
apiVersion: v1
kind: Pod
metadata: {name: web-x}
spec: {containers: [{name: app, image: nginx:nope}]}
status:
  phase: Pending
  containerStatuses:
  - {name: app, ready: false, state: {waiting: {reason: ImagePullBackOff}}}
`, Status{State: Failed, Desired: 1, Message: "container app: ImagePullBackOff"}},
		{"pod init container config error", `
apiVersion: v1
kind: Pod
metadata: {name: web-x}
spec: {containers: [{name: app, image: nginx}], initContainers: [{name: init, image: busybox}]}
status:
  phase: Pending
  initContainerStatuses:
  - {name: init, ready: false, state: {waiting: {reason: CreateContainerConfigError, message: secret "db" not found}}}
`, Status{State: Failed, Desired: 1, Message: `container init: CreateContainerConfigError: secret "db" not found`}},
		// everything else
		{"configmap exists", `
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
`, Status{State: Ready, Message: "exists"}},
		{"custom resource named like a workload is generic", `
apiVersion: example.com/v1
kind: Deployment
metadata: {name: web, generation: 5}
status: {observedGeneration: 5}
`, Status{State: Ready, Message: "exists"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := compute(mustObj(t, tt.obj))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Compute (-want +got):\n%s", diff)
			}
		})
	}
}

func TestComputeNil(t *testing.T) {
	if got, want := compute(nil), (Status{State: Waiting, Message: "not found"}); !got.Equal(want) {
		t.Errorf("compute(nil) = %+v, want %+v", got, want)
	}
}
