package stage

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/deploy"
)

// A handler's events are published once each, after the state is saved, with deterministic
// ids ("<deploy>.<step>", also the Nats-Msg-Id), the deploy's correlation id and the handled
// event as cause; the deploy state advances and carries the outbox; the next stage sees it.
func TestRunnerPublishesEmittedEvents(t *testing.T) {
	e := newEnv(t)
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var (
		obsMu    sync.Mutex
		observed []string
	)
	r := &Runner{Bus: e.bus, Log: e.log, Clock: func() time.Time { return now },
		Observe: func(st events.Stage, ev cloudevents.Event, start time.Time) {
			obsMu.Lock()
			defer obsMu.Unlock()
			observed = append(observed, string(st)+" "+ev.ID())
			if !start.Equal(now) {
				t.Errorf("Observe start %s, want the runner's clock %s", start, now)
			}
		}}
	const renderRef = "nats-obj://sealane-blobs/renders/dep-1"
	renderer := &handlerLog{fn: func(_ context.Context, _ int, in Input) (Output, error) {
		var req events.RequestedData
		if err := events.DecodeData(in.Event, &req); err != nil {
			return Output{}, Permanent(err)
		}
		s := deploy.State{ID: in.DeployID, Target: req.Target, Revision: 3, RenderRef: renderRef}
		return Output{State: &s, Emits: []Emit{{
			Type: events.DeployRendered, Step: "rendered", DataRef: renderRef,
			Data: events.RenderedData{Target: in.Target, Revision: 3, RenderRef: renderRef},
		}}}, nil
	}}
	recorder := &handlerLog{fn: func(_ context.Context, _ int, in Input) (Output, error) {
		if in.State == nil {
			return Output{}, errors.New("no state for a rendered deploy")
		}
		return Output{Emits: []Emit{{Type: events.DeployStarted, Step: "started",
			Data: events.StartedData{Target: in.Target, Revision: in.State.Revision, RenderRef: in.State.RenderRef}}}}, nil
	}}
	e.start(r, Stage{Name: events.StageRenderer, Types: []events.Type{events.DeployRequested}, Handler: renderer}, false)
	e.start(r, Stage{Name: events.StageRecorder, Types: []events.Type{events.DeployRendered}, Handler: recorder}, false)

	req := newEvent(t, events.DeployRequested, "dep-1", "requested", events.RequestedData{Target: target})
	e.publishEvent(req, req.ID())

	ms := e.waitStored(bus.DefaultStream, "dep-1.started")
	e.waitAcked(string(events.StageRenderer), 1)
	rendSeq := withID(ms, "dep-1.rendered")[0].Seq
	e.waitAcked(string(events.StageRecorder), rendSeq)
	ms = e.messages(bus.DefaultStream)

	if n := len(ms); n != 3 {
		t.Errorf("deploy stream holds %d messages, want 3 (requested, rendered, started)", n)
	}
	rendered := ofType(ms, events.DeployRendered)
	if len(rendered) != 1 {
		t.Fatalf("%d rendered events, want 1", len(rendered))
	}
	checkEmitted(t, rendered[0], events.DeployRendered, "dep-1.rendered", "dep-1", "dep-1.requested", events.StageRenderer)
	if got := events.DataRef(rendered[0].Event); got != renderRef {
		t.Errorf("rendered dataref %q, want %q", got, renderRef)
	}
	if !rendered[0].Event.Time().Equal(now) {
		t.Errorf("rendered time %s, want the runner's clock %s", rendered[0].Event.Time(), now)
	}
	var rd events.RenderedData
	if err := events.DecodeData(rendered[0].Event, &rd); err != nil || rd.Revision != 3 || rd.Target != target || rd.RenderRef != renderRef {
		t.Errorf("rendered payload %+v (%v)", rd, err)
	}
	started := ofType(ms, events.DeployStarted)
	if len(started) != 1 {
		t.Fatalf("%d started events, want 1", len(started))
	}
	checkEmitted(t, started[0], events.DeployStarted, "dep-1.started", "dep-1", "dep-1.rendered", events.StageRecorder)
	if rendered[0].Seq > started[0].Seq {
		t.Errorf("started (seq %d) stored before rendered (seq %d)", started[0].Seq, rendered[0].Seq)
	}
	var sd events.StartedData
	if err := events.DecodeData(started[0].Event, &sd); err != nil || sd.Revision != 3 || sd.RenderRef != renderRef {
		t.Errorf("started payload %+v (%v): the recorder did not see the renderer's state", sd, err)
	}

	// What the handlers were given.
	if ins := renderer.inputs(); len(ins) != 1 {
		t.Errorf("renderer called %d times, want 1", len(ins))
	} else if in := ins[0]; in.State != nil || in.Type != events.DeployRequested || in.DeployID != "dep-1" ||
		in.Target != target || in.Event.ID() != "dep-1.requested" || in.Publish == nil {
		t.Errorf("renderer input: type %s deploy %q target %v event %s state %+v", in.Type, in.DeployID, in.Target, in.Event.ID(), in.State)
	}
	if ins := recorder.inputs(); len(ins) != 1 {
		t.Errorf("recorder called %d times, want 1", len(ins))
	} else if s := ins[0].State; s == nil || s.Status != deploy.Rendered || s.Revision != 3 || s.LastEvent != "dep-1.rendered" || s.RenderRef != renderRef {
		t.Errorf("recorder saw state %+v, want the renderer's (rendered, revision 3)", s)
	}

	// The deploy state advanced and holds the last handling's outbox.
	s, rev := e.state("dep-1")
	if s == nil {
		t.Fatal("no deploy state")
	}
	if s.ID != "dep-1" || s.Target != target || s.Status != deploy.Started || s.Revision != 3 ||
		s.LastEvent != "dep-1.started" || !s.Updated.Equal(now) {
		t.Errorf("state %+v, want started, revision 3, last event dep-1.started, updated %s", s, now)
	}
	if rev != 2 {
		t.Errorf("state KV revision %d, want 2 (created by the renderer, updated by the recorder)", rev)
	}
	if ob := s.Outbox; ob == nil || ob.Stage != events.StageRecorder || ob.Cause != "dep-1.rendered" || len(ob.Events) != 1 {
		t.Errorf("outbox %+v, want the recorder's for dep-1.rendered with 1 event", ob)
	} else {
		var ev cloudevents.Event
		if err := json.Unmarshal(ob.Events[0], &ev); err != nil || ev.ID() != "dep-1.started" || events.Type(ev.Type()) != events.DeployStarted {
			t.Errorf("outbox event %s (%v), want dep-1.started", ob.Events[0], err)
		}
	}
	obsMu.Lock()
	if got := strings.Join(observed, ","); got != "renderer dep-1.requested,recorder dep-1.rendered" {
		t.Errorf("Observe calls %q", got)
	}
	obsMu.Unlock()
	if dls := e.deadLetters(); len(dls) != 0 {
		t.Errorf("dead letters %+v, want none", dls)
	}
}

