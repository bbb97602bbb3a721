package stagekit

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus/bustest"
	"github.com/sealane/sealane/pkg/chart"
)

// crdChart packs a chart whose subchart holds a CRD in crds/, and returns the archive, its
// digest and the loaded chart.
func crdChart(t *testing.T) ([]byte, string, *chart.Loaded) {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"Chart.yaml":                  "apiVersion: v2\nname: app\nversion: 1.0.0\n",
		"charts/crds/Chart.yaml":      "apiVersion: v2\nname: crds\nversion: 0.1.0\n",
		"charts/crds/crds/crd-w.yaml": "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n",
	}
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	archive, _, digest, err := chart.Pack(dir)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := chart.Load(archive)
	if err != nil {
		t.Fatal(err)
	}
	return archive, digest, &chart.Loaded{Chart: ch, Digest: digest}
}

// TestBundleCRDsByReference: CRD files that are their chart's are stored by name only and read
// back from the chart (through the chart cache, or the Object Store); a CRD file the chart does
// not hold as it is stays in the bundle whole.
func TestBundleCRDsByReference(t *testing.T) {
	ctx := context.Background()
	archive, digest, loaded := crdChart(t)
	blobs := bustest.NewBlobs()
	chartRef, err := blobs.PutBlob(ctx, "charts/"+digest, archive)
	if err != nil {
		t.Fatal(err)
	}
	crds := CRDFiles(loaded.Chart.CRDObjects())
	if len(crds) != 1 || crds[0].Data == "" {
		t.Fatalf("CRD files of the chart: %+v", crds)
	}
	if !CRDsOfChart(loaded.Chart, crds) {
		t.Fatal("the chart's own CRD files are not recognised as its own")
	}
	if changed := []CRDFile{{Name: crds[0].Name, Data: crds[0].Data + "# edited\n"}}; CRDsOfChart(loaded.Chart, changed) {
		t.Error("a CRD file with other content is taken for the chart's")
	}
	b := RenderBundle{Manifest: "", CRDs: crds, CRDChart: &events.ChartSource{Ref: chartRef, Digest: digest, Name: "app"}}
	raw, err := json.Marshal(StoredBundle(b))
	if err != nil {
		t.Fatal(err)
	}
	var stored RenderBundle
	if err := json.Unmarshal(raw, &stored); err != nil {
		t.Fatal(err)
	}
	if stored.CRDs[0].Data != "" {
		t.Fatalf("stored bundle keeps the CRD's data: %d bytes", len(stored.CRDs[0].Data))
	}
	for name, charts := range map[string]*chart.Cache{"chart cache": chart.NewCache(2), "object store": nil} {
		got, err := withCRDData(ctx, blobs, charts, &stored)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if diff := cmp.Diff(crds, got.CRDs); diff != "" {
			t.Errorf("%s: CRDs read back (-want +got):\n%s", name, diff)
		}
	}
	// A bundle with its CRDs whole is left as it is.
	if out, err := withCRDData(ctx, blobs, nil, &b); err != nil || out != &b {
		t.Errorf("bundle with CRD data: %p, %v; want it unchanged", out, err)
	}
}
