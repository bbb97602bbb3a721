package metrics_test

import (
	"errors"
	"testing"

	"github.com/sealane/sealane/pkg/metrics"
)

// BenchmarkHandling is the runner's per-event cost of metrics: off (nil) and on.
func BenchmarkHandling(b *testing.B) {
	retry := errors.New("retry")
	for name, m := range map[string]*metrics.Metrics{"off": nil, "on": metrics.New()} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					h := m.Start("applier", t0)
					h.Event("io.sealane.deploy.phase_applied.v1", t0, t0)
					var err error
					if i%16 == 0 {
						err = retry
					}
					h.Done(err, t0)
					i++
				}
			})
		})
	}
}
