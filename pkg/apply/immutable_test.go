package apply

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fielderr "k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sealane/sealane/pkg/resource"
)

func TestImmutableFields(t *testing.T) {
	invalid := func(errs ...*fielderr.Error) error {
		return apierrors.NewInvalid(schema.GroupKind{Group: "batch", Kind: "Job"}, "j", fielderr.ErrorList(errs))
	}
	secret := "s3cr3t-value"
	tests := []struct {
		name string
		err  error
		want []string
	}{
		{"nil", nil, nil},
		{"not invalid", apierrors.NewConflict(schema.GroupResource{Resource: "jobs"}, "j", errors.New("x")), nil},
		{"invalid but mutable", invalid(fielderr.Required(fielderr.NewPath("spec", "template"), "")), nil},
		{"job template", invalid(fielderr.Invalid(fielderr.NewPath("spec", "template"), map[string]string{"env": secret}, "field is immutable")),
			[]string{"spec.template"}},
		{"two fields, one twice, wrapped", fmt.Errorf("apply: %w", invalid(
			fielderr.Invalid(fielderr.NewPath("spec", "selector"), "x", "field is immutable"),
			fielderr.Invalid(fielderr.NewPath("spec", "clusterIP"), "y", "field is immutable"),
			fielderr.Invalid(fielderr.NewPath("spec", "selector"), "z", "field is immutable"))),
			[]string{"spec.selector", "spec.clusterIP"}},
		{"statefulset", invalid(fielderr.Forbidden(fielderr.NewPath("spec"),
			"updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy' are forbidden")),
			[]string{"spec"}},
		{"pvc", invalid(fielderr.Forbidden(fielderr.NewPath("spec"), "spec is immutable after creation except resources.requests")), []string{"spec"}},
		{"immutable secret", invalid(fielderr.Forbidden(fielderr.NewPath("data"), "field is immutable when `immutable` is set")), []string{"data"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ImmutableFields(tt.err)); diff != "" {
				t.Errorf("ImmutableFields (-want +got):\n%s", diff)
			}
			if tt.want == nil {
				return
			}
			e := &ImmutableError{Fields: ImmutableFields(tt.err), Err: tt.err}
			if strings.Contains(e.Error(), secret) {
				t.Errorf("ImmutableError leaks the refused value: %s", e)
			}
			if !apierrors.IsInvalid(fmt.Errorf("apply x: %w", e)) {
				t.Error("a wrapped ImmutableError is not IsInvalid")
			}
		})
	}
}

// TestRecreateOnImmutable checks that the object is read as the plan reads it; the rules are
// resource.Resource's RecreateOnImmutable, tested there.
func TestRecreateOnImmutable(t *testing.T) {
	job := withAnnotations(nil)
	job.SetAPIVersion("batch/v1")
	job.SetKind("Job")
	if !RecreateOnImmutable(job) {
		t.Error("a Job without delete policy is not recreated")
	}
	job.SetAnnotations(map[string]string{resource.AnnotationDeletePolicy: "succeeded"})
	if RecreateOnImmutable(job) {
		t.Error("a Job whose delete policy says no is recreated")
	}
	cm := withAnnotations(map[string]string{resource.AnnotationDeletePolicy: "succeeded, before-creation-if-immutable"})
	if !RecreateOnImmutable(cm) {
		t.Error("before-creation-if-immutable does not recreate")
	}
}
