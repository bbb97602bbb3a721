package clusters

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestConnectionError tells a cluster that cannot be reached from one that answered.
func TestConnectionError(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: &net.AddrError{Err: "connect: connection refused"}}
	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"refused", &url.Error{Op: "Get", URL: "https://x/version", Err: fmt.Errorf("dial tcp: %w", syscall.ECONNREFUSED)}, true},
		{"reset", fmt.Errorf("apply: %w", syscall.ECONNRESET), true},
		{"dial op", fmt.Errorf("list: %w", dial), true},
		{"unexpected EOF", &url.Error{Op: "Get", URL: "https://x", Err: io.ErrUnexpectedEOF}, true},
		{"EOF", &url.Error{Op: "Get", URL: "https://x", Err: io.EOF}, true},
		{"timeout", &url.Error{Op: "Get", URL: "https://x", Err: context.DeadlineExceeded}, true},
		{"flattened", errors.New(`Get "https://127.0.0.1:16445/api": http2: client connection lost`), true},
		{"TLS handshake", errors.New("net/http: TLS handshake timeout"), true},
		{"no route", fmt.Errorf("x: %w", syscall.EHOSTUNREACH), true},
		{"caller cancelled", &url.Error{Op: "Get", URL: "https://x", Err: context.Canceled}, false},
		{"nil", nil, false},
		{"not found", apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, "x"), false},
		{"forbidden", apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "x", errors.New("no")), false},
		{"server timeout answered", apierrors.NewServerTimeout(schema.GroupResource{Resource: "secrets"}, "get", 1), false},
		{"invalid", errors.New(`ConfigMap "x" is invalid: data: Invalid value`), false},
	} {
		if got := ConnectionError(tt.err); got != tt.want {
			t.Errorf("%s: ConnectionError(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}

// apiServer is an HTTP server answering GET /version that the test can stop and start on the
// same address, as an API server process killed and started again.
type apiServer struct {
	t    *testing.T
	addr string
	srv  *httptest.Server
}

func newAPIServer(t *testing.T) *apiServer {
	a := &apiServer{t: t}
	a.start()
	a.addr = a.srv.Listener.Addr().String()
	t.Cleanup(func() { a.srv.Close() })
	return a
}

func (a *apiServer) start() {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"gitVersion":"v1.34.2"}`)
	})
	a.srv = httptest.NewUnstartedServer(h)
	if a.addr != "" {
		ln, err := net.Listen("tcp", a.addr)
		if err != nil {
			a.t.Fatal(err)
		}
		a.srv.Listener = ln
	}
	a.srv.Start()
}

func (a *apiServer) stop() { a.srv.Close() }

func outageRegistry(t *testing.T, server string) *Registry {
	t.Helper()
	kc := strings.Replace(testKubeconfig, "https://a.example:6443", server, 1)
	r, err := New(Options{Contexts: true, Kubeconfig: writeKubeconfig(t, kc)})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRecheckOutage: a stage's fresh check finds a stopped API server unreachable at once
// (whatever the last round found), Reachable then keeps checking it live, and
// AwaitReachable returns as soon as it answers again.
func TestRecheckOutage(t *testing.T) {
	api := newAPIServer(t)
	r := outageRegistry(t, "http://"+api.addr)
	ctx := context.Background()
	r.SetStatus(Status{Name: "ctx-a", Reachable: true, CheckedAt: time.Now()})
	if err := r.Recheck(ctx, "ctx-a"); err != nil {
		t.Fatalf("recheck of a live server: %v", err)
	}
	api.stop()
	if err := r.Reachable(ctx, "ctx-a"); err != nil {
		t.Fatalf("Reachable trusts the last round until told otherwise: %v", err)
	}
	err := r.Recheck(ctx, "ctx-a")
	var ue *UnreachableError
	if !errors.As(err, &ue) || !strings.HasPrefix(err.Error(), `cluster "ctx-a" unreachable: `) || !ConnectionError(errors.New(ue.Status.Error)) {
		t.Fatalf("recheck of a stopped server: %v, want an *UnreachableError naming the cause", err)
	}
	if err := r.Reachable(ctx, "ctx-a"); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("Reachable after a failed recheck: %v, want unreachable", err)
	}

	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := r.AwaitReachable(short, "ctx-a", 50*time.Millisecond); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("await until the deadline: %v, want the last check's *UnreachableError", err)
	}
	go func() { time.Sleep(200 * time.Millisecond); api.start() }()
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := r.AwaitReachable(wait, "ctx-a", 50*time.Millisecond); err != nil {
		t.Fatalf("await a server started again: %v", err)
	}
	if s, _ := r.Status("ctx-a"); !s.Reachable || s.Version != "v1.34.2" {
		t.Fatalf("status after it answered: %+v", s)
	}

	r.MarkUnreachable("ctx-a", "dial tcp: connection refused (another replica)")
	if s, _ := r.Status("ctx-a"); s.Reachable || !strings.Contains(s.Error, "another replica") {
		t.Fatalf("status after MarkUnreachable: %+v", s)
	}
	if err := r.Reachable(ctx, "ctx-a"); err != nil {
		t.Fatalf("Reachable checks a marked cluster live and finds it back: %v", err)
	}
}

// An unreachable cluster's reason names when it was checked, and when it last answered a
// check only if one ever did (the stages may have talked to it without a check); what to fix
// follows from where the cluster is registered.
func TestUnreachableErrorText(t *testing.T) {
	checked := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		seen   time.Time
		source string
		want   string
	}{
		{time.Time{}, SourceContext, `cluster "a" unreachable: dial tcp: timeout (checked at 2026-01-02T03:04:05Z); deploys to it fail ` +
			"until it answers again — see `sealane cluster list`, or the server of kubeconfig context \"a\""},
		{checked.Add(-time.Minute), "secret sealane/cluster-a", `cluster "a" unreachable: dial tcp: timeout (checked at 2026-01-02T03:04:05Z, ` +
			"last seen: 2026-01-02T03:03:05Z); deploys to it fail until it answers again — see `sealane cluster list`, or fix its Secret " +
			"with `sealane cluster add a --kubeconfig FILE --overwrite`"},
		{time.Time{}, SourceInCluster, `cluster "a" unreachable: dial tcp: timeout (checked at 2026-01-02T03:04:05Z); deploys to it fail ` +
			"until it answers again — see `sealane cluster list`"},
	} {
		err := &UnreachableError{Status: Status{Name: "a", Source: c.source, Error: "dial tcp: timeout", CheckedAt: checked, LastSeen: c.seen}}
		if err.Error() != c.want {
			t.Errorf("Error() =\n%s\nwant\n%s", err.Error(), c.want)
		}
	}
}
