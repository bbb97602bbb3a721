package coordinator

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/clusterspec"
	"github.com/sealane/sealane/pkg/rollout"
)

// bigRecord is the record of an n-cluster rollout whose every cluster deployed, with its last
// wave's (60 %) deploy requests still in its outbox.
func bigRecord(t testing.TB, n int) *Record {
	r, _ := fleetRecord(t, n, true)
	return r
}

// fleetRecord is a rollout of n clusters in two waves (40 % and 60 %) each started in turn,
// the outbox holding the last one's deploy requests; every cluster of the first wave deployed,
// and of the last one too when finishLast. It returns the last wave's Deploys.
func fleetRecord(t testing.TB, n int, finishLast bool) (*Record, []rollout.Deploy) {
	t.Helper()
	var fleet []clusterspec.Spec
	for i := range n {
		ring := map[bool]string{true: "a", false: "b"}[i < n*4/10]
		fleet = append(fleet, clusterspec.Spec{Name: fmt.Sprintf("c-%05d", i), Labels: map[string]string{"ring": ring}})
	}
	spec, err := rollout.Parse("spec.yaml", []byte(`chart: {path: chart}
release: web
namespace: "web-{{ .Cluster }}"
clusters: {selector: ""}
waves:
  - {name: first, selector: ring=a, maxParallel: 100%}
  - {name: rest, selector: ring=b, maxParallel: 100%}
`))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := rollout.Resolve(spec, fleet)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	r := &Record{State: rollout.New("ro-12345678", plan, now), ReleaseKey: "web-{{ .Cluster }}/web", Request: events.RequestedData{
		Chart:     events.ChartSource{Ref: "nats-obj://sealane-blobs/charts/" + fmt.Sprintf("%064d", 1), Digest: fmt.Sprintf("%064d", 1)},
		InputsRef: "nats-obj://sealane-blobs/rollout-ro-12345678/inputs", Timeout: events.Duration(10 * time.Minute)}}
	var last []rollout.Deploy
	for w := range plan.Waves {
		next, actions := rollout.Next(r.State, now)
		r.State, r.Outbox = next, nil
		if err := r.queue(actions, now); err != nil {
			t.Fatal(err)
		}
		for _, a := range actions {
			d, ok := a.(rollout.Deploy)
			if !ok {
				continue
			}
			if w == len(plan.Waves)-1 {
				last = append(last, d)
				if !finishLast {
					continue
				}
			}
			if err := r.apply(rollout.ClusterDeployed{Cluster: d.Target.Cluster, Revision: 1, Attempt: d.Attempt}, now); err != nil {
				t.Fatal(err)
			}
		}
	}
	return r, last
}