// Live events (Input.Publish) are stored before the handler's own events, log lines in the
// log stream; an Emit for another deploy carries that deploy's ids and leaves this deploy's
// state alone.
func TestRunnerLiveEventsAndOtherDeploys(t *testing.T) {
	e := newEnv(t)
	// A lease hand-over: dep-next's queued request, published as it is under the id it was given.
	handed := newEvent(t, events.DeployRequested, "dep-next", "requested", events.RequestedData{Target: target})
	handed.SetID("dep-next.requested.dequeued.7")
	r := &Runner{Bus: e.bus, Log: e.log}
	tracker := &handlerLog{fn: func(ctx context.Context, _ int, in Input) (Output, error) {
		for _, em := range []Emit{
			{Type: events.ResourceProgressed, Step: "progressed.0.1", Data: events.ProgressedData{Target: in.Target, State: events.StateWaiting}},
			{Type: events.LogLines, Step: "logs.0.1", Data: events.LogLinesData{Target: in.Target, Lines: []events.LogLine{{Text: "listening on :8080"}}}},
			{Type: events.ResourceProgressed, Step: "progressed.0.2", Data: events.ProgressedData{Target: in.Target, State: events.StateReady}},
		} {
			if err := in.Publish(ctx, em); err != nil {
				return Output{}, err
			}
		}
		return Output{Emits: []Emit{
			{Type: events.DeployFailed, Step: "failed", DeployID: "dep-old",
				Data: events.FailedData{Target: in.Target, Stage: events.StageTracker, Reason: "superseded"}},
			{Type: events.PhaseTracked, Step: "phase_tracked.0", Data: events.PhaseTrackedData{Target: in.Target, Ready: true, Phases: 1}},
			Verbatim(handed),
		}}, nil
	}}
	e.start(r, Stage{Name: events.StageTracker, Types: []events.Type{events.PhaseApplied}, Handler: tracker}, false)
	seq := e.publishEvent(newEvent(t, events.PhaseApplied, "dep-2", "phase_applied.0", events.PhaseAppliedData{Target: target}), "dep-2.phase_applied.0")
	e.waitAcked(string(events.StageTracker), seq)

	ms := e.messages(bus.DefaultStream)
	p1, p2 := withID(ms, "dep-2.progressed.0.1"), withID(ms, "dep-2.progressed.0.2")
	tracked, old := withID(ms, "dep-2.phase_tracked.0"), withID(ms, "dep-old.failed")
	if len(p1) != 1 || len(p2) != 1 || len(tracked) != 1 || len(old) != 1 {
		t.Fatalf("stored progressed %d+%d, phase_tracked %d, dep-old failed %d; want 1 each", len(p1), len(p2), len(tracked), len(old))
	}
	checkEmitted(t, p1[0], events.ResourceProgressed, "dep-2.progressed.0.1", "dep-2", "dep-2.phase_applied.0", events.StageTracker)
	checkEmitted(t, tracked[0], events.PhaseTracked, "dep-2.phase_tracked.0", "dep-2", "dep-2.phase_applied.0", events.StageTracker)
	checkEmitted(t, old[0], events.DeployFailed, "dep-old.failed", "dep-old", "dep-2.phase_applied.0", events.StageTracker)
	if !(p1[0].Seq < p2[0].Seq && p2[0].Seq < old[0].Seq && old[0].Seq < tracked[0].Seq) {
		t.Errorf("order progressed %d, %d, dep-old failed %d, phase_tracked %d: want live events first, then the emits in order",
			p1[0].Seq, p2[0].Seq, old[0].Seq, tracked[0].Seq)
	}
	if n := len(ofType(ms, events.LogLines)); n != 0 {
		t.Errorf("%d log_lines events in the deploy stream, want 0", n)
	}
	logs := e.messages(bus.DefaultLogStream)
	if len(logs) != 1 || logs[0].DecErr != nil {
		t.Fatalf("log stream holds %d messages, want 1 log_lines event", len(logs))
	}
	if logs[0].Event.ID() != "dep-2.logs.0.1" || logs[0].MsgID != "dep-2.logs.0.1" || logs[0].Subject != "sealane.logs.kind.shop.api" {
		t.Errorf("log event %s (msg id %s) on %s", logs[0].Event.ID(), logs[0].MsgID, logs[0].Subject)
	}

	s, _ := e.state("dep-2")
	if s == nil || s.Status != deploy.Tracked || s.LastEvent != "dep-2.phase_tracked.0" {
		t.Errorf("state of dep-2 %+v, want tracked (the failure of dep-old must not fail it)", s)
	}
	if s != nil && (s.Outbox == nil || len(s.Outbox.Events) != 3) {
		t.Errorf("outbox %+v, want the 3 emitted events (live events are not kept)", s.Outbox)
	}
	for _, id := range []string{"dep-old", "dep-next"} {
		if s, _ := e.state(id); s != nil {
			t.Errorf("state of %s %+v, want none: another deploy's event changes no state", id, s)
		}
	}
	next := withID(ms, "dep-next.requested.dequeued.7")
	if len(next) != 1 || next[0].MsgID != "dep-next.requested.dequeued.7" || next[0].Seq < tracked[0].Seq ||
		events.CorrelationID(next[0].Event) != "dep-next" || next[0].Event.Source() != handed.Source() {
		t.Errorf("hand-over stored as %+v, want dep-next's request as it was, once, after the stage's own events", next)
	}
}

