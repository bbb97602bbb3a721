package readiness

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// deploymentStatus: Failed when the Progressing condition says ProgressDeadlineExceeded;
// Ready when the current generation is observed, all replicas are updated and available and no
// old replicas remain (kubectl rollout status).
func deploymentStatus(obj *unstructured.Unstructured) Status {
	if st, ok := observed(obj); !ok {
		return st
	}
	o := obj.Object
	desired := desiredReplicas(obj)
	updated, total, available := count(o, "status", "updatedReplicas"), count(o, "status", "replicas"), count(o, "status", "availableReplicas")
	st := Status{State: Waiting, Ready: available, Desired: desired}
	if c, ok := findCondition(o, "Progressing"); ok && c.Reason == "ProgressDeadlineExceeded" {
		st.State, st.Message = Failed, withDetail("progress deadline exceeded", c.Message)
		return st
	}
	switch {
	case updated < desired:
		st.Message = fmt.Sprintf("%d/%d replicas updated", updated, desired)
	case total > updated:
		st.Message = fmt.Sprintf("%d old replicas pending termination", total-updated)
	case available < updated || available < desired:
		st.Message = fmt.Sprintf("%d/%d replicas available", available, desired)
	default:
		st.State, st.Message = Ready, fmt.Sprintf("%d/%d replicas available", available, desired)
	}
	return st
}

// statefulSetStatus: Ready when the generation is observed and all replicas are ready, and the
// update is done: with OnDelete nothing more; with RollingUpdate and a partition, the replicas
// at or above the partition are updated; without one, currentRevision equals updateRevision.
func statefulSetStatus(obj *unstructured.Unstructured) Status {
	if st, ok := observed(obj); !ok {
		return st
	}
	o := obj.Object
	desired := desiredReplicas(obj)
	ready, updated := count(o, "status", "readyReplicas"), count(o, "status", "updatedReplicas")
	st := Status{State: Waiting, Ready: ready, Desired: desired}
	if ready < desired {
		st.Message = fmt.Sprintf("%d/%d replicas ready", ready, desired)
		return st
	}
	if str(o, "spec", "updateStrategy", "type") != "OnDelete" {
		partition, _ := num(o, "spec", "updateStrategy", "rollingUpdate", "partition")
		if partition > 0 {
			if want := desired - int32(partition); updated < want {
				st.Message = fmt.Sprintf("%d/%d replicas updated (partition %d)", updated, want, partition)
				return st
			}
		} else if cur, upd := str(o, "status", "currentRevision"), str(o, "status", "updateRevision"); cur != upd {
			st.Message = fmt.Sprintf("%d/%d replicas updated to revision %s", updated, desired, upd)
			return st
		}
	}
	st.State, st.Message = Ready, fmt.Sprintf("%d/%d replicas ready", ready, desired)
	return st
}

// daemonSetStatus: Ready when the generation is observed and every scheduled pod is updated
// (not checked with OnDelete), ready and available.
func daemonSetStatus(obj *unstructured.Unstructured) Status {
	if st, ok := observed(obj); !ok {
		return st
	}
	o := obj.Object
	desired := count(o, "status", "desiredNumberScheduled")
	updated, ready, available := count(o, "status", "updatedNumberScheduled"), count(o, "status", "numberReady"), count(o, "status", "numberAvailable")
	st := Status{State: Waiting, Ready: ready, Desired: desired}
	switch {
	case str(o, "spec", "updateStrategy", "type") != "OnDelete" && updated < desired:
		st.Message = fmt.Sprintf("%d/%d pods updated", updated, desired)
	case ready < desired:
		st.Message = fmt.Sprintf("%d/%d pods ready", ready, desired)
	case available < desired:
		st.Message = fmt.Sprintf("%d/%d pods available", available, desired)
	default:
		st.State, st.Message = Ready, fmt.Sprintf("%d/%d pods ready", ready, desired)
	}
	return st
}

// replicaSetStatus: Ready when the generation is observed and all replicas are available; a
// ReplicaFailure condition (e.g. quota exceeded) is shown while waiting.
func replicaSetStatus(obj *unstructured.Unstructured) Status {
	if st, ok := observed(obj); !ok {
		return st
	}
	o := obj.Object
	desired := desiredReplicas(obj)
	available := count(o, "status", "availableReplicas")
	st := Status{State: Waiting, Ready: available, Desired: desired, Message: fmt.Sprintf("%d/%d replicas available", available, desired)}
	if available >= desired {
		st.State = Ready
		return st
	}
	if c, ok := conditionTrue(o, "ReplicaFailure"); ok {
		st.Message += "; " + withDetail(c.Reason, c.Message)
	}
	return st
}

// jobStatus: Ready on condition Complete, Failed on condition Failed (or FailureTarget, which
// precedes it) with the condition's reason and message; otherwise Waiting with pod counts.
func jobStatus(obj *unstructured.Unstructured) Status {
	o := obj.Object
	desired := int32(1)
	if n, ok := num(o, "spec", "completions"); ok {
		desired = int32(n)
	}
	succeeded := count(o, "status", "succeeded")
	st := Status{State: Waiting, Ready: succeeded, Desired: desired}
	for _, typ := range []string{"Failed", "FailureTarget"} {
		if c, ok := conditionTrue(o, typ); ok {
			st.State, st.Message = Failed, withDetail("job failed: "+c.Reason, c.Message)
			return st
		}
	}
	if _, ok := conditionTrue(o, "Complete"); ok {
		st.State, st.Message = Ready, fmt.Sprintf("completed (%d/%d succeeded)", succeeded, desired)
		return st
	}
	if suspended, _, _ := unstructured.NestedBool(o, "spec", "suspend"); suspended {
		st.Message = "suspended"
		return st
	}
	st.Message = fmt.Sprintf("%d active, %d/%d succeeded, %d failed", count(o, "status", "active"), succeeded, desired, count(o, "status", "failed"))
	return st
}
