package stage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/deploy"
	"github.com/sealane/sealane/test/harness"
)

// target is the release every test deploys.
var target = events.Target{Cluster: "kind", Namespace: "shop", Release: "api"}

// waitTimeout bounds every wait of these tests.
const waitTimeout = 10 * time.Second

// env is one embedded JetStream server and a Bus on an in-process connection to it.
type env struct {
	t   *testing.T
	srv *server.Server
	bus *bus.Bus
	log *zap.Logger
}

// newEnv starts a JetStream server on a fresh store and a Bus with the default topology. It
// also checks that no goroutine the test started outlives it: the check is registered first,
// so it runs after every other cleanup (runners stopped, connections closed, server down).
func newEnv(t *testing.T) *env {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore, harness.NATSLeftover) })
	srv, err := bus.StartServer(bus.ServerOptions{StoreDir: filepath.Join(t.TempDir(), "js"), Port: -1, ServerName: "stage-test"})
	if err != nil {
		t.Fatalf("start nats server: %v", err)
	}
	t.Cleanup(func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	})
	e := &env{t: t, srv: srv, log: zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel))}
	e.bus, _ = e.newBus("test")
	return e
}

// newBus opens another connection and a Bus on it, as another replica (or a restarted
// process) would; bus.New also (re)creates any missing stream or bucket.
func (e *env) newBus(name string) (*bus.Bus, *nats.Conn) {
	e.t.Helper()
	return e.newBusWith(name, bus.DefaultOptions())
}

// newBusWith is newBus with the given topology options.
func (e *env) newBusWith(name string, opts bus.Options) (*bus.Bus, *nats.Conn) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	nc, err := bus.ConnectInProcess(ctx, e.srv, name)
	if err != nil {
		e.t.Fatalf("connect %s: %v", name, err)
	}
	e.t.Cleanup(nc.Close)
	b, err := bus.New(ctx, nc, opts, e.log.Named(name))
	if err != nil {
		e.t.Fatalf("new bus %s: %v", name, err)
	}
	return b, nc
}

func (e *env) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	e.t.Cleanup(cancel)
	return ctx
}

// running is one Runner.Run in the background.
type running struct {
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// start runs st on r until the test ends or stop is called. Unless allowErr, the test fails
// if Run returns an error.
func (e *env) start(r *Runner, st Stage, allowErr bool) *running {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	x := &running{cancel: cancel, done: make(chan error, 1)}
	go func() { x.done <- r.Run(ctx, st) }()
	e.t.Cleanup(func() {
		if err := x.stop(); err != nil && !allowErr {
			e.t.Errorf("Run(%s) = %v, want nil after cancel", st.Name, err)
		}
	})
	return x
}

// stop cancels Run and waits for it to return.
func (x *running) stop() error {
	x.once.Do(func() {
		x.cancel()
		select {
		case x.err = <-x.done:
		case <-time.After(waitTimeout):
			x.err = errors.New("Run did not return within 10s of cancel")
		}
	})
	return x.err
}

// handlerLog is a Handler that records its inputs and call times and answers with fn.
type handlerLog struct {
	mu    sync.Mutex
	ins   []Input
	times []time.Time
	fn    func(ctx context.Context, call int, in Input) (Output, error)
}

func (h *handlerLog) Handle(ctx context.Context, in Input) (Output, error) {
	h.mu.Lock()
	h.ins = append(h.ins, in)
	h.times = append(h.times, time.Now())
	call := len(h.ins)
	h.mu.Unlock()
	if h.fn == nil {
		return Output{}, nil
	}
	return h.fn(ctx, call, in)
}

func (h *handlerLog) calls() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ins)
}

func (h *handlerLog) inputs() []Input {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Input(nil), h.ins...)
}

func (h *handlerLog) callTimes() []time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]time.Time(nil), h.times...)
}