// An event seen again — the same CloudEvent re-published under another Nats-Msg-Id, or one
// for a deploy that already ended — is acknowledged without running the handler again and
// publishes nothing new.
func TestRunnerSkipsDuplicateAndStaleEvents(t *testing.T) {
	tests := []struct {
		name      string
		stage     events.Stage
		typ       events.Type // consumed and published
		seed      *deploy.State
		msgIDs    []string // the same event, published under each id
		emit      events.Type
		wantCalls int
	}{
		{
			name: "same event under a second msg id", stage: events.StageRenderer, typ: events.DeployRequested,
			msgIDs: []string{"dep.requested", "dep.requested.again"}, emit: events.DeployRendered, wantCalls: 1,
		},
		{
			name: "same event three times, state already present", stage: events.StageApplier, typ: events.DeployStarted,
			seed:   &deploy.State{ID: "dep", Target: target, Status: deploy.Started, Revision: 2},
			msgIDs: []string{"a", "b", "c"}, emit: events.PhaseApplied, wantCalls: 1,
		},
		{
			name: "phase_tracked for a failed deploy", stage: events.StageApplier, typ: events.PhaseTracked,
			seed:   &deploy.State{ID: "dep", Target: target, Status: deploy.Failed, Revision: 2},
			msgIDs: []string{"dep.phase_tracked.0"}, emit: events.PhaseApplied, wantCalls: 0,
		},
		{
			name: "deploy.failed for a recorded deploy", stage: events.StageRecorder, typ: events.DeployFailed,
			seed:   &deploy.State{ID: "dep", Target: target, Status: deploy.Recorded, Revision: 2},
			msgIDs: []string{"dep.failed"}, emit: events.ReleaseRecorded, wantCalls: 0,
		},
		{
			// The guard's other side: the recorder still records a deploy that failed.
			name: "deploy.failed for a failed deploy", stage: events.StageRecorder, typ: events.DeployFailed,
			seed:   &deploy.State{ID: "dep", Target: target, Status: deploy.Failed, Revision: 2},
			msgIDs: []string{"dep.failed"}, emit: events.ReleaseRecorded, wantCalls: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			var seedRev uint64
			if tc.seed != nil {
				seedRev = e.seed(*tc.seed)
			}
			h := &handlerLog{fn: emitting(tc.emit, "out")}
			e.start(&Runner{Bus: e.bus, Log: e.log}, Stage{Name: tc.stage, Types: []events.Type{tc.typ}, Handler: h}, false)
			ev := newEvent(t, tc.typ, "dep", tc.typ.Token(), map[string]any{"target": target})
			var afterFirst uint64
			for i, id := range tc.msgIDs {
				seq := e.publishEvent(ev, id)
				e.waitAcked(string(tc.stage), seq)
				if i == 0 {
					_, afterFirst = e.state("dep")
				}
			}
			if got := h.calls(); got != tc.wantCalls {
				t.Errorf("handler ran %d times, want %d", got, tc.wantCalls)
			}
			ms := e.messages(bus.DefaultStream)
			if got := len(ofType(ms, tc.typ)); got != len(tc.msgIDs) {
				t.Errorf("%d input messages stored, want %d", got, len(tc.msgIDs))
			}
			out := ofType(ms, tc.emit)
			if got := len(out); got != tc.wantCalls {
				t.Fatalf("%d %s events stored, want %d", got, tc.emit.Token(), tc.wantCalls)
			}
			if len(out) == 1 {
				checkEmitted(t, out[0], tc.emit, "dep.out", "dep", ev.ID(), tc.stage)
			}
			s, rev := e.state("dep")
			switch {
			case tc.wantCalls == 0 && rev != seedRev:
				t.Errorf("state revision %d after a skipped event, want the seeded %d (%+v)", rev, seedRev, s)
			case tc.wantCalls > 0 && rev != afterFirst:
				t.Errorf("state revision %d after the duplicates, want %d as after the first handling", rev, afterFirst)
			case tc.wantCalls > 0 && (s.Outbox == nil || s.Outbox.Cause != ev.ID()):
				t.Errorf("outbox %+v, want one caused by %s", s.Outbox, ev.ID())
			}
			if dls := e.deadLetters(); len(dls) != 0 {
				t.Errorf("dead letters %+v, want none", dls)
			}
		})
	}
}

