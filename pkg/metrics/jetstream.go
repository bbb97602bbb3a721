package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/sealane/sealane/pkg/bus"
)

// ConsumerLister lists the durable consumers of the deploy stream: a *bus.Bus.
type ConsumerLister interface {
	Consumers(ctx context.Context) ([]bus.ConsumerView, error)
}

// scrapeTimeout bounds the consumer listing of one scrape.
const scrapeTimeout = 3 * time.Second

// consumerCollector reads the consumers' lag from JetStream at scrape time.
type consumerCollector struct {
	bus        ConsumerLister
	log        *zap.Logger
	pending    *prometheus.Desc
	ackPending *prometheus.Desc
	waiting    *prometheus.Desc
	up         *prometheus.Desc
}

// NewConsumerCollector returns a collector of the pending, ack-pending and waiting counts of
// every durable consumer b lists, read from JetStream at each scrape (within 3 s), and of
// whether that listing worked (sealane_jetstream_up).
func NewConsumerCollector(b ConsumerLister, log *zap.Logger) prometheus.Collector {
	if log == nil {
		log = zap.NewNop()
	}
	labels := []string{"consumer"}
	return &consumerCollector{
		bus: b,
		log: log,
		pending: prometheus.NewDesc("sealane_jetstream_consumer_pending",
			"Messages of the deploy stream that match a consumer's filters and were not delivered yet.", labels, nil),
		ackPending: prometheus.NewDesc("sealane_jetstream_consumer_ack_pending",
			"Messages a consumer was delivered and did not acknowledge yet (in work or waiting to retry).", labels, nil),
		waiting: prometheus.NewDesc("sealane_jetstream_consumer_waiting",
			"Open pull requests of a consumer: its workers waiting for a message.", labels, nil),
		up: prometheus.NewDesc("sealane_jetstream_up",
			"1 when the last scrape could list the deploy stream's consumers, else 0.", nil, nil),
	}
}

// Describe sends the descriptors of the collector's metrics.
func (c *consumerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.pending
	ch <- c.ackPending
	ch <- c.waiting
	ch <- c.up
}

// Collect lists the consumers and sends their counts.
func (c *consumerCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	views, err := c.bus.Consumers(ctx)
	if err != nil {
		c.log.Warn("metrics: list JetStream consumers", zap.Error(err))
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	for _, v := range views {
		ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(v.NumPending), v.Name)
		ch <- prometheus.MustNewConstMetric(c.ackPending, prometheus.GaugeValue, float64(v.NumAckPending), v.Name)
		ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, float64(v.NumWaiting), v.Name)
	}
}
