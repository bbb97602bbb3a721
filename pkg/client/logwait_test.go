package client

import (
	"context"
	"fmt"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"

	"github.com/sealane/sealane/events"
)

var waitTarget = events.Target{Cluster: "c", Namespace: "ns", Release: "r"}

func logEvent(t *testing.T, phase, n int) cloudevents.Event {
	t.Helper()
	e, err := events.New(events.LogLines, events.Meta{ID: fmt.Sprintf("d.logs.%d.%d", phase, n), Source: "/t", Target: waitTarget, CorrelationID: "d"},
		events.LogLinesData{Target: waitTarget, Phase: phase})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func trackedEvent(t *testing.T, phase, batches int) cloudevents.Event {
	t.Helper()
	e, err := events.New(events.PhaseTracked, events.Meta{ID: fmt.Sprintf("d.phase_tracked.%d", phase), Source: "/t", Target: waitTarget, CorrelationID: "d"},
		events.PhaseTrackedData{Target: waitTarget, Phase: phase, Ready: true, LogBatches: batches})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// The client waits for exactly the log batches the tracker says it published, and for nothing
// when there are none: no fixed wait at the end of a deploy.
func TestLogWaiter(t *testing.T) {
	waitFor := func(w *logWaiter) time.Duration {
		start := time.Now()
		w.wait(context.Background())
		return time.Since(start)
	}
	w := newLogWaiter()
	w.expect(trackedEvent(t, 0, 0))
	if d := waitFor(w); d > logDrain/2 {
		t.Errorf("no log batches: waited %s", d)
	}

	w = newLogWaiter()
	w.got(logEvent(t, 0, 1))
	w.got(logEvent(t, 0, 1)) // the same batch twice counts once
	w.got(logEvent(t, 0, 2))
	w.expect(trackedEvent(t, 0, 2))
	w.expect(trackedEvent(t, 1, 1))
	time.AfterFunc(50*time.Millisecond, func() { w.got(logEvent(t, 1, 1)) })
	if d := waitFor(w); d > logDrain/2 {
		t.Errorf("every batch arrived: waited %s", d)
	}

	w = newLogWaiter()
	w.expect(trackedEvent(t, 0, 3))
	w.got(logEvent(t, 0, 1))
	if d := waitFor(w); d < logDrain {
		t.Errorf("batches missing: returned after %s, want the %s bound", d, logDrain)
	}
}