// A state whose outbox was saved by this stage for this very event means the event was
// handled but not acknowledged: its events are published (again) and the handler does not
// run. An outbox of another event or another stage does not count.
func TestRunnerOutboxOnRedelivery(t *testing.T) {
	outboxEvent := func(t *testing.T, typ events.Type, id string, data any) json.RawMessage {
		ev, err := events.New(typ, events.Meta{ID: id, Source: "/sealane/renderer", Target: target, CorrelationID: "dep", CausationID: "dep.requested"}, data)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	tests := []struct {
		name      string
		status    deploy.Status
		obStage   events.Stage
		obCause   string
		obType    events.Type
		wantCalls int
	}{
		{"same stage and cause: outbox republished", deploy.Rendered, events.StageRenderer, "dep.requested", events.DeployRendered, 0},
		{"terminal deploy: its failure republished", deploy.Failed, events.StageRenderer, "dep.requested", events.DeployFailed, 0},
		{"outbox of another stage: handled", deploy.Rendered, events.StageRecorder, "dep.requested", events.DeployRendered, 1},
		{"outbox of an earlier event: handled", deploy.Rendered, events.StageRenderer, "dep.requested.before", events.DeployRendered, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			obID := "dep.outbox"
			seedRev := e.seed(deploy.State{ID: "dep", Target: target, Status: tc.status, Revision: 1, Outbox: &deploy.Outbox{
				Stage: tc.obStage, Cause: tc.obCause,
				Events: []json.RawMessage{outboxEvent(t, tc.obType, obID, map[string]any{"target": target, "from": "outbox"})},
			}})
			h := &handlerLog{fn: emitting(events.DeployRendered, "handled")}
			e.start(&Runner{Bus: e.bus, Log: e.log}, Stage{Name: events.StageRenderer, Types: []events.Type{events.DeployRequested}, Handler: h}, false)
			seq := e.publishEvent(newEvent(t, events.DeployRequested, "dep", "requested", events.RequestedData{Target: target}), "dep.requested")
			e.waitAcked(string(events.StageRenderer), seq)

			if got := h.calls(); got != tc.wantCalls {
				t.Errorf("handler ran %d times, want %d", got, tc.wantCalls)
			}
			ms := e.messages(bus.DefaultStream)
			republished, handled := withID(ms, obID), withID(ms, "dep.handled")
			_, rev := e.state("dep")
			if tc.wantCalls == 0 {
				if len(republished) != 1 || len(handled) != 0 {
					t.Fatalf("stored outbox event %d times and a handled event %d times, want 1 and 0", len(republished), len(handled))
				}
				m := republished[0]
				if m.MsgID != obID || events.Type(m.Event.Type()) != tc.obType || !strings.Contains(string(m.Event.Data()), `"from":"outbox"`) {
					t.Errorf("republished %s (msg id %s): %s", m.Event.ID(), m.MsgID, m.Event.Data())
				}
				if rev != seedRev {
					t.Errorf("state revision %d, want %d: republishing must not save state", rev, seedRev)
				}
			} else {
				if len(republished) != 0 || len(handled) != 1 {
					t.Fatalf("stored outbox event %d times and a handled event %d times, want 0 and 1", len(republished), len(handled))
				}
				if rev == seedRev {
					t.Error("state not saved after handling")
				}
			}
		})
	}
}

