package bus

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sealane/sealane/test/harness"
)

func TestCallRetriesTransientErrorsOnly(t *testing.T) {
	tests := []struct {
		name      string
		errs      []error // the attempts' errors, in order; nil ends
		wantCalls int
		wantErr   error
	}{
		{"success at once", []error{nil}, 1, nil},
		{"no responders, then success", []error{nats.ErrNoResponders, nats.ErrNoResponders, nil}, 3, nil},
		{"attempt deadline, then success", []error{context.DeadlineExceeded, nil}, 2, nil},
		{"reconnecting, then success", []error{nats.ErrConnectionReconnecting, nil}, 2, nil},
		{"503, then success", []error{&jetstream.APIError{Code: 503}, nil}, 2, nil},
		{"not found is final", []error{jetstream.ErrKeyNotFound}, 1, jetstream.ErrKeyNotFound},
		{"conflict is final", []error{jetstream.ErrKeyExists}, 1, jetstream.ErrKeyExists},
		{"closed connection is final", []error{nats.ErrConnectionClosed}, 1, nats.ErrConnectionClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			err := do(harness.Context(t, 10*time.Second), nil, func(context.Context) error {
				calls++
				return tt.errs[calls-1]
			})
			if calls != tt.wantCalls || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Errorf("Do: %d calls, error %v; want %d calls, error %v", calls, err, tt.wantCalls, tt.wantErr)
			}
		})
	}
}

// A call that never answers gets its own deadline and is tried again: it cannot wait for the
// caller's (a deploy's) whole deadline.
func TestCallGivesEachAttemptItsOwnDeadline(t *testing.T) {
	var calls atomic.Int32
	start := time.Now()
	v, err := callWithin(harness.Context(t, time.Minute), nil, 50*time.Millisecond, func(ctx context.Context) (string, error) {
		if calls.Add(1) < 3 {
			<-ctx.Done() // a request whose answer never comes
			return "", ctx.Err()
		}
		return "answer", nil
	})
	if err != nil || v != "answer" || calls.Load() != 3 {
		t.Fatalf("callWithin = %q, %v after %d calls; want the third attempt's answer", v, err, calls.Load())
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("took %s: the attempts waited for the caller's deadline", took)
	}
}

func TestCallEndsWithTheCallersContextAndNamesTheLastError(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := do(ctx, nil, func(context.Context) error { return nats.ErrNoResponders })
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), nats.ErrNoResponders.Error()) {
		t.Fatalf("Do = %v; want the context's deadline, naming the last attempt's error", err)
	}
}

// lossyProxy forwards TCP connections to a NATS server; while lose is set it swallows what
// the client sends, as a server that dies with a request does: the request is never answered.
type lossyProxy struct {
	l      net.Listener
	target string
	lose   atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
}

func newLossyProxy(t *testing.T, target string) *lossyProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &lossyProxy{l: l, target: target}
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *lossyProxy) url() string { return "nats://" + p.l.Addr().String() }

func (p *lossyProxy) accept() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(c, s); c.Close() }()
		go func() {
			buf := make([]byte, 32<<10)
			for {
				n, err := c.Read(buf)
				if n > 0 && !p.lose.Load() {
					if _, werr := s.Write(buf[:n]); werr != nil {
						break
					}
				}
				if err != nil {
					break
				}
			}
			s.Close()
		}()
	}
}

func (p *lossyProxy) close() {
	p.l.Close()
	p.cut()
}

