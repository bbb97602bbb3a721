package gitsource

import (
	"fmt"
	"testing"
	"time"

	"github.com/sealane/sealane/pkg/gitsource/gittest"
)

// BenchmarkCheckout measures, on a repository of 20 commits of 50 files each, a first clone,
// a cached Checkout and an incremental fetch of one new commit (one of each per op), with the
// requests and bytes each took from the server.
func BenchmarkCheckout(b *testing.B) {
	srv := gittest.NewServer(b)
	repo := srv.Init(b, "timed")
	var last string
	for c := range 20 {
		files := map[string]string{}
		for f := range 50 {
			files[fmt.Sprintf("chart/templates/t%02d.yaml", f)] = fmt.Sprintf("# commit %d file %d\n%0512d\n", c, f, c*f)
		}
		last = repo.Commit(b, files, fmt.Sprintf("commit %d", c))
	}
	var clone, cached, incremental time.Duration
	var cloneBytes, incrementalBytes int64
	b.ResetTimer()
	for i := range b.N {
		o := Options{CacheDir: b.TempDir()}
		measure := func(commit string) (time.Duration, int64) {
			n := srv.BytesSent()
			start := time.Now()
			if _, err := Checkout(b.Context(), Source{URL: repo.URL(), Commit: commit, Path: "chart"}, b.TempDir(), o); err != nil {
				b.Fatal(err)
			}
			return time.Since(start), srv.BytesSent() - n
		}
		d, n := measure(last)
		clone, cloneBytes = clone+d, cloneBytes+n
		d, _ = measure(last)
		cached += d
		b.StopTimer()
		next := repo.Commit(b, map[string]string{"chart/templates/t00.yaml": fmt.Sprintf("changed %d\n", i)}, "one more")
		b.StartTimer()
		d, n = measure(next)
		incremental, incrementalBytes = incremental+d, incrementalBytes+n
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(per(clone), "clone-ms")
	b.ReportMetric(per(cached), "cached-ms")
	b.ReportMetric(per(incremental), "incremental-ms")
	b.ReportMetric(float64(incrementalBytes)/float64(cloneBytes), "incremental/clone-bytes")
}
