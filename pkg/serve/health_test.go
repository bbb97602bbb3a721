package serve

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/sealane/sealane/pkg/bus"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestProbesFollowTheNATSConnection(t *testing.T) {
	srv, err := bus.StartServer(bus.ServerOptions{StoreDir: t.TempDir(), Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	node, err := Open(ctx, Options{NATSURL: srv.ClientURL(), Provision: true, Name: "probes", Log: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	web := httptest.NewServer(Probes(node.Ready))
	defer web.Close()

	if code, body := get(t, web.URL+"/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz = %d %q", code, body)
	}
	if code, body := get(t, web.URL+"/readyz"); code != 200 {
		t.Errorf("/readyz with NATS up = %d %q", code, body)
	}
	srv.Shutdown()
	srv.WaitForShutdown()
	code, body := get(t, web.URL+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "not ready") {
		t.Errorf("/readyz with NATS down = %d %q, want 503 with the reason", code, body)
	}
	if code, _ := get(t, web.URL+"/healthz"); code != 200 {
		t.Errorf("/healthz with NATS down = %d, want 200 (the process is alive)", code)
	}
}

func TestServeHTTPStopsWithItsContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ServeHTTP(context.Background(), addr, http.NotFoundHandler(), zap.NewNop()); err == nil || !strings.Contains(err.Error(), addr) {
		t.Errorf("ServeHTTP on a taken address: err = %v, want one naming it", err)
	}
	ln.Close()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeHTTP(ctx, addr, Probes(func(context.Context) error { return nil }), zap.NewNop()) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("probes never answered: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ServeHTTP after its context ended: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeHTTP did not return after its context ended")
	}
}

func TestWithProbesEndsWithTheFirstFailure(t *testing.T) {
	n := &Node{log: zap.NewNop()}
	boom := errors.New("stage failed")
	if err := n.WithProbes(context.Background(), "", func(context.Context) error { return boom }); err != boom {
		t.Errorf("without probes: err = %v, want the work's", err)
	}
	// The probes cannot listen: the work is cancelled and the listen error returned.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = n.WithProbes(context.Background(), ln.Addr().String(), func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	})
	if err == nil || !strings.Contains(err.Error(), "listen on") {
		t.Errorf("probes on a taken address: err = %v, want the listen error", err)
	}
	// The work fails: the probes stop and the work's error is returned.
	free, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := free.Addr().String()
	free.Close()
	if err := n.WithProbes(context.Background(), addr, func(context.Context) error { return boom }); err != boom {
		t.Errorf("failing work with probes: err = %v, want the work's", err)
	}
}
