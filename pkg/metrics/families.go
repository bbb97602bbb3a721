package metrics

import (
	"regexp"

	"github.com/prometheus/client_golang/prometheus"
)

// Type is a metric family's type, as the exposition format names it.
type Type string

// The Type values of sealane's metric families.
const (
	Counter   Type = "counter"
	Gauge     Type = "gauge"
	Histogram Type = "histogram"
)

// Names of the gauges the services count at each scrape (NewCountCollector).
const (
	// LeaseQueuedRequests counts the deploy requests waiting for their release's lease (read
	// from NATS: the same on every replica).
	LeaseQueuedRequests = "sealane_lease_queued_requests"
	// RolloutActive counts the fleet rollouts not finished yet (read from NATS).
	RolloutActive = "sealane_rollout_active"
	// RolloutsHalted counts the halted fleet rollouts a coordinator replica drives: summed over
	// the replicas, every halted rollout once.
	RolloutsHalted = "sealane_rollouts_halted"
)

// Families returns the name and type of every sealane_ metric family a sealane process may
// serve: those New registers, the JetStream consumer collector's and the count collectors'
// (LeaseQueuedRequests, RolloutActive, RolloutsHalted). The Go runtime and process collectors
// are left out.
func Families() map[string]Type {
	out := map[string]Type{LeaseQueuedRequests: Gauge, RolloutActive: Gauge, RolloutsHalted: Gauge}
	for _, c := range New().own() {
		for _, name := range describedNames(c) {
			out[name] = typeOf(c)
		}
	}
	for _, name := range describedNames(NewConsumerCollector(nil, true, nil)) {
		out[name] = Gauge
	}
	return out
}

// fqName finds a descriptor's name in its String form, the one place client_golang shows it.
var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// describedNames are the names of the descriptors c describes.
func describedNames(c prometheus.Collector) []string {
	ch := make(chan *prometheus.Desc, 64) // more than any of sealane's collectors describes
	c.Describe(ch)
	close(ch)
	var names []string
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			names = append(names, m[1])
		}
	}
	return names
}

// typeOf is the type of one of New's collectors. A Gauge also has a Counter's methods: it is
// matched first.
func typeOf(c prometheus.Collector) Type {
	switch c.(type) {
	case *prometheus.GaugeVec, prometheus.Gauge:
		return Gauge
	case *prometheus.CounterVec, prometheus.Counter:
		return Counter
	case *prometheus.HistogramVec, prometheus.Histogram:
		return Histogram
	}
	return "untyped"
}
