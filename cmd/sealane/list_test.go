package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	helmchart "helm.sh/helm/v3/pkg/chart"
	helmrelease "helm.sh/helm/v3/pkg/release"
	helmtime "helm.sh/helm/v3/pkg/time"
)

func testRecord(name, ns string, rev int, status helmrelease.Status) *helmrelease.Release {
	return &helmrelease.Release{
		Name: name, Namespace: ns, Version: rev,
		Chart: &helmchart.Chart{Metadata: &helmchart.Metadata{Name: "shop", Version: "1.2.3", AppVersion: "2.0"}},
		Info: &helmrelease.Info{Status: status, Description: "Upgrade complete",
			LastDeployed: helmtime.Time{Time: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}},
	}
}

func TestListed(t *testing.T) {
	latest := []*helmrelease.Release{
		testRecord("web", "b", 3, helmrelease.StatusDeployed),
		testRecord("api", "a", 1, helmrelease.StatusFailed),
		testRecord("old", "a", 2, helmrelease.StatusUninstalled),
		testRecord("web", "a", 4, helmrelease.StatusPendingUpgrade),
	}
	var names []string
	for _, r := range listed(latest, false) {
		names = append(names, r.Namespace+"/"+r.Name)
	}
	if got := strings.Join(names, " "); got != "a/api b/web" {
		t.Errorf("listed = %s, want deployed and failed ones by name", got)
	}
	if got := len(listed(latest, true)); got != 4 {
		t.Errorf("listed --all = %d releases, want 4", got)
	}
}

func TestListOutput(t *testing.T) {
	rows := listElements([]*helmrelease.Release{testRecord("web", "shop", 3, helmrelease.StatusDeployed), {Name: "broken", Namespace: "shop", Version: 1}})
	raw, err := json.Marshal(rows)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"name":"web","namespace":"shop","revision":"3","updated":"2025-01-02 03:04:05 +0000 UTC","status":"deployed","chart":"shop-1.2.3","app_version":"2.0"},` +
		`{"name":"broken","namespace":"shop","revision":"1","updated":"-","status":"","chart":"MISSING","app_version":"MISSING"}]`
	if string(raw) != want {
		t.Errorf("json =\n%s\nwant\n%s", raw, want)
	}
	if raw, _ := json.Marshal(listElements(nil)); string(raw) != "[]" {
		t.Errorf("no releases = %s, want []", raw)
	}
	var b bytes.Buffer
	if err := writeListTable(&b, rows[:1]); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME NAMESPACE REVISION UPDATED STATUS CHART APP VERSION" ||
		!strings.HasPrefix(lines[1], "web ") || !strings.Contains(lines[1], "shop-1.2.3") {
		t.Errorf("table =\n%s", b.String())
	}
}
