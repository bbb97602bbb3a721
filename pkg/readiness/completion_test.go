package readiness

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestPodCompletion(t *testing.T) {
	tests := []struct {
		phase string
		want  State
	}{
		{"", Waiting}, {"Pending", Waiting}, {"Running", Waiting}, {"Succeeded", Ready}, {"Failed", Failed},
	}
	for _, tt := range tests {
		pod := &unstructured.Unstructured{Object: map[string]any{"kind": "Pod", "status": map[string]any{"phase": tt.phase}}}
		if got := PodCompletion(pod); got.State != tt.want {
			t.Errorf("phase %q: %+v, want %s", tt.phase, got, tt.want)
		}
	}
}
