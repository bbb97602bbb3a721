package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/sealane/sealane/pkg/bus"
)

// ConsumerLister lists the durable consumers of the deploy stream and asks JetStream whether
// it answers: a *bus.Bus.
type ConsumerLister interface {
	Consumers(ctx context.Context) ([]bus.ConsumerView, error)
	Ping(ctx context.Context) error
}

// scrapeTimeout bounds the consumer listing of one scrape.
const scrapeTimeout = 3 * time.Second

// consumerCollector reads the consumers' lag from JetStream at scrape time.
type consumerCollector struct {
	bus        ConsumerLister
	lag        bool // list the consumers (a process that runs stages may; others' users may not)
	log        *zap.Logger
	pending    *prometheus.Desc
	ackPending *prometheus.Desc
	waiting    *prometheus.Desc
	up         *prometheus.Desc
}

// NewConsumerCollector returns a collector of whether JetStream answers at each scrape
// (sealane_jetstream_up, within 3 s) and, with lag, of the pending, ack-pending and waiting
// counts of every durable consumer b lists. Only a process that runs stages lists them: the
// webhook intake's and the coordinator's NATS users may not.
func NewConsumerCollector(b ConsumerLister, lag bool, log *zap.Logger) prometheus.Collector {
	if log == nil {
		log = zap.NewNop()
	}
	labels := []string{"consumer"}
	return &consumerCollector{
		bus: b,
		lag: lag,
		log: log,
		pending: prometheus.NewDesc("sealane_jetstream_consumer_pending",
			"Messages of the deploy stream that match a consumer's filters and were not delivered yet.", labels, nil),
		ackPending: prometheus.NewDesc("sealane_jetstream_consumer_ack_pending",
			"Messages a consumer was delivered and did not acknowledge yet (in work or waiting to retry).", labels, nil),
		waiting: prometheus.NewDesc("sealane_jetstream_consumer_waiting",
			"Open pull requests of a consumer: its workers waiting for a message.", labels, nil),
		up: prometheus.NewDesc("sealane_jetstream_up",
			"1 when JetStream answered the last scrape (and the process that lists the deploy stream's consumers could), else 0.", nil, nil),
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
	if !c.lag {
		up := 1.0
		if err := c.bus.Ping(ctx); err != nil {
			c.log.Warn("metrics: JetStream does not answer", zap.Error(err))
			up = 0
		}
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up)
		return
	}
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
