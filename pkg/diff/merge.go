package diff

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/sealane/sealane/pkg/apply"
)

// MergeLocally returns live with the chart's changes made locally, by the three-way merge of
// apply.ThreeWayPatch (lastApplied may be nil): what live would look like, field by field,
// if the apiserver accepted the change. It is for showing a recreation, whose update the
// apiserver refuses; it is not validated or defaulted by the apiserver. Errors quote no
// values.
func MergeLocally(lastApplied, target, live *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	patch, pt, err := apply.ThreeWayPatch(lastApplied, target, live)
	if err != nil {
		return nil, err
	}
	if patch == nil {
		return live.DeepCopy(), nil
	}
	cur := live.DeepCopy()
	cur.SetManagedFields(nil)
	current, err := json.Marshal(cur.Object)
	if err != nil {
		return nil, fmt.Errorf("encode live: %w", err)
	}
	var merged []byte
	switch pt {
	case types.StrategicMergePatchType:
		typed, err := scheme.Scheme.New(target.GroupVersionKind())
		if err != nil {
			return nil, fmt.Errorf("strategic merge schema of %s: %w", target.GroupVersionKind(), err)
		}
		if merged, err = strategicpatch.StrategicMergePatch(current, patch, typed); err != nil {
			return nil, &apply.PatchError{Step: "merge locally", Err: err}
		}
	default:
		var doc, p any
		if err := json.Unmarshal(current, &doc); err != nil {
			return nil, fmt.Errorf("decode live: %w", err)
		}
		if err := json.Unmarshal(patch, &p); err != nil {
			return nil, fmt.Errorf("decode patch: %w", err)
		}
		if merged, err = json.Marshal(apply.MergePatch(doc, p)); err != nil {
			return nil, fmt.Errorf("encode merged: %w", err)
		}
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(merged); err != nil {
		return nil, fmt.Errorf("decode merged object: %w", err)
	}
	return out, nil
}
