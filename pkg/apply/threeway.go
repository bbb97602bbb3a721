package apply

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/jsonmergepatch"
	"k8s.io/apimachinery/pkg/util/mergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/scheme"
)

// ThreeWayPatch computes the patch that brings live to target under the "synchronized
// resource" rule of werf's three-way merge (and kubectl apply's): fields target sets are set to
// target's values (so manual edits of them are reverted), fields lastApplied set and target no
// longer sets are removed, and everything else live has — fields added by controllers,
// defaults, status — is left alone. lastApplied is the object as the previous release applied
// it (nil when there is none: then nothing is removed). Built-in kinds get a strategic merge
// patch (lists such as containers merge by their keys, so an injected sidecar stays); custom
// resources and unknown kinds get a JSON merge patch (lists are replaced whole). A nil patch
// means live is already in sync — the patch would change nothing — and no request is needed.
// Errors of the merge itself are *PatchError, whose message quotes no values.
//
// Null fields and status are dropped from lastApplied and target, and so are the server-set
// metadata fields; patches never touch status. The patch is built from the objects' data, so
// callers must not put it in errors or logs (it may hold Secret data).
func ThreeWayPatch(lastApplied, target, live *unstructured.Unstructured) ([]byte, types.PatchType, error) {
	modified, err := json.Marshal(forMerge(target, target).Object)
	if err != nil {
		return nil, "", fmt.Errorf("encode target: %w", err)
	}
	original := []byte(nil)
	if lastApplied != nil {
		if original, err = json.Marshal(forMerge(lastApplied, target).Object); err != nil {
			return nil, "", fmt.Errorf("encode last applied: %w", err)
		}
	}
	cur := live.DeepCopy()
	cur.SetManagedFields(nil)
	current, err := json.Marshal(cur.Object)
	if err != nil {
		return nil, "", fmt.Errorf("encode live: %w", err)
	}
	preconditions := []mergepatch.PreconditionFunc{
		mergepatch.RequireKeyUnchanged("apiVersion"),
		mergepatch.RequireKeyUnchanged("kind"),
		mergepatch.RequireMetadataKeyUnchanged("name"),
		mergepatch.RequireMetadataKeyUnchanged("namespace"),
	}
	var patch, result []byte
	var patchType types.PatchType
	if typed, err := scheme.Scheme.New(target.GroupVersionKind()); err == nil {
		meta, err := strategicpatch.NewPatchMetaFromStruct(typed)
		if err != nil {
			return nil, "", fmt.Errorf("strategic merge schema of %s: %w", target.GroupVersionKind(), err)
		}
		patchType = types.StrategicMergePatchType
		patch, err = strategicpatch.CreateThreeWayMergePatch(original, modified, current, meta, true, preconditions...)
		if err != nil {
			return nil, "", &PatchError{Step: "compute three-way strategic merge patch", Err: err}
		}
		if !isEmptyPatch(patch) {
			if result, err = strategicpatch.StrategicMergePatchUsingLookupPatchMeta(current, patch, meta); err != nil {
				return nil, "", &PatchError{Step: "check computed strategic merge patch", Err: err}
			}
		}
	} else {
		patchType = types.MergePatchType
		patch, err = jsonmergepatch.CreateThreeWayJSONMergePatch(original, modified, current, preconditions...)
		if err != nil {
			return nil, "", &PatchError{Step: "compute three-way JSON merge patch", Err: err}
		}
		if !isEmptyPatch(patch) {
			if result, err = mergePatchJSON(current, patch); err != nil {
				return nil, "", &PatchError{Step: "check computed JSON merge patch", Err: err}
			}
		}
	}
	if result == nil || sameJSON(current, result) {
		return nil, patchType, nil
	}
	return patch, patchType, nil
}

// forMerge returns a copy of obj ready for a three-way merge towards target: nulls, status and
// server-set metadata dropped, apiVersion, kind, name and namespace those of target (a previous
// release may have named the object with an older apiVersion or no namespace).
func forMerge(obj, target *unstructured.Unstructured) *unstructured.Unstructured {
	out := PrepareForApply(obj.DeepCopy())
	delete(out.Object, "status")
	if md, ok := out.Object["metadata"].(map[string]any); ok {
		for _, k := range []string{"generation", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"} {
			delete(md, k)
		}
	}
	secretStringData(out)
	out.SetAPIVersion(target.GetAPIVersion())
	out.SetKind(target.GetKind())
	out.SetName(target.GetName())
	out.SetNamespace(target.GetNamespace())
	return out
}

// secretStringData moves a v1 Secret's stringData into data, base64-encoded, as the apiserver
// does when it stores the Secret (it never stores stringData). Without this a chart's
// stringData would be missing from every live Secret and patched again on every deploy.
func secretStringData(obj *unstructured.Unstructured) {
	if obj.GetKind() != "Secret" || obj.GetAPIVersion() != "v1" {
		return
	}
	sd, ok := obj.Object["stringData"].(map[string]any)
	if !ok {
		return
	}
	data, _ := obj.Object["data"].(map[string]any)
	if data == nil {
		data = map[string]any{}
	}
	for k, v := range sd {
		if s, ok := v.(string); ok {
			data[k] = base64.StdEncoding.EncodeToString([]byte(s))
		}
	}
	obj.Object["data"] = data
	delete(obj.Object, "stringData")
}

// PatchError says a three-way merge patch could not be computed. Its message does not include
// the merge library's, which quotes the objects' values (a Secret's data, an env var's value);
// Unwrap returns that error for callers that know the object is not sensitive.
type PatchError struct {
	Step string
	Err  error
}

func (e *PatchError) Error() string {
	return e.Step + ": the object does not fit its kind's merge schema (e.g. a list item without its merge key, " +
		"such as a container or env var without name, or a field of the wrong type); details are withheld as they quote values"
}

// Unwrap returns the merge library's error.
func (e *PatchError) Unwrap() error { return e.Err }

// mergePatchJSON applies a JSON merge patch (RFC 7386) to doc.
func mergePatchJSON(doc, patch []byte) ([]byte, error) {
	var d, p any
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, err
	}
	return json.Marshal(MergePatch(d, p))
}

// MergePatch applies a JSON merge patch (RFC 7386) to a decoded document; target is not
// modified.
func MergePatch(target, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	tm, _ := target.(map[string]any)
	out := make(map[string]any, len(tm))
	for k, v := range tm {
		out[k] = v
	}
	for k, v := range pm {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = MergePatch(out[k], v)
		}
	}
	return out
}

// isEmptyPatch reports whether patch is the empty object.
func isEmptyPatch(patch []byte) bool {
	var m map[string]any
	return json.Unmarshal(patch, &m) == nil && len(m) == 0
}

// sameJSON reports whether two JSON documents hold equal values. A patch whose result equals
// live changes nothing: strategic patches carry $setElementOrder directives whenever live has
// list items the target lacks (an injected sidecar), and such a patch is not worth a request.
func sameJSON(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return equality.Semantic.DeepEqual(va, vb)
}
