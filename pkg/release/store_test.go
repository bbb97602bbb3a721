package release

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	helmchart "helm.sh/helm/v3/pkg/chart"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	helmtime "helm.sh/helm/v3/pkg/time"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
)

const testNS = "shop"

// clock returns a time one minute later on every call, from a fixed start.
func clock() func() time.Time {
	t := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	return func() time.Time {
		t = t.Add(time.Minute)
		return t
	}
}

func newTestStore(t *testing.T, opts ...Option) (*Store, kubernetes.Interface) {
	t.Helper()
	client := fake.NewClientset()
	return NewStore(client, testNS, nil, append([]Option{WithClock(clock())}, opts...)...), client
}

func testChart() *helmchart.Chart {
	return &helmchart.Chart{
		Metadata:  &helmchart.Metadata{APIVersion: "v2", Name: "shop", Version: "1.2.3", AppVersion: "2.0.0"},
		Templates: []*helmchart.File{{Name: "templates/cm.yaml", Data: []byte("kind: ConfigMap\n")}},
		Values:    map[string]any{"replicas": float64(1)},
	}
}

func pending(rev int) Pending {
	return Pending{
		Name: "web", Namespace: testNS, Revision: rev, Chart: testChart(),
		Config:   map[string]any{"replicas": float64(rev)},
		Manifest: fmt.Sprintf("---\n# Source: shop/templates/cm.yaml\nkind: ConfigMap\nmetadata:\n  name: web-%d\n", rev),
		Hooks:    []*helmrelease.Hook{{Name: "migrate", Kind: "Job", Path: "shop/templates/job.yaml", Events: []helmrelease.HookEvent{helmrelease.HookPreInstall}}},
		Notes:    "hello",
	}
}

// row is what `helm history` shows of a revision.
type row struct {
	Revision    int
	Status      helmrelease.Status
	Description string
}

func history(t *testing.T, s *Store) []row {
	t.Helper()
	h, err := s.History(context.Background(), "web")
	if err != nil {
		t.Fatal(err)
	}
	var rows []row
	for _, r := range h {
		rows = append(rows, row{r.Version, r.Info.Status, r.Info.Description})
	}
	return rows
}

func deploy(t *testing.T, s *Store, rev int, ok bool, desc string) *helmrelease.Release {
	t.Helper()
	ctx := context.Background()
	if _, err := s.RecordPending(ctx, pending(rev)); err != nil {
		t.Fatalf("RecordPending(%d): %v", rev, err)
	}
	rel, err := s.RecordResult(ctx, "web", rev, ok, desc)
	if err != nil {
		t.Fatalf("RecordResult(%d): %v", rev, err)
	}
	return rel
}

