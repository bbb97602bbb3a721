package release

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestRecordsReadByHelmsDriver: what the Store writes, Helm's own driver reads (labels
// included), and what Helm's driver writes, the Store reads.
func TestRecordsReadByHelmsDriver(t *testing.T) {
	for _, configMaps := range []bool{false, true} {
		client := fake.NewClientset()
		var opts []Option
		var helm driver.Driver = driver.NewSecrets(client.CoreV1().Secrets(testNS))
		if configMaps {
			opts = append(opts, WithConfigMaps())
			helm = driver.NewConfigMaps(client.CoreV1().ConfigMaps(testNS))
		}
		s := NewStore(client, testNS, nil, append(opts, WithClock(clock()))...)
		p := pending(1)
		p.Labels = map[string]string{"team": "shop"}
		if _, err := s.RecordPending(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		got, err := helm.Get("sh.helm.release.v1.web.v1")
		if err != nil {
			t.Fatalf("configMaps=%v: Helm's driver reads: %v", configMaps, err)
		}
		if got.Manifest != p.Manifest || got.Info.Status != helmrelease.StatusPendingInstall || got.Labels["team"] != "shop" || got.Chart.Metadata.Version != "1.2.3" {
			t.Errorf("configMaps=%v: Helm read %+v", configMaps, got)
		}
		hs, err := helm.Query(map[string]string{"name": "web", "owner": "helm", "status": "pending-install"})
		if err != nil || len(hs) != 1 {
			t.Errorf("configMaps=%v: Helm's label query found %d, %v", configMaps, len(hs), err)
		}
		// And the other way round.
		two := *got
		two.Version, two.Info = 2, &helmrelease.Info{Status: helmrelease.StatusDeployed, Description: "by helm"}
		if err := helm.Create("sh.helm.release.v1.web.v2", &two); err != nil {
			t.Fatal(err)
		}
		back, err := s.Get(context.Background(), "web", 2)
		if err != nil || back.Info.Description != "by helm" || back.Labels["team"] != "shop" || back.Labels["owner"] != "" {
			t.Errorf("configMaps=%v: the Store read %+v, %v", configMaps, back, err)
		}
	}
}

// TestHeaders: the revisions and statuses of a history, from labels only.
func TestHeaders(t *testing.T) {
	s, _ := newTestStore(t)
	deploy(t, s, 1, true, "")
	deploy(t, s, 2, false, "boom")
	deploy(t, s, 3, true, "")
	hs, err := s.Headers(context.Background(), "web")
	if err != nil {
		t.Fatal(err)
	}
	want := []Header{{"web", 1, helmrelease.StatusSuperseded}, {"web", 2, helmrelease.StatusFailed}, {"web", 3, helmrelease.StatusDeployed}}
	if d := cmp.Diff(want, hs); d != "" {
		t.Errorf("headers (-want +got):\n%s", d)
	}
	if n, _ := s.NextRevision(context.Background(), "web"); n != 4 {
		t.Errorf("NextRevision = %d, want 4", n)
	}
	if h, err := s.LastHeader(context.Background(), "nope"); err == nil {
		t.Errorf("LastHeader of no release = %+v, want ErrNotFound", h)
	}
}

// TestPruneKeepsTheDeployedRevision: at the history limit, a new revision deletes the oldest
// ones but never the deployed one — Helm's rule.
func TestPruneKeepsTheDeployedRevision(t *testing.T) {
	s, _ := newTestStore(t, WithMaxHistory(3))
	deploy(t, s, 1, true, "")
	deploy(t, s, 2, false, "a")
	deploy(t, s, 3, false, "b")
	deploy(t, s, 4, false, "c")
	want := []row{{1, helmrelease.StatusDeployed, "Install complete"}, {3, helmrelease.StatusFailed, `Upgrade "web" failed: b`},
		{4, helmrelease.StatusFailed, `Upgrade "web" failed: c`}}
	if d := cmp.Diff(want, history(t, s)); d != "" {
		t.Errorf("history (-want +got):\n%s", d)
	}
}

// TestPendingDecodesNoRevision: with the deployed revision named by the caller (the renderer
// read it), recording the next pending revision and pruning at the limit read no record
// whole: only the records' list (metadata) and the writes.
func TestPendingDecodesNoRevision(t *testing.T) {
	client := fake.NewClientset()
	s := NewStore(client, testNS, nil, WithClock(clock()), WithMaxHistory(2))
	deploy(t, s, 1, true, "")
	deploy(t, s, 2, true, "")
	d, err := s.Deployed(context.Background(), "web")
	if err != nil {
		t.Fatal(err)
	}
	client.ClearActions()
	p := pending(3)
	p.Deployed = DeployedRevision{Version: d.Version, FirstDeployed: d.Info.FirstDeployed.Time}
	rel, err := s.RecordPending(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range client.Actions() {
		if a.GetVerb() == "get" {
			t.Errorf("RecordPending read a record: %s %s", a.GetVerb(), a.(k8stesting.GetAction).GetName())
		}
	}
	if !rel.Info.FirstDeployed.Time.Equal(d.Info.FirstDeployed.Time) || rel.Info.Status != helmrelease.StatusPendingUpgrade {
		t.Errorf("pending record %+v, want pending-upgrade first deployed %s", rel.Info, d.Info.FirstDeployed)
	}
	if _, err := client.CoreV1().Secrets(testNS).Get(context.Background(), "sh.helm.release.v1.web.v1", metav1.GetOptions{}); err == nil {
		t.Error("revision 1 kept past the limit of 2")
	}
}
