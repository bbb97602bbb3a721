package apply

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
)

// AnnotationAppliedDigest is set on every object sealane server-side applies: the SHA-256 of
// the applied object without this annotation. With it, whether an apply would change anything
// is decided from the live object's metadata alone (unchangedSinceApplied) — a megabyte CRD
// identical to what the release last applied is neither read whole nor applied again.
const AnnotationAppliedDigest = "sealane.dev/applied-digest"

// appliedDigest is the digest of obj as AnnotationAppliedDigest records it: of its JSON (keys
// sorted, as encoding/json writes maps) without that annotation and without its on-creation
// fields (a chart changing those changes nothing live, so it must not change the digest).
func appliedDigest(obj *unstructured.Unstructured) (string, error) {
	d, _, err := appliedDigestSize(obj)
	return d, err
}

// appliedDigestSize is appliedDigest and the size of the JSON it digests.
func appliedDigestSize(obj *unstructured.Unstructured) (string, int, error) {
	oc, err := OnCreationOf(obj)
	if err != nil {
		return "", 0, err
	}
	c := obj.DeepCopy()
	unstructured.RemoveNestedField(c.Object, "metadata", "annotations", AnnotationAppliedDigest)
	if ann, ok, _ := unstructured.NestedMap(c.Object, "metadata", "annotations"); ok && len(ann) == 0 {
		unstructured.RemoveNestedField(c.Object, "metadata", "annotations")
	}
	for _, f := range oc.fields(c) {
		f.remove(c.Object)
	}
	b, err := json.Marshal(c.Object)
	if err != nil {
		return "", 0, err
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), len(b), nil
}

// WithAppliedDigest sets obj's AnnotationAppliedDigest, in place, to the digest of obj as it
// is (the applied object: PrepareForApply'd, its namespace settled).
func WithAppliedDigest(obj *unstructured.Unstructured) error {
	_, err := withAppliedDigest(obj)
	return err
}

// withAppliedDigest is WithAppliedDigest returning the size of obj's JSON.
func withAppliedDigest(obj *unstructured.Unstructured) (int, error) {
	d, size, err := appliedDigestSize(obj)
	if err != nil {
		return 0, err
	}
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[AnnotationAppliedDigest] = d
	obj.SetAnnotations(ann)
	return size, nil
}

// unchangedSinceApplied reports whether a server-side apply of body (carrying its
// AnnotationAppliedDigest) over live would change nothing, from live's metadata only: live
// carries the same digest — the previous apply sent exactly this object — and manager's one
// apply entry owns exactly body's fields — nobody took a field over or changed its value
// since (a write by any other manager moves the fields it changes to its own entry, out of
// manager's). Client-side fields of managers to take over (takeOverClientSide) make it false.
func unchangedSinceApplied(body, live *unstructured.Unstructured, manager string, clientSide sets.Set[string]) bool {
	want := body.GetAnnotations()[AnnotationAppliedDigest]
	if want == "" || live.GetAnnotations()[AnnotationAppliedDigest] != want || live.GetDeletionTimestamp() != nil {
		return false
	}
	tree, ok := applyEntry(live, manager, clientSide)
	return ok && ownsExactly(tree, appliedFields(body))
}

// applyEntry returns the FieldsV1 tree of manager's one server-side apply entry of live (its
// main resource's); false when there is none, more than one, or a client-side entry of
// clientSide to take over.
func applyEntry(live *unstructured.Unstructured, manager string, clientSide sets.Set[string]) (map[string]any, bool) {
	var tree map[string]any
	for _, e := range live.GetManagedFields() {
		if e.Subresource != "" {
			continue
		}
		if e.Operation == metav1.ManagedFieldsOperationUpdate && clientSide.Has(e.Manager) {
			return nil, false
		}
		if e.Manager != manager || e.Operation != metav1.ManagedFieldsOperationApply {
			continue
		}
		if tree != nil || e.FieldsV1 == nil || json.Unmarshal(e.FieldsV1.Raw, &tree) != nil || tree == nil {
			return nil, false
		}
	}
	return tree, tree != nil
}
