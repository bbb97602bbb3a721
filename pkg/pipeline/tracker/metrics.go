package tracker

import (
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/metrics"
	"github.com/sealane/sealane/pkg/track"
)

// podCount keeps sealane_tracker_pods_watched for one tracked phase: it remembers how many
// pods each target had when last seen. Called from Track's goroutine only.
type podCount struct {
	m     *metrics.Metrics
	byRef map[manifest.Ref]int
	total int
}

// seen is track.Options.OnPods.
func (c *podCount) seen(p track.PodsSeen) {
	delta := len(p.Pods) - c.byRef[p.Ref]
	c.byRef[p.Ref] = len(p.Pods)
	c.total += delta
	c.m.PodsWatched(delta)
}

// done takes the phase's pods out of the gauge.
func (c *podCount) done() { c.m.PodsWatched(-c.total) }
