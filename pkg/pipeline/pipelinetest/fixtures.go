package pipelinetest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sealane/sealane/pkg/bus/bustest"
	"github.com/sealane/sealane/pkg/release"
	"github.com/sealane/sealane/pkg/resource"
)

// Chart is the chart of Target's release records ("web" 1.0.0, no templates).
var Chart = &helmchart.Chart{Metadata: &helmchart.Metadata{APIVersion: "v2", Name: "web", Version: "1.0.0"}}

// RecordRevision writes revision rev pending, as the recorder does, then final ("deployed",
// "failed") unless final is "".
func RecordRevision(t *testing.T, s *release.Store, rev int, final string) {
	t.Helper()
	ctx := Context(t)
	if _, err := s.RecordPending(ctx, release.Pending{Name: Target.Release, Namespace: Target.Namespace, Revision: rev,
		Chart: Chart, Description: "Deploy in progress " + release.SealaneMark}); err != nil {
		t.Fatal(err)
	}
	switch final {
	case "deployed":
		_, err := s.RecordResult(ctx, Target.Release, rev, true, "")
		if err != nil {
			t.Fatal(err)
		}
	case "failed":
		if _, err := s.RecordResult(ctx, Target.Release, rev, false, "earlier"); err != nil {
			t.Fatal(err)
		}
	}
}

// Status is the Helm status of revision rev of Target's release, "absent" when it has none.
func Status(t *testing.T, s *release.Store, rev int) string {
	t.Helper()
	rel, err := s.Get(Context(t), Target.Release, rev)
	if errors.Is(err, release.ErrNotFound) {
		return "absent"
	}
	if err != nil {
		t.Fatal(err)
	}
	return rel.Info.Status.String()
}

// ConfigMap is a live ConfigMap of the release for the fake dynamic client.
func ConfigMap(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace(Target.Namespace)
	u.SetName(name)
	u.SetUID(types.UID("uid-" + name))
	u.SetAnnotations(map[string]string{resource.AnnotationReleaseName: Target.Release, resource.AnnotationReleaseNamespace: Target.Namespace})
	return u
}

// CMManifest is the manifest of a ConfigMap name with the annotations given as key, value pairs.
func CMManifest(name string, annotations ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n", name)
	if len(annotations) > 0 {
		b.WriteString("  annotations:\n")
		for i := 0; i+1 < len(annotations); i += 2 {
			fmt.Fprintf(&b, "    %s: %s\n", annotations[i], annotations[i+1])
		}
	}
	b.WriteString("data:\n  a: b\n")
	return b.String()
}

// Namespace is a Namespace object named name.
func Namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// ChartArchive packs chart "web" 1.0.0 with one template, ConfigMap "web".
func ChartArchive(t *testing.T) []byte {
	t.Helper()
	return Pack(t, &helmchart.Chart{Metadata: &helmchart.Metadata{APIVersion: "v2", Name: "web", Version: "1.0.0"},
		Templates: []*helmchart.File{{Name: "templates/cm.yaml", Data: []byte(CMManifest("web"))}}})
}

// Pack packs ch into a chart archive, as `helm package` does.
func Pack(t *testing.T, ch *helmchart.Chart) []byte {
	t.Helper()
	path, err := chartutil.Save(ch, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Upload stores data as a client's upload, name in the input bucket bucket, and returns its
// reference.
func Upload(b *bustest.Blobs, bucket, name string, data []byte) string {
	ref, err := b.PutInput(context.Background(), bucket, name, data)
	if err != nil {
		panic(err)
	}
	return ref
}

// PutBlob stores data as blob name and returns its reference, failing the test if it cannot.
func PutBlob(t testing.TB, blobs *bustest.Blobs, name string, data []byte) string {
	t.Helper()
	ref, err := blobs.PutBlob(context.Background(), name, data)
	if err != nil {
		t.Fatalf("put blob %s: %v", name, err)
	}
	return ref
}

// HelmRepo serves a classic Helm repository holding chart "web" at the given versions and
// returns its URL.
func HelmRepo(t *testing.T, versions ...string) string {
	t.Helper()
	var charts []*helmchart.Chart
	for _, v := range versions {
		charts = append(charts, &helmchart.Chart{
			Metadata:  &helmchart.Metadata{APIVersion: "v2", Name: "web", Version: v},
			Templates: []*helmchart.File{{Name: "templates/cm.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n")}},
		})
	}
	return ChartRepo(t, charts...)
}

// ChartRepo serves a classic Helm repository holding charts and returns its URL.
func ChartRepo(t *testing.T, charts ...*helmchart.Chart) string {
	t.Helper()
	dir := t.TempDir()
	for _, ch := range charts {
		if _, err := chartutil.Save(ch, dir); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	idx, err := repo.IndexDirectory(dir, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.WriteFile(filepath.Join(dir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	return srv.URL
}
