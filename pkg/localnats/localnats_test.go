package localnats

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/test/harness"
)

func open(t *testing.T, dir, name string) *Node {
	t.Helper()
	n, err := Open(harness.Context(t, 30*time.Second), Options{Dir: dir, Name: name, Log: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	t.Cleanup(n.Close)
	return n
}

func serving(nodes ...*Node) int {
	k := 0
	for _, n := range nodes {
		if n.Serving() {
			k++
		}
	}
	return k
}

// Processes started at once on one directory: exactly one serves, all are connected, and
// a message one publishes reaches another.
func TestOneServerForManyProcesses(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(), harness.NATSLeftover)
	dir := t.TempDir()
	nodes := make([]*Node, 6)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() {
			n, err := Open(harness.Context(t, 30*time.Second), Options{Dir: dir, Name: "p", Log: zaptest.NewLogger(t)})
			if err != nil {
				t.Errorf("open %d: %v", i, err)
				return
			}
			nodes[i] = n
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	defer func() {
		for _, n := range nodes {
			n.Close()
		}
	}()
	if k := serving(nodes...); k != 1 {
		t.Fatalf("%d processes serve the store; want exactly 1", k)
	}
	sub, err := nodes[5].Conn().SubscribeSync("hello")
	if err != nil {
		t.Fatal(err)
	}
	if err := nodes[5].Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	if err := nodes[0].Conn().Publish("hello", []byte("world")); err != nil {
		t.Fatal(err)
	}
	if m, err := sub.NextMsg(5 * time.Second); err != nil || string(m.Data) != "world" {
		t.Fatalf("message between two processes: %v, %v", m, err)
	}
}

// When the serving process leaves, another takes the store over, with what was stored, and
// the others reconnect to it; a process opened later joins the new server.
func TestTakeOverWhenTheServerLeaves(t *testing.T) {
	dir := t.TempDir()
	first := open(t, dir, "first")
	second := open(t, dir, "second")
	third := open(t, dir, "third")
	if !first.Serving() || serving(second, third) != 0 {
		t.Fatalf("serving: first %v, second %v, third %v; want the first only", first.Serving(), second.Serving(), third.Serving())
	}
	ctx := harness.Context(t, time.Minute)
	b, err := bus.New(ctx, second.Conn(), bus.DefaultOptions(), zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.State().Put(ctx, "kept", []byte("across the hand-over")); err != nil {
		t.Fatal(err)
	}

	first.Close()
	// The calls of the others wait for the next server (each attempt bounded; see bus.Call).
	e, err := b.State().Get(ctx, "kept")
	if err != nil || string(e.Value()) != "across the hand-over" {
		t.Fatalf("after the hand-over: %v, %v", e, err)
	}
	if k := serving(second, third); k != 1 {
		t.Fatalf("%d of the remaining processes serve the store; want 1", k)
	}
	if _, err := os.Stat(filepath.Join(dir, addrFile)); err != nil {
		t.Errorf("address file after the hand-over: %v", err)
	}
	fourth := open(t, dir, "fourth")
	if fourth.Serving() {
		t.Error("a process opened after the hand-over serves a second server")
	}
	// The third reconnects on its own schedule (reconnectWait plus jitter), so it is asked to
	// receive a message rather than to be connected at this instant: its subscription and the
	// PING of the flush are sent when it is back, and the PONG proves the subscription is in.
	sub, err := third.Conn().SubscribeSync("after.handover")
	if err != nil {
		t.Fatal(err)
	}
	if err := third.Conn().FlushTimeout(10 * time.Second); err != nil {
		t.Fatalf("the third process did not reconnect to the new server: %v", err)
	}
	if err := fourth.Conn().Publish("after.handover", []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if m, err := sub.NextMsg(5 * time.Second); err != nil || string(m.Data) != "hi" {
		t.Errorf("after the hand-over, a message from the fourth to the third: %v, %v", m, err)
	}
}

// Only who holds the directory's token connects.
func TestServerNeedsTheToken(t *testing.T) {
	dir := t.TempDir()
	n := open(t, dir, "server")
	addr, err := os.ReadFile(filepath.Join(dir, addrFile))
	if err != nil {
		t.Fatal(err)
	}
	if nc, err := nats.Connect("nats://"+string(addr[:len(addr)-1]), nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("connected without the token")
	}
	info, err := os.Stat(filepath.Join(dir, tokenFile))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("token file: %v, mode %v; want 0600", err, info.Mode())
	}
	if !n.Conn().IsConnected() {
		t.Error("the serving process itself is not connected")
	}
}

// A directory another process is still starting to serve (locked, no address yet) is joined
// once its server is up.
func TestOpenWaitsForTheServingProcess(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := tryLock(f); !ok || err != nil {
		t.Fatalf("lock: %v, %v", ok, err)
	}
	// Release the lock a moment later: Open must then serve itself (the standby would, too).
	time.AfterFunc(500*time.Millisecond, func() { f.Close() })
	n := open(t, dir, "late")
	deadline := time.Now().Add(10 * time.Second)
	for !n.Serving() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if !n.Serving() || !n.Conn().IsConnected() {
		t.Fatalf("serving %v, connected %v; want the store served by the process that waited", n.Serving(), n.Conn().IsConnected())
	}
}
