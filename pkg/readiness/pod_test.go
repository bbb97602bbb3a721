package readiness

import (
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// ownedBy indexes objs by controller UID, as Track's informer index does.
func ownedBy(objs ...*unstructured.Unstructured) Owned {
	idx := map[types.UID][]*unstructured.Unstructured{}
	for _, o := range objs {
		if uid := ControllerUID(o); uid != "" {
			idx[uid] = append(idx[uid], o)
		}
	}
	return func(uid types.UID) []*unstructured.Unstructured { return idx[uid] }
}

const deployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  uid: d1
  generation: 2
  annotations: {deployment.kubernetes.io/revision: "2"}
spec: {replicas: 1}
status: {observedGeneration: 2, replicas: 2, updatedReplicas: 1, availableReplicas: 0}
`

var (
	rsOld = `
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web-old
  uid: rs1
  annotations: {deployment.kubernetes.io/revision: "1"}
  ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: web, uid: d1, controller: true}]
`
	rsNew = `
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web-new
  uid: rs2
  annotations: {deployment.kubernetes.io/revision: "2"}
  ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: web, uid: d1, controller: true}]
`
	podOldCrashing = `
apiVersion: v1
kind: Pod
metadata:
  name: web-old-a
  uid: p1
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-old, uid: rs1, controller: true}]
spec: {containers: [{name: app}]}
status:
  phase: Running
  containerStatuses: [{name: app, state: {waiting: {reason: CrashLoopBackOff}}}]
`
	podNewPending = `
apiVersion: v1
kind: Pod
metadata:
  name: web-new-b
  uid: p2
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-new, uid: rs2, controller: true}]
spec: {containers: [{name: app}]}
status:
  phase: Pending
  containerStatuses: [{name: app, state: {waiting: {reason: ContainerCreating}}}]
`
	podNewPulling = `
apiVersion: v1
kind: Pod
metadata:
  name: web-new-c
  uid: p3
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-new, uid: rs2, controller: true}]
spec: {containers: [{name: app}]}
status:
  phase: Pending
  containerStatuses: [{name: app, state: {waiting: {reason: ErrImagePull, message: not found}}}]
`
	podNewTerminating = `
apiVersion: v1
kind: Pod
metadata:
  name: web-new-d
  uid: p4
  deletionTimestamp: "2025-01-01T00:00:00Z"
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-new, uid: rs2, controller: true}]
spec: {containers: [{name: app}]}
status:
  phase: Running
  containerStatuses: [{name: app, state: {waiting: {reason: CrashLoopBackOff}}}]
`
	podOfOther = `
apiVersion: v1
kind: Pod
metadata:
  name: other-x
  uid: p5
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: other, uid: rs9, controller: true}]
spec: {containers: [{name: app}]}
`
)

func TestPodsOf(t *testing.T) {
	all := []string{rsOld, rsNew, podOldCrashing, podNewPending, podNewPulling, podNewTerminating, podOfOther}
	var objs []*unstructured.Unstructured
	for _, s := range all {
		objs = append(objs, mustObj(t, s))
	}
	tests := []struct {
		name     string
		workload string
		want     []string
	}{
		{"deployment: live pods of the current revision's ReplicaSet", deployment, []string{"web-new-b", "web-new-c"}},
		{"deployment without revision: pods of all its ReplicaSets", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, uid: d1}
`, []string{"web-new-b", "web-new-c", "web-old-a"}},
		{"replicaset: its own pods", `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-old, uid: rs1}
`, []string{"web-old-a"}},
		{"configmap has no pods", `
apiVersion: v1
kind: ConfigMap
metadata: {name: web, uid: rs1}
`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, p := range PodsOf(mustObj(t, tt.workload), ownedBy(objs...)) {
				got = append(got, p.GetName())
			}
			sort.Strings(got)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("PodsOf (-want +got):\n%s", diff)
			}
		})
	}
}

func TestComputeWithPods(t *testing.T) {
	readyDeployment := `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, uid: d1, generation: 1}
spec: {replicas: 1}
status: {observedGeneration: 1, replicas: 1, updatedReplicas: 1, availableReplicas: 1}
`
	tests := []struct {
		name     string
		workload string
		pods     []string
		want     Status
	}{
		{"a failing pod is named first; it does not fail the workload (Track counts it as an error)", deployment,
			[]string{podNewPending, podNewPulling},
			Status{State: Waiting, Desired: 1, Message: "1 old replicas pending termination; pod web-new-c: container app: ErrImagePull: not found"}},
		{"the first pod not ready is named while waiting", deployment,
			[]string{podNewPending},
			Status{State: Waiting, Desired: 1, Message: "1 old replicas pending termination; pod web-new-b: container app: ContainerCreating"}},
		{"no pods: the workload's status alone", deployment, nil,
			Status{State: Waiting, Desired: 1, Message: "1 old replicas pending termination"}},
		{"a ready workload stays ready whatever its pods say", readyDeployment,
			[]string{podOldCrashing},
			Status{State: Ready, Ready: 1, Desired: 1, Message: "1/1 replicas available"}},
		{"a failed pod phase does not fail a job (it retries)", `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, uid: j1}
status: {active: 1, failed: 1}
`, []string{`
apiVersion: v1
kind: Pod
metadata: {name: migrate-a}
spec: {containers: [{name: app}]}
status: {phase: Failed}
`},
			Status{State: Waiting, Desired: 1, Message: "1 active, 0/1 succeeded, 1 failed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pods []*unstructured.Unstructured
			for _, p := range tt.pods {
				pods = append(pods, mustObj(t, p))
			}
			got := computeWithPods(mustObj(t, tt.workload), pods)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ComputeWithPods (-want +got):\n%s", diff)
			}
		})
	}
}
