package bus

import (
	"context"
	"errors"
	"net"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sealane/sealane/test/harness"
)

// restartable is a server on a fixed TCP port and store that can be stopped and started again,
// with a Bus connected to it over TCP (reconnecting forever, as services connect).
type restartable struct {
	t    *testing.T
	dir  string
	port int
	srv  *server.Server
	bus  *Bus
}

func newRestartable(t *testing.T) *restartable {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &restartable{t: t, dir: t.TempDir(), port: l.Addr().(*net.TCPAddr).Port}
	l.Close()
	r.start()
	t.Cleanup(r.stop)
	ctx := harness.Context(t, 30*time.Second)
	nc, err := Connect(ctx, r.srv.ClientURL(), "restartable")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if r.bus, err = New(ctx, nc, DefaultOptions(), newTestEnv(t).log); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *restartable) start() {
	r.t.Helper()
	srv, err := StartServer(ServerOptions{StoreDir: r.dir, Port: r.port, ServerName: "restartable"})
	if err != nil {
		r.t.Fatal(err)
	}
	r.srv = srv
}

func (r *restartable) stop() {
	if r.srv != nil {
		r.srv.Shutdown()
		r.srv.WaitForShutdown()
		r.srv = nil
	}
}

// Calls made while the server is down wait for it (each attempt bounded) and succeed once it
// is back; a watcher goes on delivering after the restart.
func TestKVAcrossServerRestart(t *testing.T) {
	r := newRestartable(t)
	kv := r.bus.State()
	ctx := harness.Context(t, time.Minute)
	seen := make(chan string, 16)
	wctx, stopWatch := context.WithCancel(ctx)
	watched := make(chan error, 1)
	go func() {
		watched <- kv.Watch(wctx, "w.>", func(e jetstream.KeyValueEntry) error {
			seen <- e.Key() + "=" + string(e.Value())
			return nil
		})
	}()
	time.Sleep(200 * time.Millisecond) // the watch starts after now
	if _, err := kv.Put(ctx, "w.a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	expect := func(want string) {
		t.Helper()
		select {
		case got := <-seen:
			if got != want {
				t.Fatalf("watched %q, want %q", got, want)
			}
		case <-ctx.Done():
			t.Fatalf("watch delivered nothing; want %q", want)
		}
	}
	expect("w.a=1")

	r.stop()
	down := time.AfterFunc(1500*time.Millisecond, r.start)
	defer down.Stop()
	rev, err := kv.Create(ctx, "w.b", []byte("2")) // issued while the server is down
	if err != nil {
		t.Fatalf("Create across the restart = %v", err)
	}
	if e, err := kv.Get(ctx, "w.b"); err != nil || e.Revision() != rev {
		t.Fatalf("Get after the restart = %v, %v; want revision %d", e, err, rev)
	}
	keys, err := kv.Keys(ctx, "w.>")
	sort.Strings(keys)
	if err != nil || !cmp.Equal(keys, []string{"w.a", "w.b"}) {
		t.Errorf("Keys = %v, %v", keys, err)
	}
	expect("w.b=2")
	if err := kv.Delete(ctx, "w.a", 0); err != nil {
		t.Fatal(err)
	}
	expect("w.a=")
	stopWatch()
	if err := <-watched; err != nil {
		t.Errorf("Watch = %v", err)
	}
}

func TestKVWatchStopsOnCallbackError(t *testing.T) {
	e := newTestEnv(t)
	ctx := harness.Context(t, 20*time.Second)
	boom := errors.New("boom")
	done := make(chan error, 1)
	go func() {
		done <- e.bus.State().Watch(ctx, ">", func(jetstream.KeyValueEntry) error { return boom })
	}()
	time.Sleep(200 * time.Millisecond)
	if _, err := e.bus.State().Put(ctx, "x", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, boom) {
		t.Fatalf("Watch = %v; want the callback's error", err)
	}
}
