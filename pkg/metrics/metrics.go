// Package metrics holds the Prometheus collectors of sealane's services and the /metrics
// handler that serves them. A nil *Metrics is valid and measures nothing: the embedded CLI and
// benchmarks run without it, at the cost of a nil check per hook.
package metrics

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// namespace prefixes every metric name.
const namespace = "sealane"

// Metrics is one process's collectors and the registry that serves them.
type Metrics struct {
	// Registry holds this process's collectors (and the Go and process collectors); tests
	// read it with prometheus/testutil.
	Registry *prometheus.Registry

	handled   *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	inFlight  *prometheus.GaugeVec
	hop       *prometheus.HistogramVec
	stagesMu  sync.RWMutex
	stages    map[string]*stageChildren
	handledMu sync.RWMutex
	outcomes  map[handledKey]*handled

	redeliveries *prometheus.CounterVec
	deadLetters  *prometheus.CounterVec

	deploys        *prometheus.HistogramVec
	resources      *prometheus.CounterVec
	phases         *prometheus.HistogramVec
	trackedObjects prometheus.Gauge
	trackedPods    prometheus.Gauge
	informers      prometheus.Gauge

	leaseQueued    prometheus.Counter
	leaseTakeovers *prometheus.CounterVec

	webhookRequests *prometheus.CounterVec
	webhookDeploys  *prometheus.CounterVec

	rollouts       *prometheus.CounterVec
	halted         prometheus.Counter
	clusterResults *prometheus.CounterVec
	outbox         *prometheus.CounterVec
}

// durationBuckets spread from 5 ms to about 20 minutes: event handling and phases.
var durationBuckets = prometheus.ExponentialBuckets(0.005, 2.5, 14)

// deployBuckets spread from 1 s to about an hour: whole deploys.
var deployBuckets = []float64{1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600}

// New returns the collectors of one process, registered on a registry of their own together
// with the Go runtime and process collectors.
func New() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		stages:   map[string]*stageChildren{},
		outcomes: map[handledKey]*handled{},
		handled: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: "stage", Name: "events_handled_total",
			Help: "Events a stage handled, by stage, event type and outcome (ok, retry, permanent, ignored, duplicate-outbox)."},
			[]string{"stage", "type", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Subsystem: "stage", Name: "handle_duration_seconds",
			Help: "How long a stage took to handle an event (any outcome), from delivery to the published outbox, by stage and event type.", Buckets: durationBuckets},
			[]string{"stage", "type"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Subsystem: "stage", Name: "handlers_in_flight",
			Help: "Events a stage is handling right now."}, []string{"stage"}),
		hop: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Subsystem: "stage", Name: "hop_latency_seconds",
			Help: "Time from an event's creation to the start of its handler (queueing and delivery), by stage.", Buckets: durationBuckets},
			[]string{"stage"}),
		redeliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: "bus", Name: "redeliveries_total",
			Help: "Deliveries of a message that was delivered before (a retry or an expired ack wait), by consumer."}, []string{"consumer"}),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: "bus", Name: "dead_letters_total",
			Help: "Messages a consumer gave up on, by consumer and reason (permanent, max_deliver)."}, []string{"consumer", "reason"}),
		deploys: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Subsystem: "deploy", Name: "duration_seconds",
			Help:    "Duration of finished deploys from request to the recorder's result, by kind (install, upgrade, rollback, uninstall, test) and outcome (succeeded, failed).",
			Buckets: deployBuckets}, []string{"kind", "outcome"}),
		resources: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: "deploy", Name: "resources_applied_total",
			Help: "Resources the applier handled, by action (created, configured, unchanged, recreated, deleted, kept, absent)."}, []string{"action"}),
		phases: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Subsystem: "deploy", Name: "phase_duration_seconds",
			Help: "Duration of one plan phase's step: apply (the applier) or track (the tracker, until ready or failed).", Buckets: durationBuckets},
			[]string{"step"}),
		trackedObjects: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Subsystem: "tracker", Name: "objects_watched",
			Help: "Resources the tracker is waiting for right now."}),
		trackedPods: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Subsystem: "tracker", Name: "pods_watched",
			Help: "Pods whose logs and states the tracker follows right now."}),
		informers: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Subsystem: "tracker", Name: "informers_open",
			Help: "Kubernetes informers the tracker has open."}),
		leaseQueued: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Subsystem: "lease", Name: "queued_total",
			Help: "Deploy requests that had to queue for their release's lease."}),
		leaseTakeovers: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: "lease", Name: "takeovers_total",
			Help: "Release leases taken over from another deploy, by reason (expired, holder_ended)."}, []string{"reason"}),
		webhookRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: "webhook", Name: "requests_total",
			Help: "Webhook deliveries received, by provider and outcome."}, []string{"provider", "outcome"}),
		webhookDeploys: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: "webhook", Name: "deploys_requested_total",
			Help: "Deploy requests the webhook intake published, by provider."}, []string{"provider"}),
		rollouts: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: "rollout", Name: "finished_total",
			Help: "Fleet rollouts that ended, by final state."}, []string{"state"}),
		halted: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Subsystem: "rollout", Name: "halted_total",
			Help: "Fleet rollouts that halted (a wave failed past its limits and the rollout waits for a retry or an abort), counted when the coordinator published the halted event."}),
		clusterResults: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: "rollout", Name: "cluster_results_total",
			Help: "Per-cluster deploy results of fleet rollouts, by outcome."}, []string{"outcome"}),
		outbox: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: "rollout", Name: "outbox_publishes_total",
			Help: "Deploy requests the rollout coordinator published from its outbox, by result (ok, error)."}, []string{"result"}),
	}
	m.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.Registry.MustRegister(m.own()...)
	return m
}

// own are the sealane_ collectors New registers.
func (m *Metrics) own() []prometheus.Collector {
	return []prometheus.Collector{
		m.handled, m.duration, m.inFlight, m.hop, m.redeliveries, m.deadLetters,
		m.deploys, m.resources, m.phases, m.trackedObjects, m.trackedPods, m.informers,
		m.leaseQueued, m.leaseTakeovers, m.webhookRequests, m.webhookDeploys,
		m.rollouts, m.halted, m.clusterResults, m.outbox,
	}
}

// Register adds a collector of the process (such as the JetStream consumer collector) to m's
// registry. It is a no-op on a nil Metrics.
func (m *Metrics) Register(c prometheus.Collector) error {
	if m == nil {
		return nil
	}
	return m.Registry.Register(c)
}

// Handler serves m's registry in the Prometheus exposition format; a nil Metrics serves 404.
func (m *Metrics) Handler() http.Handler {
	if m == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry, Timeout: 10 * time.Second})
}
