package diff

import (
	"context"
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sealane/sealane/pkg/manifest"
)

// versions is a cluster whose one object is at resourceVersion rv; every get reads it, then
// another writer bumps it by bump.
type versions struct {
	rv, bump, gets int
}

func (v *versions) object() *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}
	u.SetName("c")
	u.SetResourceVersion(strconv.Itoa(v.rv))
	return u
}

func (v *versions) get(context.Context, manifest.Ref) (*unstructured.Unstructured, error) {
	v.gets++
	return v.object(), nil
}

func (v *versions) mapping(schema.GroupVersionKind) (*meta.RESTMapping, error) { panic("unused") }
func (v *versions) dryRunApply(context.Context, *unstructured.Unstructured, string) (*unstructured.Unstructured, error) {
	panic("unused")
}
func (v *versions) dryRunPatch(context.Context, manifest.Ref, types.PatchType, []byte, string) (*unstructured.Unstructured, error) {
	panic("unused")
}
func (v *versions) dryRunCreate(context.Context, *unstructured.Unstructured, string) (*unstructured.Unstructured, error) {
	panic("unused")
}
func (v *versions) dryRunDelete(context.Context, manifest.Ref, types.UID, metav1.DeletionPropagation) error {
	panic("unused")
}

// TestConsistentReadsLiveAgain: a dry run that saw a newer version than the live object read
// before it (a controller wrote in between) makes the planner read live again, so that the two
// are compared at one version; a writer that never stops is given up on after consistentReads.
func TestConsistentReadsLiveAgain(t *testing.T) {
	for _, tc := range []struct {
		name  string
		bumps int // how many dry runs see a newer version than the live read before them
		gets  int // how often live is read again
	}{
		{"nothing in between", 0, 0},
		{"one write in between", 1, 1},
		{"a writer that never stops", 100, consistentReads},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &versions{rv: 1}
			p := &planner{c: c}
			live := c.object()
			dry := func(live *unstructured.Unstructured) (*unstructured.Unstructured, error) {
				if c.bump < tc.bumps {
					c.bump++
					c.rv++ // the other writer, between the read and the dry run
				}
				return c.object(), nil
			}
			live, result, err := p.consistent(context.Background(), manifest.Ref{}, live, dry)
			if err != nil {
				t.Fatal(err)
			}
			if c.gets != tc.gets {
				t.Errorf("live read again %d times, want %d", c.gets, tc.gets)
			}
			if tc.bumps <= consistentReads && live.GetResourceVersion() != result.GetResourceVersion() {
				t.Errorf("live at %s, dry run at %s: compared at two versions", live.GetResourceVersion(), result.GetResourceVersion())
			}
		})
	}
}
