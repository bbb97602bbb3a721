package main

import (
	"encoding/json"
	"testing"

	helmrelease "helm.sh/helm/v3/pkg/release"
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
