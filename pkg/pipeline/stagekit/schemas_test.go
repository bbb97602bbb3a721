package stagekit

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sealane/sealane/pkg/kube"
)

// schemaDoc is an OpenAPI document serving kind (group example.io, version v1), with a
// description that stripping drops.
func schemaDoc(t testing.TB, kind string) []byte {
	t.Helper()
	gvk := fmt.Sprintf("- group: example.io\n  version: v1\n  kind: %s\n", kind)
	doc := &openapi_v2.Document{Swagger: "2.0", Definitions: &openapi_v2.Definitions{AdditionalProperties: []*openapi_v2.NamedSchema{{
		Name: "io.example.v1." + kind,
		Value: &openapi_v2.Schema{Type: &openapi_v2.TypeItem{Value: []string{"object"}}, Description: strings.Repeat("words ", 100),
			VendorExtension: []*openapi_v2.NamedAny{{Name: "x-kubernetes-group-version-kind", Value: &openapi_v2.Any{Yaml: gvk}}}},
	}}}}
	raw, err := proto.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// schemaStep is one Get of a SchemaCache test: of cluster, after moving the clock by advance,
// with the cluster then serving the document of kind serve ("": unchanged).
type schemaStep struct {
	cluster, serve string
	advance        time.Duration
	// wantKind is the kind the schema must know; sameAs the earlier step (index) whose digest
	// it must have, -1 for none, and differs one whose digest it must not have.
	wantKind        string
	sameAs, differs int
}

func TestSchemaCacheSharesByDigest(t *testing.T) {
	tests := []struct {
		name                string
		clusters, documents int
		steps               []schemaStep
		wantFetches         int
		wantParses          int64
	}{
		{name: "two clusters serving one document share one parse", clusters: 10, documents: 4,
			steps: []schemaStep{{cluster: "a", serve: "Widget", wantKind: "Widget", sameAs: -1, differs: -1},
				{cluster: "b", serve: "Widget", wantKind: "Widget", sameAs: 0, differs: -1}},
			wantFetches: 2, wantParses: 1},
		{name: "a cluster is not fetched again within the TTL", clusters: 10, documents: 4,
			steps: []schemaStep{{cluster: "a", serve: "Widget", wantKind: "Widget", sameAs: -1, differs: -1},
				{cluster: "a", advance: time.Minute, wantKind: "Widget", sameAs: 0, differs: -1}},
			wantFetches: 1, wantParses: 1},
		{name: "an upgraded cluster gets the new schema after the TTL", clusters: 10, documents: 4,
			steps: []schemaStep{{cluster: "a", serve: "Widget", wantKind: "Widget", sameAs: -1, differs: -1},
				{cluster: "b", serve: "Widget", wantKind: "Widget", sameAs: 0, differs: -1},
				{cluster: "a", serve: "Gadget", advance: 3 * time.Minute, wantKind: "Gadget", sameAs: -1, differs: 0},
				{cluster: "b", wantKind: "Widget", sameAs: 0, differs: -1}},
			wantFetches: 4, wantParses: 2},
		{name: "an evicted schema is parsed again", clusters: 10, documents: 1,
			steps: []schemaStep{{cluster: "a", serve: "Widget", wantKind: "Widget", sameAs: -1, differs: -1},
				{cluster: "b", serve: "Gadget", wantKind: "Gadget", sameAs: -1, differs: 0},
				{cluster: "a", wantKind: "Widget", sameAs: 0, differs: 1}},
			wantFetches: 3, wantParses: 3},
		{name: "an evicted cluster is fetched again but not parsed", clusters: 1, documents: 4,
			steps: []schemaStep{{cluster: "a", serve: "Widget", wantKind: "Widget", sameAs: -1, differs: -1},
				{cluster: "b", serve: "Gadget", wantKind: "Gadget", sameAs: -1, differs: 0},
				{cluster: "a", wantKind: "Widget", sameAs: 0, differs: 1}},
			wantFetches: 3, wantParses: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
			c := newSchemaCache(SchemaTTL, func() time.Time { return now }, tt.clusters, tt.documents)
			serving, fetches := map[string][]byte{}, 0
			c.fetch = func(_ context.Context, cl *kube.Cluster, _ []string) ([]byte, string, error) {
				fetches++
				return serving[cl.Name], "", nil
			}
			var digests []string
			for i, st := range tt.steps {
				now = now.Add(st.advance)
				if st.serve != "" {
					serving[st.cluster] = schemaDoc(t, st.serve)
				}
				got, err := c.Get(context.Background(), &kube.Cluster{Name: st.cluster})
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if !got.Schema.Knows(schema.GroupVersionKind{Group: "example.io", Version: "v1", Kind: st.wantKind}) {
					t.Errorf("step %d: the schema does not know %s", i, st.wantKind)
				}
				if src := got.Schema.Source(); !strings.Contains(src, "cluster "+st.cluster) {
					t.Errorf("step %d: source %q does not name cluster %s", i, src, st.cluster)
				}
				if st.sameAs >= 0 && got.Digest != digests[st.sameAs] {
					t.Errorf("step %d: digest %s, want step %d's %s", i, got.Digest, st.sameAs, digests[st.sameAs])
				}
				if st.differs >= 0 && got.Digest == digests[st.differs] {
					t.Errorf("step %d: digest is step %d's", i, st.differs)
				}
				digests = append(digests, got.Digest)
			}
			if fetches != tt.wantFetches || c.Parses() != tt.wantParses {
				t.Errorf("fetched %d, parsed %d times; want %d and %d", fetches, c.Parses(), tt.wantFetches, tt.wantParses)
			}
		})
	}
}