// emitting returns a handler body that emits one event of type typ at step.
func emitting(typ events.Type, step string) func(context.Context, int, Input) (Output, error) {
	return func(_ context.Context, call int, in Input) (Output, error) {
		return Output{Emits: []Emit{{Type: typ, Step: step, Data: map[string]any{"target": in.Target, "call": call}}}}, nil
	}
}

// newEvent builds an event of deploy deployID as an upstream stage would publish it.
func newEvent(t *testing.T, typ events.Type, deployID, step string, data any) cloudevents.Event {
	t.Helper()
	ev, err := events.New(typ, events.Meta{
		ID:            events.StepID(deployID, step),
		Source:        "/test",
		Target:        target,
		CorrelationID: deployID,
	}, data)
	if err != nil {
		t.Fatalf("new %s event: %v", typ.Token(), err)
	}
	return ev
}

// publishEvent stores ev in the deploy stream under Nats-Msg-Id msgID and returns its
// stream sequence.
func (e *env) publishEvent(ev cloudevents.Event, msgID string) uint64 {
	e.t.Helper()
	msg, err := events.Encode(ev)
	if err != nil {
		e.t.Fatalf("encode %s: %v", ev.ID(), err)
	}
	return e.publishMsg(msg, msgID)
}

// publishMsg stores msg in the deploy stream under Nats-Msg-Id msgID; a duplicate fails the test.
func (e *env) publishMsg(msg *nats.Msg, msgID string) uint64 {
	e.t.Helper()
	ack, err := e.bus.JetStream().PublishMsg(e.ctx(), msg, jetstream.WithMsgID(msgID), jetstream.WithExpectStream(bus.DefaultStream))
	if err != nil {
		e.t.Fatalf("publish %s (%s): %v", msg.Subject, msgID, err)
	}
	if ack.Duplicate {
		e.t.Fatalf("publish %s: msg id %s was a duplicate", msg.Subject, msgID)
	}
	return ack.Sequence
}

// stored is one message read back from a stream.
type stored struct {
	Seq     uint64
	Subject string
	MsgID   string
	Header  nats.Header
	Data    []byte
	Event   cloudevents.Event
	DecErr  error
}

// messages reads every message of stream, oldest first.
func (e *env) messages(stream string) []stored {
	e.t.Helper()
	ctx := e.ctx()
	s, err := e.bus.JetStream().Stream(ctx, stream)
	if err != nil {
		e.t.Fatalf("stream %s: %v", stream, err)
	}
	st := s.CachedInfo().State
	var out []stored
	if st.Msgs == 0 {
		return nil
	}
	for seq := st.FirstSeq; seq <= st.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			e.t.Fatalf("stream %s seq %d: %v", stream, seq, err)
		}
		ev, derr := events.Decode(m.Header, m.Data)
		out = append(out, stored{Seq: m.Sequence, Subject: m.Subject, MsgID: m.Header.Get(jetstream.MsgIDHeader),
			Header: m.Header, Data: m.Data, Event: ev, DecErr: derr})
	}
	return out
}

// ofType keeps the decodable messages of type typ.
func ofType(ms []stored, typ events.Type) []stored {
	var out []stored
	for _, m := range ms {
		if m.DecErr == nil && events.Type(m.Event.Type()) == typ {
			out = append(out, m)
		}
	}
	return out
}

// withID keeps the messages whose event id is id.
func withID(ms []stored, id string) []stored {
	var out []stored
	for _, m := range ms {
		if m.DecErr == nil && m.Event.ID() == id {
			out = append(out, m)
		}
	}
	return out
}