func TestInstall(t *testing.T) {
	ctx := context.Background()
	s, _ := newTestStore(t)
	if n, err := s.NextRevision(ctx, "web"); err != nil || n != 1 {
		t.Fatalf("NextRevision = %d, %v; want 1", n, err)
	}
	if _, err := s.Last(ctx, "web"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Last error = %v, want ErrNotFound", err)
	}
	rel, err := s.RecordPending(ctx, pending(1))
	if err != nil {
		t.Fatal(err)
	}
	if rel.Info.Status != helmrelease.StatusPendingInstall || rel.Info.Description != "Initial install underway" {
		t.Errorf("pending record: status %s, %q", rel.Info.Status, rel.Info.Description)
	}
	if !rel.Info.FirstDeployed.Equal(rel.Info.LastDeployed) || rel.Info.FirstDeployed.IsZero() {
		t.Errorf("FirstDeployed %v, LastDeployed %v: want equal, set", rel.Info.FirstDeployed, rel.Info.LastDeployed)
	}
	if _, err := s.Deployed(ctx, "web"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Deployed while pending: error = %v, want ErrNotFound", err)
	}
	if _, err := s.RecordResult(ctx, "web", 1, true, ""); err != nil {
		t.Fatal(err)
	}
	got, err := s.Deployed(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != 1 || got.Manifest != pending(1).Manifest || got.Info.Notes != "hello" || len(got.Hooks) != 1 {
		t.Errorf("deployed record = v%d %q notes %q hooks %d", got.Version, got.Manifest, got.Info.Notes, len(got.Hooks))
	}
	if diff := cmp.Diff([]row{{1, helmrelease.StatusDeployed, "Install complete"}}, history(t, s)); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if n, err := s.NextRevision(ctx, "web"); err != nil || n != 2 {
		t.Errorf("NextRevision = %d, %v; want 2", n, err)
	}
}

func TestUpgradeSupersedes(t *testing.T) {
	ctx := context.Background()
	s, _ := newTestStore(t)
	first := deploy(t, s, 1, true, "")
	rel, err := s.RecordPending(ctx, pending(2))
	if err != nil {
		t.Fatal(err)
	}
	if rel.Info.Status != helmrelease.StatusPendingUpgrade || rel.Info.Description != "Preparing upgrade" {
		t.Errorf("pending record: status %s, %q", rel.Info.Status, rel.Info.Description)
	}
	if !rel.Info.FirstDeployed.Equal(first.Info.FirstDeployed) || !rel.Info.LastDeployed.After(first.Info.LastDeployed) {
		t.Errorf("upgrade FirstDeployed %v LastDeployed %v; first install %v", rel.Info.FirstDeployed, rel.Info.LastDeployed, first.Info.FirstDeployed)
	}
	if _, err := s.RecordResult(ctx, "web", 2, true, ""); err != nil {
		t.Fatal(err)
	}
	want := []row{
		{1, helmrelease.StatusSuperseded, "Install complete"},
		{2, helmrelease.StatusDeployed, "Upgrade complete"},
	}
	if diff := cmp.Diff(want, history(t, s)); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if d, err := s.Deployed(ctx, "web"); err != nil || d.Version != 2 {
		t.Errorf("Deployed = %v, %v; want revision 2", d, err)
	}
}

func TestFailures(t *testing.T) {
	s, _ := newTestStore(t)
	deploy(t, s, 1, false, "timed out waiting for Deployment web")
	// No revision is deployed: the next deploy is an install again.
	deploy(t, s, 2, true, "")
	deploy(t, s, 3, false, "pre-upgrade hooks failed")
	deploy(t, s, 4, true, "Deployed by sealane")
	want := []row{
		{1, helmrelease.StatusFailed, `Release "web" failed: timed out waiting for Deployment web`},
		{2, helmrelease.StatusSuperseded, "Install complete"},
		{3, helmrelease.StatusFailed, `Upgrade "web" failed: pre-upgrade hooks failed`},
		{4, helmrelease.StatusDeployed, "Deployed by sealane"},
	}
	if diff := cmp.Diff(want, history(t, s)); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
}

func TestFailedUpgradeKeepsDeployed(t *testing.T) {
	ctx := context.Background()
	s, _ := newTestStore(t)
	deploy(t, s, 1, true, "")
	deploy(t, s, 2, false, "")
	d, err := s.Deployed(ctx, "web")
	if err != nil || d.Version != 1 {
		t.Fatalf("Deployed = %v, %v; want revision 1", d, err)
	}
	if last, _ := s.Last(ctx, "web"); last.Version != 2 || last.Info.Description != `Upgrade "web" failed` {
		t.Errorf("Last = v%d %q", last.Version, last.Info.Description)
	}
}

func TestIdempotent(t *testing.T) {
	ctx := context.Background()
	s, _ := newTestStore(t)
	first, err := s.RecordPending(ctx, pending(1))
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.RecordPending(ctx, pending(1)) // a redelivered event
	if err != nil {
		t.Fatal(err)
	}
	if second.Manifest != first.Manifest || !second.Info.LastDeployed.Equal(first.Info.LastDeployed) {
		t.Errorf("redelivered RecordPending changed the record")
	}
	// Another writer's record under the same number is not taken for ours.
	other := pending(1)
	other.Manifest = "something else"
	var conflict *RevisionConflictError
	if _, err := s.RecordPending(ctx, other); !errors.As(err, &conflict) || conflict.Taken == nil || conflict.Revision != 1 {
		t.Fatalf("RecordPending over a different revision 1: %v, want a RevisionConflictError naming it", err)
	}
	other = pending(1)
	other.Description = "Deploy in progress " + SealaneMark
	if _, err := s.RecordPending(ctx, other); !errors.As(err, &conflict) {
		t.Fatalf("RecordPending over helm's pending revision 1 (same manifest): %v, want a RevisionConflictError", err)
	}
	if _, err := s.RecordResult(ctx, "web", 1, true, ""); err != nil {
		t.Fatal(err)
	}
	for _, ok := range []bool{true, false} {
		rel, err := s.RecordResult(ctx, "web", 1, ok, "late duplicate")
		if err != nil {
			t.Fatal(err)
		}
		if rel.Info.Status != helmrelease.StatusDeployed || rel.Info.Description != "Install complete" {
			t.Errorf("redelivered RecordResult(%v) changed the record: %s %q", ok, rel.Info.Status, rel.Info.Description)
		}
	}
	// A pending record redelivered after its result is still returned as is.
	rel, err := s.RecordPending(ctx, pending(1))
	if err != nil || rel.Info.Status != helmrelease.StatusDeployed {
		t.Errorf("RecordPending after result = %v, %v", rel, err)
	}
	if diff := cmp.Diff([]row{{1, helmrelease.StatusDeployed, "Install complete"}}, history(t, s)); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
}

func TestRecordResultUnknownRevision(t *testing.T) {
	s, _ := newTestStore(t)
	deploy(t, s, 1, true, "")
	_, err := s.RecordResult(context.Background(), "web", 7, true, "")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "release web revision 7") {
		t.Errorf("error = %v, want ErrNotFound naming web revision 7", err)
	}
}

