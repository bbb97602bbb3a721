package console

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/coordinator"
	"github.com/sealane/sealane/test/harness"
)

// world is an embedded JetStream with a Bus and a console serving on a random port.
type world struct {
	bus *bus.Bus
	url string
	srv *Server
}

func newWorld(t *testing.T, opts Options) *world {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore, harness.NATSLeftover) })
	ns, err := bus.StartServer(bus.ServerOptions{StoreDir: filepath.Join(t.TempDir(), "js"), Port: -1, ServerName: "console-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Shutdown)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, err := bus.ConnectInProcess(ctx, ns, "console-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	b, err := bus.New(ctx, nc, bus.DefaultOptions(), zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	opts.Log = zaptest.NewLogger(t)
	srv, err := New(b, opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return &world{bus: b, url: "http://" + ln.Addr().String(), srv: srv}
}

var target = events.Target{Cluster: "c1", Namespace: "console-ns", Release: "web"}

// publish publishes one event of deploy id (the log stream for LogLines).
func (w *world) publish(t *testing.T, id string, n int, typ events.Type, data any) {
	t.Helper()
	e, err := events.New(typ, events.Meta{ID: events.StepID(id, typ.Token(), n), Source: "/test", Target: target, CorrelationID: id}, data)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := events.Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if typ == events.LogLines {
		_, err = w.bus.PublishLog(ctx, msg, e.ID())
	} else {
		_, err = w.bus.Publish(ctx, msg, e.ID())
	}
	if err != nil {
		t.Fatal(err)
	}
}

// sse reads server-sent events from the console's stream.
type sse struct {
	resp *http.Response
	sc   *bufio.Scanner
}

func (w *world) stream(t *testing.T, ctx context.Context, header http.Header) *sse {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, w.url+"/api/stream", nil)
	req.Header = header
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: %s", resp.Status)
	}
	return &sse{resp: resp, sc: bufio.NewScanner(resp.Body)}
}

// next returns the next event's name and data (comments skipped).
func (s *sse) next(t *testing.T) (string, string) {
	t.Helper()
	var name, data string
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case line == "" && name != "":
			return name, data
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		}
	}
	t.Fatalf("stream ended: %v", s.sc.Err())
	return "", ""
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// TestDeployFollowedLive: a browser connected before the deploy gets the empty snapshot, then
// every event with its deploy's summary as it is stored (logs too); the API has the deploy's
// events and the release's history line.
func TestDeployFollowedLive(t *testing.T) {
	w := newWorld(t, DefaultOptions())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := w.stream(t, ctx, nil)
	if name, data := s.next(t); name != "hello" || data != `{"deploys":[]}` {
		t.Fatalf("first message %s %s, want hello with no deploys", name, data)
	}
	dep := events.ResourceRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	w.publish(t, "d1", 0, events.DeployRequested, events.RequestedData{Target: target, Chart: events.ChartSource{Name: "demo", Version: "1.0.0"},
		RequestedBy: "alice", Git: &events.Git{Commit: "abc123"}})
	w.publish(t, "d1", 0, events.PhaseApplied, events.PhaseAppliedData{Target: target, Revision: 1, Phase: 1, Phases: 1,
		Waits: []events.Wait{{Resource: dep, Until: "ready"}}})
	w.publish(t, "d1", 0, events.LogLines, events.LogLinesData{Target: target, Resource: dep, Pod: "web-1", Container: "app",
		Lines: []events.LogLine{{Text: "listening on :8080"}}})
	w.publish(t, "d1", 1, events.ResourceProgressed, events.ProgressedData{Target: target, Revision: 1, Phase: 1, Resource: dep, State: events.StateReady, Ready: 1, Desired: 1})
	w.publish(t, "d1", 0, events.ReleaseRecorded, events.RecordedData{Target: target, Revision: 1, Status: "deployed", Outcome: events.OutcomeSucceeded, RequestedBy: "alice"})

	types := map[string]bool{}
	var last entryMessage
	for len(types) < 5 {
		name, data := s.next(t)
		if name != "entry" {
			t.Fatalf("got %s, want entry", name)
		}
		if err := json.Unmarshal([]byte(data), &last); err != nil {
			t.Fatal(err)
		}
		types[last.Entry.Type] = true
		if last.Entry.Stored.IsZero() || last.Entry.Deploy != "d1" {
			t.Fatalf("entry %+v lacks its stored time or deploy", last.Entry)
		}
	}
	if d := last.Deploy; d.Status != StatusSucceeded || d.Revision != 1 || d.Chart != "demo-1.0.0" || d.Commit != "abc123" || d.RequestedBy != "alice" {
		t.Errorf("summary after the last event = %+v", d)
	}
	var detail deployDetailResponse
	getJSON(t, w.url+"/api/deploys/d1", &detail)
	if len(detail.Entries) != 5 {
		t.Errorf("detail has %d entries, want 5", len(detail.Entries))
	}
	var rels []Release
	getJSON(t, w.url+"/api/releases", &rels)
	if len(rels) != 1 || len(rels[0].History) != 1 || rels[0].History[0].Commit != "abc123" || rels[0].History[0].Status != "deployed" {
		t.Errorf("releases = %+v", rels)
	}
	var ros []rolloutView
	getJSON(t, w.url+"/api/rollouts", &ros) // no coordinator: an empty list, not an error
	var dls []bus.DeadLetterView
	getJSON(t, w.url+"/api/deadletters", &dls)
}