// The stage dies after it saved the state (with the outbox) and published part of its events,
// before the ack: the redelivery, on another replica, publishes the rest of the outbox and
// does not run the handler again. The crash is made real: the log stream is gone, so the
// second event cannot be stored and the stage hangs after the save until its connection is
// closed (no nak reaches the server); JetStream redelivers after the ack wait.
func TestRunnerCrashBetweenSaveAndAck(t *testing.T) {
	e := newEnv(t)
	busA, ncA := e.newBus("replica-a")
	if err := e.bus.JetStream().DeleteStream(e.ctx(), bus.DefaultLogStream); err != nil {
		t.Fatalf("delete log stream: %v", err)
	}
	h := &handlerLog{fn: func(_ context.Context, call int, in Input) (Output, error) {
		return Output{Emits: []Emit{
			{Type: events.DeployRendered, Step: "rendered", Data: map[string]any{"target": in.Target, "call": call}},
			{Type: events.LogLines, Step: "logs.render", Data: events.LogLinesData{Target: in.Target, Lines: []events.LogLine{{Text: "rendered"}}}},
		}}, nil
	}}
	st := Stage{Name: events.StageRenderer, Types: []events.Type{events.DeployRequested}, Handler: h}
	runA := e.start(&Runner{Bus: busA, Log: e.log.Named("a"), AckWait: time.Second}, st, true)

	seq := e.publishEvent(newEvent(t, events.DeployRequested, "dep", "requested", events.RequestedData{Target: target}), "dep.requested")
	e.waitStored(bus.DefaultStream, "dep.rendered")
	var saved *deploy.State
	var savedRev uint64
	e.waitFor(waitTimeout, "the state with the outbox", func() bool {
		saved, savedRev = e.state("dep")
		return saved != nil && saved.Outbox != nil
	})
	if ob := saved.Outbox; ob.Stage != events.StageRenderer || ob.Cause != "dep.requested" || len(ob.Events) != 2 {
		t.Fatalf("outbox %+v, want the renderer's 2 events for dep.requested", ob)
	}
	if info := e.consumerInfo(string(events.StageRenderer)); info == nil || info.NumAckPending != 1 {
		t.Fatalf("consumer %+v: want the request delivered and not acknowledged", info)
	}

	// Crash: the connection goes away without an ack or a nak.
	ncA.Close()
	_ = runA.stop()
	if got := h.calls(); got != 1 {
		t.Fatalf("handler ran %d times before the crash, want 1", got)
	}

	// Restart on another connection; bus.New creates the log stream again.
	busB, _ := e.newBus("replica-b")
	e.start(&Runner{Bus: busB, Log: e.log.Named("b"), AckWait: time.Second}, st, false)
	info := e.waitAcked(string(events.StageRenderer), seq)

	if got := h.calls(); got != 1 {
		t.Errorf("handler ran %d times, want 1: the redelivery must publish the outbox instead", got)
	}
	if info.Delivered.Consumer < 2 {
		t.Errorf("consumer delivered %d times, want a redelivery", info.Delivered.Consumer)
	}
	ms := e.messages(bus.DefaultStream)
	if got := withID(ms, "dep.rendered"); len(got) != 1 || !strings.Contains(string(got[0].Event.Data()), `"call":1`) {
		t.Errorf("rendered stored %d times, want once, from the first handling", len(got))
	}
	logs := e.messages(bus.DefaultLogStream)
	if len(logs) != 1 || logs[0].DecErr != nil || logs[0].Event.ID() != "dep.logs.render" || logs[0].MsgID != "dep.logs.render" {
		t.Fatalf("log stream %+v, want the outbox's dep.logs.render once", logs)
	}
	if s, rev := e.state("dep"); rev != savedRev || s.Status != deploy.Rendered {
		t.Errorf("state revision %d status %s, want %d rendered: the redelivery saves nothing", rev, s.Status, savedRev)
	}
	if dls := e.deadLetters(); len(dls) != 0 {
		t.Errorf("dead letters %+v, want none", dls)
	}
}

// A handler error that is not permanent — an error, a panic, a state changed by another
// worker meanwhile (CAS conflict) — is retried after a backoff delay and then succeeds; only
// the successful attempt's events are published.
func TestRunnerRetriesTransientErrors(t *testing.T) {
	tests := []struct {
		name string
		fn   func(e *env) func(context.Context, int, Input) (Output, error)
		// wantRevision is the deploy revision the published event must carry.
		wantRevision int
	}{
		{
			name: "handler error",
			fn: func(*env) func(context.Context, int, Input) (Output, error) {
				return func(_ context.Context, call int, in Input) (Output, error) {
					if call == 1 {
						return Output{}, errors.New("apiserver unavailable")
					}
					return Output{Emits: []Emit{{Type: events.DeployStarted, Step: "started", Data: events.StartedData{Target: in.Target, Revision: in.State.Revision}}}}, nil
				}
			},
			wantRevision: 2,
		},
		{
			name: "handler panic",
			fn: func(*env) func(context.Context, int, Input) (Output, error) {
				return func(_ context.Context, call int, in Input) (Output, error) {
					if call == 1 {
						panic("nil map")
					}
					return Output{Emits: []Emit{{Type: events.DeployStarted, Step: "started", Data: events.StartedData{Target: in.Target, Revision: in.State.Revision}}}}, nil
				}
			},
			wantRevision: 2,
		},
		{
			name: "state changed meanwhile",
			fn: func(e *env) func(context.Context, int, Input) (Output, error) {
				return func(ctx context.Context, call int, in Input) (Output, error) {
					if call == 1 {
						// Another worker moves the deploy while this one works.
						moved := *in.State
						moved.Revision = 9
						b, _ := json.Marshal(moved)
						if _, err := e.bus.State().Put(ctx, deploy.Key(in.DeployID), b); err != nil {
							return Output{}, err
						}
					}
					return Output{Emits: []Emit{{Type: events.DeployStarted, Step: "started", Data: events.StartedData{Target: in.Target, Revision: in.State.Revision}}}}, nil
				}
			},
			wantRevision: 9,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.seed(deploy.State{ID: "dep", Target: target, Status: deploy.Rendered, Revision: 2})
			h := &handlerLog{fn: tc.fn(e)}
			e.start(&Runner{Bus: e.bus, Log: e.log}, Stage{Name: events.StageRecorder, Types: []events.Type{events.DeployRendered}, Handler: h}, false)
			seq := e.publishEvent(newEvent(t, events.DeployRendered, "dep", "rendered", map[string]any{"target": target}), "dep.rendered")
			info := e.waitAcked(string(events.StageRecorder), seq)

			times := h.callTimes()
			if len(times) != 2 {
				t.Fatalf("handler ran %d times, want 2 (a failure, then a success)", len(times))
			}
			// The default backoff is 1s ±20% for the first retry (NakWithDelay).
			if gap := times[1].Sub(times[0]); gap < 700*time.Millisecond || gap > 5*time.Second {
				t.Errorf("retry %s after the first attempt, want the ~1s backoff", gap)
			}
			if info.Delivered.Consumer != 2 {
				t.Errorf("%d deliveries, want 2", info.Delivered.Consumer)
			}
			started := ofType(e.messages(bus.DefaultStream), events.DeployStarted)
			if len(started) != 1 {
				t.Fatalf("%d started events, want 1", len(started))
			}
			checkEmitted(t, started[0], events.DeployStarted, "dep.started", "dep", "dep.rendered", events.StageRecorder)
			var sd events.StartedData
			if err := events.DecodeData(started[0].Event, &sd); err != nil || sd.Revision != tc.wantRevision {
				t.Errorf("started payload %+v (%v), want revision %d: only the saved attempt publishes", sd, err, tc.wantRevision)
			}
			if s, _ := e.state("dep"); s == nil || s.Status != deploy.Started || s.Revision != tc.wantRevision {
				t.Errorf("state %+v, want started at revision %d", s, tc.wantRevision)
			}
			if dls := e.deadLetters(); len(dls) != 0 {
				t.Errorf("dead letters %+v, want none", dls)
			}
		})
	}
}