// values returns every key of the bucket that holds a value, with its size.
func values(t *testing.T, w *world) map[string]int {
	t.Helper()
	keys, err := w.kv.Keys(w.ctx, ">")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, k := range keys {
		e, err := w.kv.Get(w.ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		out[k] = len(e.Value())
	}
	return out
}

// TestLargeFleetRecordStoredInParts: the record of a 10,000-cluster rollout in its last wave
// (11 MB of JSON; 870 KB gzip'd, too close to NATS's 1 MB max_payload) is stored in parts, no
// value over 256 KiB; a change of one cluster writes a part or two and the manifest, and the
// parts it replaced are deleted; it reads back the same, also in a second process (no cache).
func TestLargeFleetRecordStoredInParts(t *testing.T) {
	w := newWorld(t)
	s := Store{KV: w.kv}
	r := bigRecord(t, 10000)
	raw, _ := json.Marshal(r)
	start := time.Now()
	if _, err := s.create(w.ctx, r); err != nil {
		t.Fatal(err)
	}
	created := values(t, w)
	t.Logf("10,000 clusters, %d outbox events: JSON %d KB in %d values, stored in %s", len(r.Outbox), len(raw)>>10, len(created), time.Since(start))
	for k, n := range created {
		if n > inlineMax {
			t.Errorf("%s holds %d KB, over %d KB", k, n>>10, inlineMax>>10)
		}
	}
	if len(created) < 10 || created[recordKey(r.State.ID)] > 16<<10 {
		t.Fatalf("%d values, manifest %d bytes: want the record in parts", len(created), created[recordKey(r.State.ID)])
	}
	start = time.Now()
	if _, err := s.update(w.ctx, r.State.ID, func(r *Record) error {
		r.State.Clusters[5000].Reason = "changed"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	after := values(t, w)
	var added, dropped []string
	for k := range after {
		if _, ok := created[k]; !ok {
			added = append(added, k)
		}
	}
	for k := range created {
		if _, ok := after[k]; !ok {
			dropped = append(dropped, k)
		}
	}
	t.Logf("one cluster changed: %d parts added, %d deleted, in %s", len(added), len(dropped), time.Since(start))
	if len(added) == 0 || len(added) > 3 || len(added) != len(dropped) {
		t.Errorf("one cluster's change added parts %v and deleted %v: want one to three, each replacing one", added, dropped)
	}
	parts.Purge() // as another process reads it
	back, _, err := s.Get(w.ctx, r.State.ID)
	if err != nil {
		t.Fatal(err)
	}
	r.State.Clusters[5000].Reason = "changed"
	want, _ := json.Marshal(r)
	if got, _ := json.Marshal(back); string(got) != string(want) {
		t.Errorf("read back %d bytes, want the %d written", len(got), len(want))
	}
	if _, err := s.update(w.ctx, r.State.ID, func(r *Record) error { r.State.Clusters = r.State.Clusters[:10]; r.Outbox = nil; return nil }); err != nil {
		t.Fatal(err)
	}
	got, err := s.read(w.ctx, r.State.ID)
	if err != nil {
		t.Fatal(err)
	}
	m := got.m
	if again, _ := json.Marshal(got.r); sha256.Sum256(again) != got.sum {
		t.Errorf("a record read and encoded again differs from its stored JSON: every update would write")
	}
	left := values(t, w)
	named := 1
	if m != nil {
		named += len(m.Parts)
	}
	if len(left) != named {
		t.Errorf("%d values left after the record shrank, want its key and the %d parts it names: %v", len(left), named-1, left)
	}
}

// TestRecordsStoredBefore: plain JSON and gzip'd records (stored before parts) are read.
func TestRecordsStoredBefore(t *testing.T) {
	w := newWorld(t)
	r := bigRecord(t, 20)
	raw, _ := json.Marshal(r)
	gz, err := encodeRecord(raw)
	if err != nil {
		t.Fatal(err)
	}
	for i, value := range [][]byte{raw, gz} {
		id := fmt.Sprintf("ro-old%d", i)
		if _, err := w.kv.Put(w.ctx, recordKey(id), value); err != nil {
			t.Fatal(err)
		}
		back, _, err := Store{KV: w.kv}.Get(w.ctx, id)
		if err != nil || len(back.State.Clusters) != 20 || len(back.Outbox) != len(r.Outbox) {
			t.Fatalf("record %d: %v", i, err)
		}
	}
}

// TestPartCacheBoundedBySize: the parts kept add up to at most the bound, the least recently
// used dropped first, and a part is kept without the spare capacity of the buffer it was read
// into.
func TestPartCacheBoundedBySize(t *testing.T) {
	c := newPartCache(100)
	read := make([]byte, 40, 4096)
	c.Add("a", read)
	c.Add("b", make([]byte, 40))
	if _, ok := c.Get("a"); !ok { // a is now the most recently used
		t.Fatal("a dropped below the bound")
	}
	c.Add("c", make([]byte, 40))
	if _, ok := c.Get("b"); ok {
		t.Error("b, the least recently used, kept past the bound")
	}
	for _, k := range []string{"a", "c"} {
		if _, ok := c.Get(k); !ok {
			t.Errorf("%s dropped", k)
		}
	}
	if got, _ := c.Get("a"); cap(got) >= 4096 {
		t.Errorf("a kept with the capacity of the buffer it was read into (%d), not its 40 bytes", cap(got))
	}
	if c.size != 80 {
		t.Errorf("size %d, want 80", c.size)
	}
	c.Add("huge", make([]byte, 101))
	if _, ok := c.Get("huge"); ok || c.size != 80 {
		t.Errorf("a part larger than the bound was kept (size %d)", c.size)
	}
}
