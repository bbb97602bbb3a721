package pipeline

import (
	"errors"
	"fmt"
	"io"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// permanentKubeError looks through wrapped and joined errors, and terminates on any shape —
// a single-%w wrap of a joined error once recursed forever (a connection cut mid-apply spun
// the applier at 100 % CPU).
func TestPermanentKubeError(t *testing.T) {
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "x", nil)
	eof := fmt.Errorf("get ConfigMap x: %w", io.ErrUnexpectedEOF)
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"transient", eof, false},
		{"invalid", invalid, true},
		{"wrapped invalid", fmt.Errorf("apply: %w", invalid), true},
		{"joined transient", errors.Join(eof, eof), false},
		{"wrapped joined transient", fmt.Errorf("check ownership: %w", errors.Join(eof, eof)), false},
		{"wrapped joined with invalid", fmt.Errorf("phase 1: %w", errors.Join(eof, fmt.Errorf("y: %w", invalid))), true},
		{"two %w", fmt.Errorf("%w (%w)", eof, fmt.Errorf("z: %w", errors.Join(eof, invalid))), true},
	} {
		if got := permanentKubeError(tc.err); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
