package coordinator

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sealane/sealane/pkg/rollout"
)

// waveRecord is a rollout of n clusters in two waves (40 % and 60 %) whose first wave
// succeeded and whose last one is deploying, its requests published: the Deploys of that wave
// are returned.
func waveRecord(t testing.TB, n int) (*Record, []rollout.Deploy) {
	t.Helper()
	r, last := fleetRecord(t, n, false)
	r.Outbox = nil // published
	return r, last
}

// deliverResults hands every deploy's result to c at once, each from its own goroutine (at
// most workers at a time), as the coordinator's consumer does; the first error is returned.
func deliverResults(w *world, c *Coordinator, id string, ds []rollout.Deploy, workers int) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	sem := make(chan struct{}, workers)
	for _, d := range ds {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			err := c.change(w.ctx, id, rollout.ClusterDeployed{Cluster: d.Target.Cluster, Revision: 1, Attempt: d.Attempt})
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = err
			}
		})
	}
	wg.Wait()
	return first
}

// TestResultsArrivingTogetherAreStoredTogether: 600 results of a rollout handled at once by
// 64 workers of one replica all reach its record, in far fewer writes than results (each write
// encodes the whole record), and the rollout ends succeeded; a result for a cluster not in
// the rollout is refused.
func TestResultsArrivingTogetherAreStoredTogether(t *testing.T) {
	w := newWorld(t)
	r, last := waveRecord(t, 1000)
	id := r.State.ID
	c := &Coordinator{KV: w.kv, Clock: time.Now}
	if _, err := c.store().create(w.ctx, r); err != nil {
		t.Fatal(err)
	}
	before := revision(t, w, id)
	if err := deliverResults(w, c, id, last, 64); err != nil {
		t.Fatal(err)
	}
	writes := revision(t, w, id) - before
	t.Logf("%d results stored in %d writes", len(last), writes)
	if writes == 0 || writes > uint64(len(last))/4 {
		t.Errorf("%d results took %d writes: want them grouped (at most a quarter as many)", len(last), writes)
	}
	got, _, err := (Store{KV: w.kv}).Get(w.ctx, id) // no cache: as stored
	if err != nil {
		t.Fatal(err)
	}
	if got.State.Phase != rollout.PhaseSucceeded {
		t.Fatalf("rollout %s after every result, want succeeded", got.State.Phase)
	}
	err = c.change(w.ctx, id, rollout.ClusterDeployed{Cluster: "elsewhere", Revision: 1})
	if !errors.Is(err, rollout.ErrUnknownCluster) {
		t.Errorf("a result of a cluster not in the rollout: %v, want unknown cluster", err)
	}
}

// TestBatchOfChangesKeepsEachOnesError: one commit of several changes, one of them for a
// cluster the rollout does not have and one with nothing to apply, stores the others and
// gives each change its own outcome.
func TestBatchOfChangesKeepsEachOnesError(t *testing.T) {
	w := newWorld(t)
	r, last := waveRecord(t, 10)
	id := r.State.ID
	c := &Coordinator{KV: w.kv, Clock: time.Now}
	if _, err := c.store().create(w.ctx, r); err != nil {
		t.Fatal(err)
	}
	deployed := func(d rollout.Deploy) change {
		return func(*Record) (rollout.Event, error) {
			return rollout.ClusterDeployed{Cluster: d.Target.Cluster, Revision: 1, Attempt: d.Attempt}, nil
		}
	}
	errs, err := c.commit(w.ctx, id, []change{
		deployed(last[1]),
		deployed(rollout.Deploy{Target: rollout.Target{Cluster: "elsewhere"}}),
		func(*Record) (rollout.Event, error) { return nil, nil },
		deployed(last[2]),
		deployed(last[0]),
	})
	if err != nil {
		t.Fatal(err)
	}
	if errs[0] != nil || !errors.Is(errs[1], rollout.ErrUnknownCluster) || errs[2] != nil || errs[3] != nil || errs[4] != nil {
		t.Fatalf("errors %v: want only the second's (unknown cluster)", errs)
	}
	got, _, err := (Store{KV: w.kv}).Get(w.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range last[:3] {
		if cs, _ := got.State.Cluster(d.Target.Cluster); cs.Status != rollout.StatusSucceeded {
			t.Errorf("%s: %s, want succeeded", d.Target.Cluster, cs.Status)
		}
	}
}

func revision(t testing.TB, w *world, id string) uint64 {
	t.Helper()
	e, err := w.kv.Get(w.ctx, recordKey(id))
	if err != nil {
		t.Fatal(err)
	}
	return e.Revision()
}

// BenchmarkResultsLargeFleet: the results of the last wave (6,000 clusters) of a
// 10,000-cluster rollout reach one replica's coordinator at once (64 workers, as its
// consumer runs): results stored a second.
func BenchmarkResultsLargeFleet(b *testing.B) {
	w := newWorld(b)
	for range b.N {
		b.StopTimer()
		r, last := waveRecord(b, 10000)
		r.State.ID = fmt.Sprintf("ro-%012d", time.Now().UnixNano()%1e12)
		c := &Coordinator{KV: w.kv, Clock: time.Now}
		if _, err := c.store().create(w.ctx, r); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		if err := deliverResults(w, c, r.State.ID, last, Workers); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(len(last))/time.Since(start).Seconds(), "results/s")
	}
}
