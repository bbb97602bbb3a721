package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// countCollector reads one gauge from NATS at scrape time.
type countCollector struct {
	count func(context.Context) (int, error)
	log   *zap.Logger
	desc  *prometheus.Desc
}

// NewCountCollector returns a collector of the gauge name, whose value count reads at each
// scrape (within 3 s): what the cluster holds, such as the requests queued for release leases
// (lease.Manager.QueuedRequests) or the active rollouts, rather than what this process saw. A
// failed read is logged and leaves the gauge out of that scrape.
func NewCountCollector(name, help string, count func(context.Context) (int, error), log *zap.Logger) prometheus.Collector {
	if log == nil {
		log = zap.NewNop()
	}
	return &countCollector{count: count, log: log, desc: prometheus.NewDesc(name, help, nil, nil)}
}

// Describe sends the collector's descriptor.
func (c *countCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect reads the count.
func (c *countCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	n, err := c.count(ctx)
	if err != nil {
		c.log.Warn("metrics: read "+c.desc.String(), zap.Error(err))
		return
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n))
}