// A permanent error, an undecodable event or an event that names no deploy is dead-lettered
// at its first delivery, with the reason; when the event names a deploy, the deploy is
// reported failed (deploy.failed; release_recorded when the recorder itself gave up).
func TestRunnerDeadLetters(t *testing.T) {
	requested := func(t *testing.T) (*nats.Msg, string) {
		msg, err := events.Encode(newEvent(t, events.DeployRequested, "dep", "requested", events.RequestedData{Target: target}))
		if err != nil {
			t.Fatal(err)
		}
		return msg, "dep.requested"
	}
	decodeRequest := func(_ context.Context, _ int, in Input) (Output, error) {
		var req events.RequestedData
		if err := events.DecodeData(in.Event, &req); err != nil {
			return Output{}, Permanent(err)
		}
		return Output{Emits: []Emit{{Type: events.DeployRendered, Step: "rendered", Data: map[string]any{"target": in.Target}}}}, nil
	}
	tests := []struct {
		name      string
		stage     events.Stage
		types     []events.Type
		msg       func(t *testing.T) (*nats.Msg, string)
		handler   func(context.Context, int, Input) (Output, error)
		wantCalls int
		// wantReason are parts of the dead letter's reason (after bus.ReasonPermanent).
		wantReason []string
		// notInReason must not appear in the reason (payload contents).
		notInReason string
		// failType and failID: the event reporting the deploy failed; empty when none can be.
		failType events.Type
		failID   string
	}{
		{
			name: "permanent handler error", stage: events.StageRenderer, types: []events.Type{events.DeployRequested},
			msg: requested,
			handler: func(context.Context, int, Input) (Output, error) {
				return Output{}, Permanent(errors.New("chart.yaml is missing"))
			},
			wantCalls: 1, wantReason: []string{"renderer: handle dep.requested", "chart.yaml is missing"},
			failType: events.DeployFailed, failID: "dep.failed.renderer.deadletter",
		},
		{
			name: "undecodable payload", stage: events.StageRenderer, types: []events.Type{events.DeployRequested},
			msg: func(t *testing.T) (*nats.Msg, string) {
				msg, id := requested(t)
				msg.Data = []byte(`{"target": [not json SECRET`)
				return msg, id
			},
			handler:   decodeRequest,
			wantCalls: 1, wantReason: []string{"dep.requested", "not the type's JSON"}, notInReason: "SECRET",
			failType: events.DeployFailed, failID: "dep.failed.renderer.deadletter",
		},
		{
			name: "emitted event cannot be built", stage: events.StageApplier, types: []events.Type{events.DeployRequested},
			msg: requested,
			handler: func(context.Context, int, Input) (Output, error) {
				return Output{Emits: []Emit{{Type: "dev.sealane.bogus.v1", Step: "bogus"}}}, nil
			},
			wantCalls: 1, wantReason: []string{"unknown type"},
			failType: events.DeployFailed, failID: "dep.failed.applier.deadletter",
		},
		{
			name: "recorder gives up on deploy.failed", stage: events.StageRecorder, types: []events.Type{events.DeployFailed},
			msg: func(t *testing.T) (*nats.Msg, string) {
				msg, err := events.Encode(newEvent(t, events.DeployFailed, "dep", "failed", events.FailedData{Target: target, Stage: events.StageApplier, Reason: "boom"}))
				if err != nil {
					t.Fatal(err)
				}
				return msg, "dep.failed"
			},
			handler: func(context.Context, int, Input) (Output, error) {
				return Output{}, Permanent(errors.New("release storage is corrupt"))
			},
			wantCalls: 1, wantReason: []string{"release storage is corrupt"},
			failType: events.ReleaseRecorded, failID: "dep.recorded.deadletter",
		},
		{
			name: "not a CloudEvent", stage: events.StageRenderer, types: []events.Type{events.DeployRequested},
			msg: func(*testing.T) (*nats.Msg, string) {
				msg := nats.NewMsg(events.NATSSubject(events.DeployRequested, target))
				msg.Header.Set("X-Test", "1")
				msg.Data = []byte("SECRET garbage")
				return msg, "garbage-1"
			},
			handler:   decodeRequest,
			wantCalls: 0, wantReason: []string{"not a CloudEvent"}, notInReason: "SECRET",
		},
		{
			name: "no correlation id", stage: events.StageRenderer, types: []events.Type{events.DeployRequested},
			msg: func(t *testing.T) (*nats.Msg, string) {
				ev, err := events.New(events.DeployRequested, events.Meta{ID: "dep.requested", Source: "/test", Target: target},
					events.RequestedData{Target: target})
				if err != nil {
					t.Fatal(err)
				}
				msg, err := events.Encode(ev)
				if err != nil {
					t.Fatal(err)
				}
				return msg, "dep.requested"
			},
			handler:   decodeRequest,
			wantCalls: 0, wantReason: []string{"no correlationid extension"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			seedRev := e.seed(deploy.State{ID: "dep", Target: target, Status: deploy.Rendered, Revision: 4})
			h := &handlerLog{fn: tc.handler}
			e.start(&Runner{Bus: e.bus, Log: e.log}, Stage{Name: tc.stage, Types: tc.types, Handler: h}, false)
			msg, msgID := tc.msg(t)
			start := time.Now()
			seq := e.publishMsg(msg, msgID)
			info := e.waitAcked(string(tc.stage), seq) // terminated counts as acknowledged
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("dead-lettered after %s, want at once", took)
			}
			if got := h.calls(); got != tc.wantCalls {
				t.Errorf("handler ran %d times, want %d", got, tc.wantCalls)
			}
			if info.Delivered.Consumer != 1 {
				t.Errorf("%d deliveries, want 1: a permanent error is not retried", info.Delivered.Consumer)
			}

			dls := e.deadLetters()
			if len(dls) != 1 {
				t.Fatalf("%d dead letters, want 1", len(dls))
			}
			dl := dls[0]
			if dl.Consumer != string(tc.stage) || dl.Subject != msg.Subject || dl.Deliveries != 1 || dl.StreamSeq != seq ||
				dl.MsgID != msgID || string(dl.Data) != string(msg.Data) {
				t.Errorf("dead letter consumer %s subject %s deliveries %d seq %d msg id %s data %q",
					dl.Consumer, dl.Subject, dl.Deliveries, dl.StreamSeq, dl.MsgID, dl.Data)
			}
			if !strings.HasPrefix(dl.Reason, bus.ReasonPermanent) {
				t.Errorf("reason %q does not start with %q", dl.Reason, bus.ReasonPermanent)
			}
			for _, want := range tc.wantReason {
				if !strings.Contains(dl.Reason, want) {
					t.Errorf("reason %q lacks %q", dl.Reason, want)
				}
			}
			if tc.notInReason != "" && strings.Contains(dl.Reason, tc.notInReason) {
				t.Errorf("reason %q quotes the payload", dl.Reason)
			}

			ms := e.messages(bus.DefaultStream)
			if _, rev := e.state("dep"); rev != seedRev {
				t.Errorf("state revision %d, want the seeded %d: a dead-lettered event saves no state", rev, seedRev)
			}
			if n := len(ofType(ms, events.DeployRendered)); n != 0 {
				t.Errorf("%d rendered events published for a dead-lettered event", n)
			}
			failures := append(ofType(ms, events.DeployFailed), ofType(ms, events.ReleaseRecorded)...)
			if tc.failType == "" {
				if len(failures) != 0 {
					t.Errorf("published %s for an event tied to no deploy", failures[0].Event.ID())
				}
				return
			}
			got := withID(failures, tc.failID)
			if len(got) != 1 {
				t.Fatalf("%d %s events with id %s, want 1 (stored: %d failure events)", len(got), tc.failType.Token(), tc.failID, len(failures))
			}
			checkEmitted(t, got[0], tc.failType, tc.failID, "dep", msgID, tc.stage) // msg id = event id here
			reason := ""
			revision := 0
			if tc.failType == events.DeployFailed {
				var fd events.FailedData
				if err := events.DecodeData(got[0].Event, &fd); err != nil {
					t.Fatal(err)
				}
				if fd.Stage != tc.stage || fd.Target != target {
					t.Errorf("failure %+v, want stage %s target %v", fd, tc.stage, target)
				}
				reason, revision = fd.Reason, fd.Revision
			} else {
				var rd events.RecordedData
				if err := events.DecodeData(got[0].Event, &rd); err != nil {
					t.Fatal(err)
				}
				if rd.Outcome != events.OutcomeFailed || rd.Target != target {
					t.Errorf("recorded %+v, want outcome failed", rd)
				}
				reason, revision = rd.Reason, rd.Revision
			}
			if revision != 4 {
				t.Errorf("failure revision %d, want the deploy state's 4", revision)
			}
			for _, want := range append([]string{string(tc.stage) + " gave up on event " + msgID, bus.ReasonPermanent}, tc.wantReason...) {
				if !strings.Contains(reason, want) {
					t.Errorf("failure reason %q lacks %q", reason, want)
				}
			}
		})
	}
}