func TestRecordPendingChecks(t *testing.T) {
	s, _ := newTestStore(t)
	deploy(t, s, 1, true, "")
	tests := []struct {
		name string
		p    Pending
		want string
	}{
		{"skips a revision", pending(3), "record release web revision 3: the next revision is 2"},
		{"zero revision", pending(0), "revision 0, want >= 1"},
		{"invalid name", Pending{Name: "Bad_Name", Revision: 1}, `record release "Bad_Name"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.RecordPending(context.Background(), tc.p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestInterruptedPendingBecomesFailed(t *testing.T) {
	ctx := context.Background()
	s, _ := newTestStore(t)
	deploy(t, s, 1, true, "")
	p2 := pending(2)
	p2.Description = "Deploy in progress " + SealaneMark
	if _, err := s.RecordPending(ctx, p2); err != nil { // its deploy crashed
		t.Fatal(err)
	}
	if _, err := s.RecordPending(ctx, pending(3)); err != nil { // helm's, still running
		t.Fatal(err)
	}
	if _, err := s.RecordPending(ctx, pending(4)); err != nil {
		t.Fatal(err)
	}
	want := []row{
		{1, helmrelease.StatusDeployed, "Install complete"},
		{2, helmrelease.StatusFailed, "Interrupted: superseded by revision 3 before it finished"},
		{3, helmrelease.StatusPendingUpgrade, "Preparing upgrade"}, // helm's to finish
		{4, helmrelease.StatusPendingUpgrade, "Preparing upgrade"},
	}
	if diff := cmp.Diff(want, history(t, s)); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	// The late result of revision 2 changes nothing.
	if rel, err := s.RecordResult(ctx, "web", 2, true, ""); err != nil || rel.Info.Status != helmrelease.StatusFailed {
		t.Errorf("late RecordResult(2) = %v, %v", rel, err)
	}
}

func TestRecordTooLarge(t *testing.T) {
	ctx := context.Background()
	s, client := newTestStore(t)
	noise := make([]byte, 900<<10) // incompressible: 1.2 MiB once base64-encoded
	if _, err := rand.Read(noise); err != nil {
		t.Fatal(err)
	}
	p := pending(1)
	p.Manifest = hex.EncodeToString(noise)
	_, err := s.RecordPending(ctx, p)
	var tooLarge *RecordTooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.Size <= MaxRecordBytes {
		t.Fatalf("error = %v, want *RecordTooLargeError", err)
	}
	if !strings.HasPrefix(err.Error(), fmt.Sprintf("release record web.v1 is %d bytes, over the 1 MiB object limit: ", tooLarge.Size)) {
		t.Errorf("error text = %q", err)
	}
	secrets, _ := client.CoreV1().Secrets(testNS).List(ctx, metav1.ListOptions{})
	if len(secrets.Items) != 0 {
		t.Errorf("%d Secrets written, want none", len(secrets.Items))
	}
}

func TestHistoryLimit(t *testing.T) {
	s, client := newTestStore(t)
	for rev := 1; rev <= 12; rev++ {
		deploy(t, s, rev, rev != 12, "") // the newest fails: the deployed one must be kept
	}
	var revs []int
	for _, r := range history(t, s) {
		revs = append(revs, r.Revision)
	}
	if diff := cmp.Diff([]int{3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, revs); diff != "" {
		t.Errorf("revisions kept (-want +got):\n%s", diff)
	}
	d, err := s.Deployed(context.Background(), "web")
	if err != nil || d.Version != 11 {
		t.Errorf("Deployed = %v, %v; want 11", d, err)
	}
	secrets, _ := client.CoreV1().Secrets(testNS).List(context.Background(), metav1.ListOptions{})
	if len(secrets.Items) != DefaultMaxHistory {
		t.Errorf("%d Secrets, want %d", len(secrets.Items), DefaultMaxHistory)
	}

	s3, _ := newTestStore(t, WithMaxHistory(3))
	for rev := 1; rev <= 5; rev++ {
		deploy(t, s3, rev, true, "")
	}
	if got := len(history(t, s3)); got != 3 {
		t.Errorf("WithMaxHistory(3) kept %d revisions", got)
	}
}

// TestHelmReadsOurRecords decodes records with Helm's own driver and checks the
// Secret as Helm writes it.
func TestHelmReadsOurRecords(t *testing.T) {
	ctx := context.Background()
	s, client := newTestStore(t)
	deploy(t, s, 1, true, "")
	deploy(t, s, 2, true, "")

	sec, err := client.CoreV1().Secrets(testNS).Get(ctx, "sh.helm.release.v1.web.v2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sec.Type != "helm.sh/release.v1" {
		t.Errorf("Secret type = %q", sec.Type)
	}
	for k, v := range map[string]string{"name": "web", "owner": "helm", "status": "deployed", "version": "2"} {
		if sec.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, sec.Labels[k], v)
		}
	}
	if !strings.HasPrefix(string(sec.Data["release"]), "H4sI") { // base64 of the gzip magic
		t.Errorf("release data is not base64 gzip: %.20q", sec.Data["release"])
	}

	helm := storage.Init(driver.NewSecrets(client.CoreV1().Secrets(testNS)))
	rel, err := helm.Deployed("web")
	if err != nil {
		t.Fatal(err)
	}
	want := pending(2)
	if rel.Version != 2 || rel.Namespace != testNS || rel.Manifest != want.Manifest || rel.Info.Notes != want.Notes ||
		rel.Chart.Metadata.Name != "shop" || rel.Info.Description != "Upgrade complete" {
		t.Errorf("helm decoded %+v", rel)
	}
	if diff := cmp.Diff(want.Config, rel.Config); diff != "" {
		t.Errorf("Config (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want.Hooks, rel.Hooks); diff != "" {
		t.Errorf("Hooks (-want +got):\n%s", diff)
	}
	h, err := helm.History("web")
	if err != nil || len(h) != 2 {
		t.Fatalf("helm History = %d, %v", len(h), err)
	}
	old, err := helm.Get("web", 1)
	if err != nil || old.Info.Status != helmrelease.StatusSuperseded {
		t.Errorf("helm Get v1 = %v, %v; want superseded", old, err)
	}
}

// TestReadsHelmRecords continues a release that Helm installed.
func TestReadsHelmRecords(t *testing.T) {
	ctx := context.Background()
	s, client := newTestStore(t)
	installed := helmtime.Time{Time: time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)}
	helm := storage.Init(driver.NewSecrets(client.CoreV1().Secrets(testNS)))
	err := helm.Create(&helmrelease.Release{
		Name: "web", Namespace: testNS, Version: 1, Chart: testChart(), Manifest: "---\n",
		Info: &helmrelease.Info{FirstDeployed: installed, LastDeployed: installed, Status: helmrelease.StatusDeployed, Description: "Install complete"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.NextRevision(ctx, "web"); err != nil || n != 2 {
		t.Fatalf("NextRevision = %d, %v; want 2", n, err)
	}
	rel, err := s.RecordPending(ctx, pending(2))
	if err != nil {
		t.Fatal(err)
	}
	if rel.Info.Status != helmrelease.StatusPendingUpgrade || !rel.Info.FirstDeployed.Equal(installed) {
		t.Errorf("pending = %s first deployed %v, want pending-upgrade from %v", rel.Info.Status, rel.Info.FirstDeployed, installed)
	}
	if _, err := s.RecordResult(ctx, "web", 2, true, ""); err != nil {
		t.Fatal(err)
	}
	want := []row{{1, helmrelease.StatusSuperseded, "Install complete"}, {2, helmrelease.StatusDeployed, "Upgrade complete"}}
	if diff := cmp.Diff(want, history(t, s)); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
}

func TestConfigMapStorage(t *testing.T) {
	ctx := context.Background()
	s, client := newTestStore(t, WithConfigMaps())
	deploy(t, s, 1, true, "")
	cm, err := client.CoreV1().ConfigMaps(testNS).Get(ctx, "sh.helm.release.v1.web.v1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Labels["status"] != "deployed" || cm.Labels["owner"] != "helm" {
		t.Errorf("ConfigMap labels = %v", cm.Labels)
	}
	if d, err := s.Deployed(ctx, "web"); err != nil || d.Version != 1 {
		t.Errorf("Deployed = %v, %v", d, err)
	}
}

func TestCancelledContext(t *testing.T) {
	s, _ := newTestStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.RecordPending(ctx, pending(1)); !errors.Is(err, context.Canceled) {
		t.Errorf("RecordPending error = %v, want context.Canceled", err)
	}
}
