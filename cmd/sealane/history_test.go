package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	helmchart "helm.sh/helm/v3/pkg/chart"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/sealane/sealane/pkg/release"
)

func TestHistoryRows(t *testing.T) {
	rows := historyRows([]*helmrelease.Release{
		testRecord("web", "shop", 1, helmrelease.StatusSuperseded),
		testRecord("web", "shop", 2, helmrelease.StatusDeployed),
	})
	raw, err := json.Marshal(rows)
	if err != nil {
		t.Fatal(err)
	}
	// The fields and formats of `helm history -o json`.
	want := `[{"revision":1,"updated":"2025-01-02T03:04:05Z","status":"superseded","chart":"shop-1.2.3","app_version":"2.0","description":"Upgrade complete"},` +
		`{"revision":2,"updated":"2025-01-02T03:04:05Z","status":"deployed","chart":"shop-1.2.3","app_version":"2.0","description":"Upgrade complete"}]`
	if string(raw) != want {
		t.Errorf("json =\n%s\nwant\n%s", raw, want)
	}
}

// A rollback's revision is read from its record and shown as Helm 4 shows it: in the JSON
// before the description, and in the table's ROLLBACK column when asked.
func TestHistoryRollbackRevision(t *testing.T) {
	ctx := context.Background()
	s := release.NewStore(fake.NewClientset(), "shop", nil)
	chart := &helmchart.Chart{Metadata: &helmchart.Metadata{Name: "shop", Version: "1.2.3", AppVersion: "2.0", APIVersion: "v2"}}
	for _, p := range []release.Pending{
		{Name: "web", Revision: 1, Chart: chart},
		{Name: "web", Revision: 2, Chart: chart},
		{Name: "web", Revision: 3, Chart: chart, Rollback: true, RollbackTo: 1, Description: "Rollback to 1"},
	} {
		if _, err := s.RecordPending(ctx, p); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RecordResult(ctx, "web", p.Revision, true, p.Description); err != nil {
			t.Fatal(err)
		}
	}
	h, err := s.History(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	rows := historyRows(h)
	if err := addRollbackRevisions(ctx, s, "web", rows); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(rows)
	if !strings.Contains(string(raw), `"revision":3,`) || !strings.Contains(string(raw), `"app_version":"2.0","rollback_revision":1,"description":"Rollback to 1"}`) ||
		strings.Count(string(raw), "rollback_revision") != 1 {
		t.Errorf("json = %s, want rollback_revision 1 on revision 3 only", raw)
	}
	var plain, with bytes.Buffer
	if err := writeHistoryTable(&plain, rows, false); err != nil {
		t.Fatal(err)
	}
	if err := writeHistoryTable(&with, rows, true); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "ROLLBACK") {
		t.Errorf("table without --show-rollback-revision has the column:\n%s", plain.String())
	}
	lines := strings.Split(strings.TrimSpace(with.String()), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], "APP VERSION  ROLLBACK  DESCRIPTION") ||
		!strings.HasSuffix(lines[3], "2.0          1         Rollback to 1") || strings.Contains(lines[1], " 1 ") {
		t.Errorf("table with --show-rollback-revision:\n%s", with.String())
	}
}
