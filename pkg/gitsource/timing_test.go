package gitsource

import (
	"fmt"
	"testing"
	"time"

	"github.com/sealane/sealane/pkg/gitsource/gittest"
)

// TestTimings logs how long a first clone, a cached Checkout and an incremental fetch take
// on a repository of 20 commits of 50 files each (go test -v -run Timings).
func TestTimings(t *testing.T) {
	if testing.Short() {
		t.Skip("timings only")
	}
	srv := gittest.NewServer(t)
	repo := srv.Init(t, "timed")
	var last string
	for c := 0; c < 20; c++ {
		files := map[string]string{}
		for f := 0; f < 50; f++ {
			files[fmt.Sprintf("chart/templates/t%02d.yaml", f)] = fmt.Sprintf("# commit %d file %d\n%0512d\n", c, f, c*f)
		}
		last = repo.Commit(t, files, fmt.Sprintf("commit %d", c))
	}
	o := opts(t)
	measure := func(name, commit string) {
		t.Helper()
		n, b := srv.Requests(), srv.BytesSent()
		start := time.Now()
		mustCheckout(t, repo.URL(), commit, "chart", o)
		t.Logf("%-18s %8v  %d requests  %7d bytes received", name, time.Since(start).Round(100*time.Microsecond),
			srv.Requests()-n, srv.BytesSent()-b)
	}
	measure("first clone", last)
	measure("cached checkout", last)
	next := repo.Commit(t, map[string]string{"chart/templates/t00.yaml": "changed\n"}, "one more")
	measure("incremental fetch", next)
	measure("cached checkout", next)
}
