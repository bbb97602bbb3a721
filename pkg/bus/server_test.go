package bus

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/sealane/sealane/test/harness"
)

// testEnv is one embedded server, an in-process connection and a Bus on it.
type testEnv struct {
	t   *testing.T
	dir string
	srv *server.Server
	nc  *nats.Conn
	bus *Bus
	log *zap.Logger
}

// newTestEnv starts a JetStream server on a fresh store (random port) and a Bus with defaults.
// Everything is torn down in t.Cleanup.
func newTestEnv(t *testing.T) *testEnv {
	t.Helper()
	e := newServerEnv(t)
	e.newBus()
	return e
}

// newServerEnv is newTestEnv without the Bus: nothing is created in JetStream yet.
func newServerEnv(t *testing.T) *testEnv {
	t.Helper()
	e := &testEnv{t: t, dir: t.TempDir(), log: zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel))}
	e.startServer()
	t.Cleanup(e.stop)
	return e
}

// startServer starts the server on e.dir and connects to it.
func (e *testEnv) startServer() {
	e.t.Helper()
	srv, err := StartServer(ServerOptions{StoreDir: e.dir, Port: -1, ServerName: "test"})
	if err != nil {
		e.t.Fatalf("start server: %v", err)
	}
	e.srv = srv
	e.nc = e.connect("test")
}

// newBus creates e.bus with the default topology.
func (e *testEnv) newBus() {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	if e.bus, err = New(ctx, e.nc, DefaultOptions(), e.log); err != nil {
		e.t.Fatalf("new bus: %v", err)
	}
}

// connect opens another in-process connection (another replica); stop closes it with the server.
func (e *testEnv) connect(name string) *nats.Conn {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	nc, err := ConnectInProcess(ctx, e.srv, name)
	if err != nil {
		e.t.Fatalf("connect: %v", err)
	}
	e.t.Cleanup(nc.Close)
	return nc
}

// replica returns a second Bus on its own connection, as another replica of a stage would.
func (e *testEnv) replica(name string) *Bus {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := New(ctx, e.connect(name), DefaultOptions(), e.log.Named(name))
	if err != nil {
		e.t.Fatalf("new bus %s: %v", name, err)
	}
	return b
}

// stop closes the connection and shuts the server down, waiting for it.
func (e *testEnv) stop() {
	if e.nc != nil {
		e.nc.Close()
	}
	if e.srv != nil {
		e.srv.Shutdown()
		e.srv.WaitForShutdown()
	}
	e.nc, e.srv, e.bus = nil, nil, nil
}

// restart stops the server and starts a new one on the same store.
func (e *testEnv) restart() {
	e.t.Helper()
	e.stop()
	e.startServer()
	e.newBus()
}

// checkLeaks fails the test if goroutines started after this call are still running once
// every cleanup (including server shutdown) has run. Call it first in the test.
func checkLeaks(t *testing.T) {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore, harness.NATSLeftover) })
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStartServerRequiresStoreDir(t *testing.T) {
	if _, err := StartServer(ServerOptions{Port: -1}); err == nil || !strings.Contains(err.Error(), "StoreDir") {
		t.Fatalf("StartServer without StoreDir: err = %v, want StoreDir error", err)
	}
}

func TestStartServerListenModes(t *testing.T) {
	ctx := harness.Context(t, 20*time.Second)
	t.Run("random port", func(t *testing.T) {
		s, err := StartServer(ServerOptions{StoreDir: t.TempDir(), Port: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { s.Shutdown(); s.WaitForShutdown() }()
		nc, err := Connect(ctx, s.ClientURL(), "tcp-client")
		if err != nil {
			t.Fatalf("Connect %s: %v", s.ClientURL(), err)
		}
		defer nc.Close()
		if _, err := New(ctx, nc, DefaultOptions(), nil); err != nil {
			t.Fatalf("New over TCP: %v", err)
		}
	})
	t.Run("in-process only", func(t *testing.T) {
		s, err := StartServer(ServerOptions{StoreDir: t.TempDir(), Port: 0})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { s.Shutdown(); s.WaitForShutdown() }()
		if s.Addr() != nil {
			t.Errorf("Port 0 server listens on %v, want no listener", s.Addr())
		}
		nc, err := ConnectInProcess(ctx, s, "in-process")
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		if _, err := New(ctx, nc, DefaultOptions(), nil); err != nil {
			t.Fatalf("New in-process: %v", err)
		}
	})
}

func TestConnectGivesUpWhenContextEnds(t *testing.T) {
	ctx := harness.Context(t, 700*time.Millisecond)
	start := time.Now()
	_, err := Connect(ctx, "nats://127.0.0.1:1", "nobody")
	if err == nil {
		t.Fatal("Connect to a closed port succeeded")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Connect took %s after ctx ended", took)
	}
}

func TestRestartKeepsStreamAndDurableProgress(t *testing.T) {
	checkLeaks(t)
	e := newTestEnv(t)
	for i := range 3 {
		publishTest(t, e.bus, testSubject, fmt.Sprint(i), fmt.Sprintf("keep-%d", i))
	}
	var calls atomic.Int32
	handler := func(ctx context.Context, msg jetstream.Msg) error {
		calls.Add(1)
		return nil
	}
	opts := ConsumerOptions{Durable: "recorder", AckWait: time.Second}
	stop := startConsume(t, e.bus, opts, handler)
	waitAcked(t, e.bus, "recorder", 3)
	stop()

	e.restart()
	s, err := e.bus.JetStream().Stream(t.Context(), DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	if n := s.CachedInfo().State.Msgs; n != 3 {
		t.Fatalf("after restart the stream holds %d messages, want 3", n)
	}
	if info := consumerInfo(t, e.bus, "recorder"); info == nil || info.AckFloor.Stream != 3 {
		t.Fatalf("after restart the durable is %+v, want ack floor 3", info)
	}

	calls.Store(0)
	stop = startConsume(t, e.bus, opts, handler)
	time.Sleep(2*opts.AckWait + 200*time.Millisecond)
	if got := calls.Load(); got != 0 {
		t.Fatalf("after restart %d acked messages were redelivered", got)
	}
	publishTest(t, e.bus, testSubject, "3", "keep-3")
	waitAcked(t, e.bus, "recorder", 4)
	stop()
	if got := calls.Load(); got != 1 {
		t.Errorf("after restart handled %d messages, want only the new one", got)
	}
}
