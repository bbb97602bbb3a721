package readiness

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// compute and computeWithPods judge as of the wall clock, for rules that do not depend on it.
func compute(obj *unstructured.Unstructured) Status { return ComputeAt(obj, time.Now()) }

func computeWithPods(obj *unstructured.Unstructured, pods []*unstructured.Unstructured) Status {
	return ComputeWithPodsAt(obj, pods, time.Now())
}
