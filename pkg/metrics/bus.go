package metrics

import (
	"strings"

	"github.com/sealane/sealane/pkg/bus"
)

// Reasons of sealane_bus_dead_letters_total.
const (
	ReasonPermanent  = "permanent"
	ReasonMaxDeliver = "max_deliver"
	ReasonOther      = "other"
)

// Redelivered counts a message consumer was delivered again (bus.ConsumeMetrics).
func (m *Metrics) Redelivered(consumer string) {
	if m == nil {
		return
	}
	m.redeliveries.WithLabelValues(consumer).Inc()
}

// DeadLettered counts a message consumer gave up on; reason is the dead letter's reason, whose
// prefix (bus.ReasonPermanent, bus.ReasonMaxDeliver) is its class (bus.ConsumeMetrics).
func (m *Metrics) DeadLettered(consumer, reason string) {
	if m == nil {
		return
	}
	m.deadLetters.WithLabelValues(consumer, reasonClass(reason)).Inc()
}

// reasonClass is the low-cardinality class of a dead letter's reason.
func reasonClass(reason string) string {
	switch {
	case strings.HasPrefix(reason, bus.ReasonPermanent):
		return ReasonPermanent
	case strings.HasPrefix(reason, bus.ReasonMaxDeliver):
		return ReasonMaxDeliver
	}
	return ReasonOther
}