// waitFor polls cond every 20ms until it holds, failing the test after timeout.
func (e *env) waitFor(timeout time.Duration, what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitStored waits until the deploy stream holds an event with id, and returns the messages.
func (e *env) waitStored(stream, id string) []stored {
	e.t.Helper()
	var ms []stored
	e.waitFor(waitTimeout, fmt.Sprintf("event %s in %s", id, stream), func() bool {
		ms = e.messages(stream)
		return len(withID(ms, id)) > 0
	})
	return ms
}

// consumerInfo returns the durable's info, nil while it does not exist.
func (e *env) consumerInfo(durable string) *jetstream.ConsumerInfo {
	e.t.Helper()
	ctx := e.ctx()
	c, err := e.bus.JetStream().Consumer(ctx, bus.DefaultStream, durable)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil
	}
	if err != nil {
		e.t.Fatalf("consumer %s: %v", durable, err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		e.t.Fatalf("consumer %s info: %v", durable, err)
	}
	return info
}

// waitAcked waits until durable has settled (acked or terminated) everything through stream
// sequence seq and holds nothing unacknowledged.
func (e *env) waitAcked(durable string, seq uint64) *jetstream.ConsumerInfo {
	e.t.Helper()
	var info *jetstream.ConsumerInfo
	e.waitFor(waitTimeout, fmt.Sprintf("%s to ack through stream seq %d", durable, seq), func() bool {
		info = e.consumerInfo(durable)
		return info != nil && info.AckFloor.Stream >= seq && info.NumAckPending == 0 && info.NumPending == 0
	})
	return info
}

// state reads a deploy's state and its KV revision (nil, 0 when there is none).
func (e *env) state(deployID string) (*deploy.State, uint64) {
	e.t.Helper()
	entry, err := e.bus.State().Get(e.ctx(), deploy.Key(deployID))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0
	}
	if err != nil {
		e.t.Fatalf("state of %s: %v", deployID, err)
	}
	var s deploy.State
	if err := json.Unmarshal(entry.Value(), &s); err != nil {
		e.t.Fatalf("state of %s: %v", deployID, err)
	}
	return &s, entry.Revision()
}

// seed creates a deploy's state as an earlier stage would have saved it.
func (e *env) seed(s deploy.State) uint64 {
	e.t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		e.t.Fatal(err)
	}
	rev, err := e.bus.State().Create(e.ctx(), deploy.Key(s.ID), b)
	if err != nil {
		e.t.Fatalf("seed state of %s: %v", s.ID, err)
	}
	return rev
}

// deadLetters lists the recorded dead letters.
func (e *env) deadLetters() []bus.DeadLetter {
	e.t.Helper()
	dls, err := e.bus.DeadLetters(e.ctx())
	if err != nil {
		e.t.Fatalf("dead letters: %v", err)
	}
	return dls
}

// checkEmitted checks the CloudEvent attributes and the NATS message of an event a stage
// published: deterministic id used as Nats-Msg-Id, the deploy's correlation id, the cause,
// the stage as source, the target as subject.
func checkEmitted(t *testing.T, m stored, typ events.Type, id, deployID, cause string, st events.Stage) {
	t.Helper()
	ev := m.Event
	if events.Type(ev.Type()) != typ {
		t.Errorf("event %s: type %s, want %s", ev.ID(), ev.Type(), typ)
	}
	if ev.ID() != id || m.MsgID != id {
		t.Errorf("event id %q, Nats-Msg-Id %q, want both %q", ev.ID(), m.MsgID, id)
	}
	if got := events.CorrelationID(ev); got != deployID {
		t.Errorf("event %s: correlation id %q, want %q", id, got, deployID)
	}
	if got := events.CausationID(ev); got != cause {
		t.Errorf("event %s: causation id %q, want %q", id, got, cause)
	}
	if got, want := ev.Source(), "/sealane/"+string(st); got != want {
		t.Errorf("event %s: source %q, want %q", id, got, want)
	}
	if ev.Subject() != target.String() {
		t.Errorf("event %s: subject %q, want %q", id, ev.Subject(), target.String())
	}
	if want := events.NATSSubject(typ, target); m.Subject != want {
		t.Errorf("event %s: NATS subject %q, want %q", id, m.Subject, want)
	}
}
