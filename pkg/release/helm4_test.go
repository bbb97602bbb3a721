package release

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	helmrelease "helm.sh/helm/v3/pkg/release"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func TestKeepFields(t *testing.T) {
	enc := `{"name":"web","info":{"status":"superseded","description":"Install complete"},"version":1}`
	tests := []struct {
		name, keep, want string
	}{
		{"nothing to keep", "", enc},
		{"the same fields", `{"name":"old","info":{"status":"deployed"},"version":1}`, enc},
		{"Helm 4's fields", `{"name":"web","apply_method":"ssa","info":{"status":"deployed","rollback_revision":3},"version":1}`,
			`{"apply_method":"ssa","info":{"description":"Install complete","rollback_revision":3,"status":"superseded"},"name":"web","version":1}`},
		{"an info that is no object", `{"info":null,"labels":{"team":"a"}}`,
			`{"info":{"status":"superseded","description":"Install complete"},"labels":{"team":"a"},"name":"web","version":1}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := keepFields([]byte(enc), []byte(tc.keep))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	if _, err := keepFields([]byte(enc), []byte("not json")); err == nil {
		t.Error("a stored record that is no JSON object: want an error")
	}
}

// A revision Helm 4 wrote keeps its apply method and rollback revision when sealane supersedes
// it, and a rollback sealane records names its revision as Helm 4 does.
func TestHelm4FieldsKept(t *testing.T) {
	ctx := context.Background()
	s, client := newTestStore(t)
	helm4 := pending(1)
	if _, err := s.RecordPending(ctx, helm4); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RecordResult(ctx, "web", 1, true, "Rollback to 1"); err != nil {
		t.Fatal(err)
	}
	addFields(t, client, 1, map[string]any{"apply_method": "ssa"}, map[string]any{"rollback_revision": 1})

	back := pending(2)
	back.Rollback, back.RollbackTo, back.Description = true, 1, "Rollback to 1"
	if _, err := s.RecordPending(ctx, back); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RecordResult(ctx, "web", 2, true, ""); err != nil {
		t.Fatal(err)
	}
	top, info := storedFields(t, client, 1)
	if top["apply_method"] != "ssa" || info["rollback_revision"] != float64(1) || info["status"] != "superseded" {
		t.Errorf("revision 1 after sealane superseded it: apply_method %v, info %v; want ssa, rollback_revision 1, superseded", top["apply_method"], info)
	}
	_, info = storedFields(t, client, 2)
	if info["rollback_revision"] != float64(1) || info["status"] != string(helmrelease.StatusDeployed) {
		t.Errorf("sealane's rollback: info %v, want rollback_revision 1, deployed", info)
	}
	if diff := cmp.Diff([]row{{1, helmrelease.StatusSuperseded, "Rollback to 1"}, {2, helmrelease.StatusDeployed, "Rollback complete"}}, history(t, s)); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
}

// storedFields decodes the record of revision rev of release web: its top-level fields and info.
func storedFields(t *testing.T, client kubernetes.Interface, rev int) (top, info map[string]any) {
	t.Helper()
	sec, err := client.CoreV1().Secrets(testNS).Get(context.Background(), recordKey("web", rev), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := unpackRecord(sec.Data["release"])
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &top); err != nil {
		t.Fatal(err)
	}
	info, _ = top["info"].(map[string]any)
	return top, info
}

// addFields writes fields into the record of revision rev, as Helm 4 would have written them.
func addFields(t *testing.T, client kubernetes.Interface, rev int, top, info map[string]any) {
	t.Helper()
	secrets := client.CoreV1().Secrets(testNS)
	sec, err := secrets.Get(context.Background(), recordKey("web", rev), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stored, inf := storedFields(t, client, rev)
	for k, v := range top {
		stored[k] = v
	}
	for k, v := range info {
		inf[k] = v
	}
	b, err := json.Marshal(stored)
	if err != nil {
		t.Fatal(err)
	}
	data, err := compress(b, 9)
	if err != nil {
		t.Fatal(err)
	}
	sec.Data["release"] = []byte(data)
	if _, err := secrets.Update(context.Background(), sec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