// A handler that runs longer than the ack wait is heartbeated and not redelivered meanwhile;
// Stage.AckWait overrides Runner.AckWait, which overrides the default.
func TestRunnerAckWait(t *testing.T) {
	e := newEnv(t)
	slow := &handlerLog{fn: func(ctx context.Context, call int, in Input) (Output, error) {
		select {
		case <-time.After(1200 * time.Millisecond):
		case <-ctx.Done():
			return Output{}, ctx.Err()
		}
		return emitting(events.DeployRendered, "rendered")(ctx, call, in)
	}}
	r := &Runner{Bus: e.bus, Log: e.log, AckWait: 300 * time.Millisecond}
	e.start(r, Stage{Name: events.StageRenderer, Types: []events.Type{events.DeployRequested}, Handler: slow}, false)
	e.start(&Runner{Bus: e.bus, Log: e.log}, Stage{Name: events.StageTracker, Types: []events.Type{events.PhaseApplied}, Handler: &handlerLog{}}, false)
	e.start(r, Stage{Name: events.StageApplier, Types: []events.Type{events.DeployStarted}, Handler: &handlerLog{}, AckWait: 2 * time.Second}, false)

	seq := e.publishEvent(newEvent(t, events.DeployRequested, "dep", "requested", events.RequestedData{Target: target}), "dep.requested")
	info := e.waitAcked(string(events.StageRenderer), seq)
	if got := slow.calls(); got != 1 {
		t.Errorf("slow handler ran %d times, want 1: heartbeats must hold the message", got)
	}
	if info.Delivered.Consumer != 1 {
		t.Errorf("%d deliveries of the slow event, want 1", info.Delivered.Consumer)
	}
	if n := len(withID(e.messages(bus.DefaultStream), "dep.rendered")); n != 1 {
		t.Errorf("rendered stored %d times, want 1", n)
	}

	for durable, want := range map[events.Stage]time.Duration{
		events.StageRenderer: 300 * time.Millisecond, // Runner.AckWait
		events.StageTracker:  bus.DefaultAckWait,     // neither set
		events.StageApplier:  2 * time.Second,        // Stage.AckWait wins
	} {
		var got time.Duration
		e.waitFor(waitTimeout, "consumer "+string(durable), func() bool {
			ci := e.consumerInfo(string(durable))
			if ci != nil {
				got = ci.Config.AckWait
			}
			return ci != nil
		})
		if got != want {
			t.Errorf("consumer %s ack wait %s, want %s", durable, got, want)
		}
	}
}