// TestReconnectGetsSnapshot: a browser connecting after a deploy gets it in its snapshot.
func TestReconnectGetsSnapshot(t *testing.T) {
	w := newWorld(t, DefaultOptions())
	w.publish(t, "d2", 0, events.DeployFailed, events.FailedData{Target: target, Stage: events.StageTracker, Reason: "pod crash-looping"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := w.stream(t, ctx, nil)
		_, data := s.next(t)
		var h hello
		if err := json.Unmarshal([]byte(data), &h); err != nil {
			t.Fatal(err)
		}
		if len(h.Deploys) == 1 {
			if d := h.Deploys[0]; d.Status != StatusFailed || d.Reason != "pod crash-looping" {
				t.Fatalf("snapshot deploy = %+v", d)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the snapshot never had the deploy: %s", data)
		}
		s.resp.Body.Close()
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSlowClientDropped: a client whose buffer is full is dropped (gone closed), the others
// still get every message.
func TestSlowClientDropped(t *testing.T) {
	h := newHub(2)
	slow, fast := h.join([]byte("hello")), h.join([]byte("hello"))
	<-fast.ch
	h.broadcast([]byte("1"))
	<-fast.ch
	h.broadcast([]byte("2"))
	select {
	case <-slow.gone:
	default:
		t.Fatal("the slow client was not dropped")
	}
	if h.dropped != 1 || len(h.clients) != 1 {
		t.Fatalf("dropped %d, clients %d; want 1 and 1", h.dropped, len(h.clients))
	}
	if got := string(<-fast.ch); got != "2" {
		t.Fatalf("fast client got %q", got)
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name, addr, token, proxy string
		open                     bool // ErrOpenBind expected
	}{
		{name: "loopback v4", addr: "127.0.0.1:8090"},
		{name: "loopback v6", addr: "[::1]:8090"},
		{name: "localhost", addr: "localhost:8090"},
		{name: "all interfaces", addr: ":8090", open: true},
		{name: "any address", addr: "0.0.0.0:8090", open: true},
		{name: "public with token", addr: "0.0.0.0:8090", token: "t"},
		{name: "public with proxy header", addr: "10.0.0.1:8090", proxy: "X-Forwarded-User"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions()
			o.Addr, o.Token, o.AuthProxyHeader = tc.addr, tc.token, tc.proxy
			err := o.Validate()
			if errors.Is(err, ErrOpenBind) != tc.open {
				t.Fatalf("Validate() = %v, want ErrOpenBind: %v", err, tc.open)
			}
			if !tc.open && err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRolloutChangesPushed: the rollout bucket made after the console started (the first
// coordinator) is found, and a change of a rollout record reaches the browsers.
func TestRolloutChangesPushed(t *testing.T) {
	old := rolloutRetry
	rolloutRetry = 100 * time.Millisecond
	t.Cleanup(func() { rolloutRetry = old })
	w := newWorld(t, DefaultOptions())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := w.stream(t, ctx, nil)
	s.next(t) // hello
	kv, err := coordinator.OpenBucket(ctx, w.bus, true)
	if err != nil {
		t.Fatal(err)
	}
	// Binding the bucket says "fetch again" (key ""), then changes come one by one.
	if name, data := s.next(t); name != "rollout" || data != `{"key":""}` {
		t.Fatalf("got %s %s, want the rollout refresh after the bucket was found", name, data)
	}
	// A Put made before the watch began is not seen: put until one is.
	done := make(chan struct{})
	putting := make(chan struct{})
	go func() {
		defer close(putting)
		for {
			if _, err := kv.Put(ctx, "rollouts.ro-1", []byte(`{}`)); err != nil && ctx.Err() == nil {
				t.Errorf("put: %v", err)
				return
			}
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	name, data := s.next(t)
	close(done)
	<-putting
	if name != "rollout" || data != `{"key":"rollouts.ro-1"}` {
		t.Fatalf("got %s %s, want the rollout's change", name, data)
	}
}
