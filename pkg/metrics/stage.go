package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sealane/sealane/pkg/bus"
)

// Outcomes of one handled event (the outcome label of sealane_stage_events_handled_total).
const (
	OutcomeOK        = "ok"               // handled, its events published, acknowledged
	OutcomeRetry     = "retry"            // failed; redelivered after a backoff
	OutcomePermanent = "permanent"        // poison input: dead-lettered
	OutcomeIgnored   = "ignored"          // stale for the deploy's state, or another pipeline's
	OutcomeDuplicate = "duplicate-outbox" // handled before: its saved outbox was published again
)

// unknownType labels an event that could not be decoded.
const unknownType = "unknown"

// stageChildren are a stage's pre-resolved series that take no event type.
type stageChildren struct {
	inFlight prometheus.Gauge
	hop      prometheus.Observer
}

// handledKey names one (stage, type, outcome) series of handled events.
type handledKey struct{ stage, typ, outcome string }

// Handling measures one event a stage handles: Start it on delivery, name the event with Event
// once decoded, override the outcome with Outcome where the handler decides, and call Done. The
// zero Handling (of a nil Metrics) does nothing, and none allocates.
type Handling struct {
	m       *Metrics
	stage   string
	typ     string
	outcome string
	start   time.Time
	sc      *stageChildren
}

// Start begins measuring an event the stage was delivered at now.
func (m *Metrics) Start(stage string, now time.Time) Handling {
	if m == nil {
		return Handling{}
	}
	sc := m.stage(stage)
	sc.inFlight.Inc()
	return Handling{m: m, stage: stage, start: now, sc: sc}
}

// Event names the event's type and observes its hop latency: from its creation to start, when
// the handler starts on it.
func (h *Handling) Event(typ string, created, start time.Time) {
	if h == nil || h.m == nil {
		return
	}
	h.typ = typ
	if !created.IsZero() {
		h.sc.hop.Observe(max(start.Sub(created), 0).Seconds())
	}
}

// Outcome sets the outcome of an event handled without error (OutcomeIgnored,
// OutcomeDuplicate); Done uses it instead of OutcomeOK.
func (h *Handling) Outcome(outcome string) {
	if h == nil || h.m == nil {
		return
	}
	h.outcome = outcome
}

// Done ends the measurement at now: err is the handler's result, a bus.Permanent error is
// OutcomePermanent, any other OutcomeRetry.
func (h *Handling) Done(err error, now time.Time) {
	if h == nil || h.m == nil {
		return
	}
	h.sc.inFlight.Dec()
	outcome := OutcomeOK
	switch {
	case err != nil && bus.IsPermanent(err):
		outcome = OutcomePermanent
	case err != nil:
		outcome = OutcomeRetry
	case h.outcome != "":
		outcome = h.outcome
	}
	typ := h.typ
	if typ == "" {
		typ = unknownType
	}
	c := h.m.handledChildren(handledKey{h.stage, typ, outcome})
	c.count.Inc()
	c.took.Observe(max(now.Sub(h.start), 0).Seconds())
}

// stage returns the pre-resolved series of stage, resolving them on first use.
func (m *Metrics) stage(stage string) *stageChildren {
	m.stagesMu.RLock()
	sc, ok := m.stages[stage]
	m.stagesMu.RUnlock()
	if ok {
		return sc
	}
	m.stagesMu.Lock()
	defer m.stagesMu.Unlock()
	if sc, ok = m.stages[stage]; !ok {
		sc = &stageChildren{inFlight: m.inFlight.WithLabelValues(stage), hop: m.hop.WithLabelValues(stage)}
		m.stages[stage] = sc
	}
	return sc
}

// handled are the pre-resolved series of one (stage, type, outcome).
type handled struct {
	count prometheus.Counter
	took  prometheus.Observer // by stage and type only
}

// handledChildren returns the series of k, resolving them on first use.
func (m *Metrics) handledChildren(k handledKey) *handled {
	m.handledMu.RLock()
	c, ok := m.outcomes[k]
	m.handledMu.RUnlock()
	if ok {
		return c
	}
	m.handledMu.Lock()
	defer m.handledMu.Unlock()
	if c, ok = m.outcomes[k]; !ok {
		c = &handled{count: m.handled.WithLabelValues(k.stage, k.typ, k.outcome), took: m.duration.WithLabelValues(k.stage, k.typ)}
		m.outcomes[k] = c
	}
	return c
}