// Cancelling Run while a handler works ends it promptly, and the interrupted event goes to
// the next replica at once (nak without delay) instead of after the ack wait.
func TestRunnerShutdownHandsOverWork(t *testing.T) {
	e := newEnv(t)
	entered := make(chan struct{}, 1)
	h := &handlerLog{fn: func(ctx context.Context, call int, in Input) (Output, error) {
		if call == 1 {
			entered <- struct{}{}
			<-ctx.Done() // a long tracking wait, interrupted by the shutdown
			return Output{}, ctx.Err()
		}
		return emitting(events.PhaseTracked, "phase_tracked.0")(ctx, call, in)
	}}
	st := Stage{Name: events.StageTracker, Types: []events.Type{events.PhaseApplied}, Handler: h}
	first := e.start(&Runner{Bus: e.bus, Log: e.log}, st, false) // default ack wait: 30s
	seq := e.publishEvent(newEvent(t, events.PhaseApplied, "dep", "phase_applied.0", map[string]any{"target": target}), "dep.phase_applied.0")
	select {
	case <-entered:
	case <-time.After(waitTimeout):
		t.Fatal("handler not called")
	}
	stopped := time.Now()
	if err := first.stop(); err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
	if took := time.Since(stopped); took > 5*time.Second {
		t.Errorf("Run took %s to return after cancel", took)
	}
	e.start(&Runner{Bus: e.bus, Log: e.log}, st, false)
	e.waitAcked(string(events.StageTracker), seq)
	if took := time.Since(stopped); took > 10*time.Second {
		t.Errorf("handed over after %s, want well before the 30s ack wait", took)
	}
	if got := h.calls(); got != 2 {
		t.Errorf("handler ran %d times, want 2", got)
	}
	if n := len(withID(e.messages(bus.DefaultStream), "dep.phase_tracked.0")); n != 1 {
		t.Errorf("phase_tracked stored %d times, want 1", n)
	}
	if dls := e.deadLetters(); len(dls) != 0 {
		t.Errorf("dead letters %+v, want none", dls)
	}
}
