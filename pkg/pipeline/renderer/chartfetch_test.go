package renderer

import (
	"context"
	"strings"
	"testing"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus/bustest"
	"github.com/sealane/sealane/pkg/chart"
	"github.com/sealane/sealane/pkg/chartsource"
	"github.com/sealane/sealane/pkg/pipeline/pipelinetest"
)

// stored reports whether blobs holds a blob named name.
func stored(blobs *bustest.Blobs, name string) bool {
	_, ok := blobs.Blob(name)
	return ok
}

func TestStoreRemoteChart(t *testing.T) {
	url := pipelinetest.HelmRepo(t, "1.0.0", "1.2.0", "2.0.0")
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