// cut closes every proxied connection; new ones are accepted.
func (p *lossyProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// tcpEnv is a server on a TCP port and a Bus connected to it through a lossy proxy.
func tcpEnv(t *testing.T) (*testEnv, *lossyProxy, *Bus) {
	t.Helper()
	e := &testEnv{t: t, dir: t.TempDir(), log: newTestEnv(t).log}
	srv, err := StartServer(ServerOptions{StoreDir: e.dir, Port: -1, ServerName: "tcp"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	px := newLossyProxy(t, srv.Addr().String())
	ctx := harness.Context(t, 30*time.Second)
	nc, err := Connect(ctx, px.url(), "lossy")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	b, err := New(ctx, nc, DefaultOptions(), e.log)
	if err != nil {
		t.Fatal(err)
	}
	return e, px, b
}

// A KV read whose request is lost (issue 12: a lease read issued as NATS restarted hung for
// the deploy's 3-minute deadline) is answered by a later attempt.
func TestKVGetSurvivesALostRequest(t *testing.T) {
	_, px, b := tcpEnv(t)
	ctx := harness.Context(t, time.Minute)
	if _, err := b.Leases().Put(ctx, "lease.x", []byte("held")); err != nil {
		t.Fatal(err)
	}
	px.lose.Store(true)
	time.AfterFunc(time.Second, func() { px.lose.Store(false) })
	e, err := b.Leases().Get(ctx, "lease.x") // the caller's deadline is a minute away
	if err != nil || string(e.Value()) != "held" {
		t.Fatalf("Get after a lost request = %v; want the value, from a later attempt", err)
	}
}

// answerLost is a bucket whose next write (while armed) is applied and then reported as a
// timed-out attempt, as when the connection dies between the server's write and its answer.
type answerLost struct {
	jetstream.KeyValue
	armed atomic.Bool
}

func (a *answerLost) lose(rev uint64, err error) (uint64, error) {
	if err == nil && a.armed.CompareAndSwap(true, false) {
		return 0, context.DeadlineExceeded
	}
	return rev, err
}

func (a *answerLost) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	return a.lose(a.KeyValue.Create(ctx, key, value, opts...))
}

func (a *answerLost) Update(ctx context.Context, key string, value []byte, last uint64) (uint64, error) {
	return a.lose(a.KeyValue.Update(ctx, key, value, last))
}

func (a *answerLost) Delete(ctx context.Context, key string, opts ...jetstream.KVDeleteOpt) error {
	_, err := a.lose(0, a.KeyValue.Delete(ctx, key, opts...))
	return err
}

// A compare-and-set write whose answer is lost is applied once and reported as applied: its
// retry meets the write itself and recognises it.
func TestKVWriteWhoseAnswerIsLostIsRecognised(t *testing.T) {
	e := newTestEnv(t)
	ctx := harness.Context(t, 30*time.Second)
	lossy := &answerLost{KeyValue: e.bus.State().kv}
	kv := newKV(lossy, e.bus.js, e.bus.link, e.log)

	lossy.armed.Store(true)
	rev, err := kv.Create(ctx, "k", []byte("v1"))
	if err != nil {
		t.Fatalf("Create whose answer was lost = %v; want success", err)
	}
	lossy.armed.Store(true)
	rev2, err := kv.Update(ctx, "k", []byte("v2"), rev)
	if err != nil || rev2 != rev+1 {
		t.Fatalf("Update whose answer was lost = %d, %v; want revision %d", rev2, err, rev+1)
	}
	if got, err := kv.Get(ctx, "k"); err != nil || string(got.Value()) != "v2" || got.Revision() != rev2 {
		t.Fatalf("after the update: %v, %v; want v2 at revision %d (written once)", got, err, rev2)
	}
	lossy.armed.Store(true)
	if err := kv.Delete(ctx, "k", rev2); err != nil {
		t.Fatalf("Delete whose answer was lost = %v; want success", err)
	}
	if _, err := kv.Get(ctx, "k"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("k after its delete: %v; want not found", err)
	}

	// Real conflicts stay conflicts, lost answer or not: another writer's value is not ours.
	if _, err := kv.Create(ctx, "other", []byte("theirs")); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Create(ctx, "other", []byte("mine")); !Conflict(err) {
		t.Errorf("Create of an existing key = %v; want a conflict", err)
	}
	if _, err := kv.Update(ctx, "other", []byte("mine"), 1); !Conflict(err) {
		t.Errorf("stale Update = %v; want a conflict", err)
	}
}

// An attempt ends as soon as its connection drops, whatever its deadline: its answer cannot
// come any more. The next attempt, on the new connection, is not affected.
func TestAttemptEndsWhenTheConnectionDrops(t *testing.T) {
	_, px, b := tcpEnv(t)
	ctx := harness.Context(t, time.Minute)
	actx, cancel := b.link.attempt(ctx, time.Minute)
	defer cancel()
	px.cut()
	select {
	case <-actx.Done():
	case <-ctx.Done():
		t.Fatal("the attempt outlived its connection")
	}
	if !lost(actx) {
		t.Fatalf("attempt ended with %v; want errConnectionLost", context.Cause(actx))
	}
	// Once reconnected, calls go on.
	if _, err := b.State().Put(ctx, "after", []byte("drop")); err != nil {
		t.Fatalf("Put after the drop: %v", err)
	}
	next, cancel2 := b.link.attempt(ctx, time.Minute)
	defer cancel2()
	if next.Err() != nil {
		t.Fatalf("a new attempt on the new connection is already done: %v", context.Cause(next))
	}
}