// TestSchemaCacheDigestIsContent checks that the digest is that of the document's
// deterministic encoding (the render key's, as before the cache shared schemas), taken before
// the parse strips the document.
func TestSchemaCacheDigestIsContent(t *testing.T) {
	raw := schemaDoc(t, "Widget")
	doc := &openapi_v2.Document{}
	if err := proto.Unmarshal(raw, doc); err != nil {
		t.Fatal(err)
	}
	want, err := documentDigest(doc)
	if err != nil {
		t.Fatal(err)
	}
	c := NewSchemaCache(SchemaTTL, nil)
	c.fetch = func(context.Context, *kube.Cluster, []string) ([]byte, string, error) { return raw, "", nil }
	got, err := c.Get(context.Background(), &kube.Cluster{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest != want {
		t.Errorf("digest %s, want the deterministic encoding's %s", got.Digest, want)
	}
}

// TestSchemaCacheConcurrentClustersParseOnce gets one document's schema for many clusters at
// once: it is parsed once.
func TestSchemaCacheConcurrentClustersParseOnce(t *testing.T) {
	raw := schemaDoc(t, "Widget")
	c := NewSchemaCache(SchemaTTL, nil)
	c.fetch = func(context.Context, *kube.Cluster, []string) ([]byte, string, error) { return raw, "", nil }
	errs := make(chan error, 20)
	for i := range 20 {
		go func() {
			_, err := c.Get(context.Background(), &kube.Cluster{Name: fmt.Sprintf("c%d", i)})
			errs <- err
		}()
	}
	for range 20 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if c.Parses() != 1 {
		t.Errorf("parsed %d times, want once", c.Parses())
	}
}

// BenchmarkSchemaCacheFleet gets the schema of 10,000 clusters serving one document and
// reports what the cache keeps per cluster (live heap after a GC): the digest entry alone,
// the schema being shared (one parse).
func BenchmarkSchemaCacheFleet(b *testing.B) {
	raw := schemaDoc(b, "Widget")
	const fleet = 10000
	for range b.N {
		c := NewSchemaCache(SchemaTTL, nil)
		c.fetch = func(context.Context, *kube.Cluster, []string) ([]byte, string, error) { return raw, "", nil }
		clusters := make([]*kube.Cluster, fleet)
		for i := range clusters {
			clusters[i] = &kube.Cluster{Name: fmt.Sprintf("cluster-%05d", i)}
		}
		before := liveHeap()
		for _, cl := range clusters {
			if _, err := c.Get(context.Background(), cl); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(liveHeap()-before)/fleet, "B-kept/cluster")
		b.ReportMetric(float64(c.Parses()), "parses")
		runtime.KeepAlive(c)
		runtime.KeepAlive(clusters)
	}
}

func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestSchemaCacheAsksIfChanged: a cluster serving a document another cluster served before
// is answered "not modified" by its ETag and not downloaded; a new document is; a document
// whose schema was evicted is downloaded again in full.
func TestSchemaCacheAsksIfChanged(t *testing.T) {
	c := newSchemaCache(SchemaTTL, nil, 100, 1)
	docs := map[string][]byte{"A": schemaDoc(t, "A"), "B": schemaDoc(t, "B")}
	serves := map[string]string{"c1": "A", "c2": "A", "c3": "A", "c4": "B", "c5": "A"}
	var downloads, offered []string
	c.fetch = func(_ context.Context, cl *kube.Cluster, etags []string) ([]byte, string, error) {
		doc := serves[cl.Name]
		offered = append(offered, strings.Join(etags, ","))
		if slices.Contains(etags, "E"+doc) {
			return nil, "E" + doc, nil
		}
		downloads = append(downloads, cl.Name)
		return docs[doc], "E" + doc, nil
	}
	for _, name := range []string{"c1", "c2", "c3", "c4", "c5"} {
		got, err := c.Get(context.Background(), &kube.Cluster{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		if !got.Schema.Knows(schema.GroupVersionKind{Group: "example.io", Version: "v1", Kind: serves[name]}) {
			t.Errorf("%s: not the schema of document %s", name, serves[name])
		}
	}
	// c5's document A was evicted by B (one schema kept): its not-modified answer is no use
	if want := []string{"c1", "c4", "c5"}; !slices.Equal(downloads, want) {
		t.Errorf("downloaded for %v, want %v (offered ETags %q)", downloads, want, offered)
	}
	if c.NotModified() != 2 || c.Parses() != 3 {
		t.Errorf("%d not modified, %d parses; want 2 and 3", c.NotModified(), c.Parses())
	}
}
