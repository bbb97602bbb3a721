package specschema

import (
	"path/filepath"
	"testing"

	"github.com/sealane/sealane/pkg/golden"
)

// root is the module's directory, from this package's.
const root = "../.."

// TestSchemaFiles fails when a schema of docs/schemas differs from what the Go types generate
// now: after a change of pkg/rollout's spec or pkg/webhook's configuration types (fields,
// tags, doc comments), regenerate them with `go test ./pkg/specschema -run TestSchemaFiles -update`.
func TestSchemaFiles(t *testing.T) {
	for _, f := range Files() {
		t.Run(f.Name, func(t *testing.T) {
			got, err := f.Generate(root)
			if err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, filepath.Join(root, "docs", "schemas", f.Name), string(got))
			if t.Failed() {
				t.Log("docs/schemas is generated from the Go types: run go test ./pkg/specschema -run TestSchemaFiles -update")
			}
		})
	}
}
