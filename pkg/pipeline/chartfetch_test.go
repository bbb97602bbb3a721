package pipeline

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus/bustest"
	"github.com/sealane/sealane/pkg/chart"
	"github.com/sealane/sealane/pkg/chartsource"
)

// upload stores data as a client's upload, name in the input bucket bucket, and returns its
// reference.
func upload(b *bustest.Blobs, bucket, name string, data []byte) string {
	ref, err := b.PutInput(context.Background(), bucket, name, data)
	if err != nil {
		panic(err)
	}
	return ref
}

// putBlob stores data as blob name and returns its reference, failing the test if it cannot.
func putBlob(t testing.TB, blobs *bustest.Blobs, name string, data []byte) string {
	t.Helper()
	ref, err := blobs.PutBlob(context.Background(), name, data)
	if err != nil {
		t.Fatalf("put blob %s: %v", name, err)
	}
	return ref
}

// stored reports whether blobs holds a blob named name.
func stored(blobs *bustest.Blobs, name string) bool {
	_, ok := blobs.Blob(name)
	return ok
}

// helmRepo serves a classic Helm repository holding chart "web" at the given versions.
func helmRepo(t *testing.T, versions ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, v := range versions {
		ch := &helmchart.Chart{
			Metadata:  &helmchart.Metadata{APIVersion: "v2", Name: "web", Version: v},
			Templates: []*helmchart.File{{Name: "templates/cm.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n")}},
		}
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

func TestStoreRemoteChart(t *testing.T) {
	url := helmRepo(t, "1.0.0", "1.2.0", "2.0.0")
	blobs := bustest.NewBlobs()
	src, err := storeRemoteChart(context.Background(), blobs, events.ChartSource{Name: "web", Repo: url, Version: "^1"}, chartsource.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if src.Version != "1.2.0" || src.Name != "web" || src.Ref == "" {
		t.Fatalf("resolved %+v, want web 1.2.0 stored", src)
	}
	archive, err := blobs.GetBlob(context.Background(), src.Ref)
	if err != nil {
		t.Fatal(err)
	}
	if chart.Digest(archive) != src.Digest {
		t.Fatalf("stored archive digest %s, source says %s", chart.Digest(archive), src.Digest)
	}

	_, err = storeRemoteChart(context.Background(), blobs, events.ChartSource{Name: "web", Repo: url, Version: "^3"}, chartsource.Options{})
	if !chartMissing(err) || !strings.Contains(err.Error(), "2.0.0") {
		t.Fatalf("missing version: err = %v, want a permanent error listing the versions", err)
	}
	_, err = storeRemoteChart(context.Background(), blobs, events.ChartSource{Name: "api", Repo: url}, chartsource.Options{})
	if !chartMissing(err) {
		t.Fatalf("missing chart: err = %v, want a permanent error", err)
	}
}
