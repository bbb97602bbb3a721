package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"
)

// HTTPAddrEnv names the environment variable with the address a service serves its probes on
// (--http-addr); empty serves none.
const HTTPAddrEnv = "SEALANE_HTTP_ADDR"

// probeTimeout bounds one readiness check.
const probeTimeout = 2 * time.Second

// Probes returns the handler of a service's /healthz (the process answers) and /readyz (ready
// returns nil: the service can do its work). A failed check answers 503 with its reason.
func Probes(ready func(context.Context) error) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), probeTimeout)
		defer cancel()
		if err := ready(ctx); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = fmt.Fprintln(w, "ok")
	})
	return mux
}

// ServeHTTP serves h on addr until ctx ends, then shuts down, letting requests in flight
// finish for up to 5 s. It returns at once with an error when addr cannot be listened on.
func ServeHTTP(ctx context.Context, addr string, h http.Handler, log *zap.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s for probes: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	log.Info("serving probes", zap.String("addr", ln.Addr().String()))
	select {
	case err := <-done:
		return fmt.Errorf("serve probes on %s: %w", addr, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = srv.Shutdown(sctx)
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// metricsHandler serves the node's metrics; nil when it has none.
func (n *Node) metricsHandler() http.Handler {
	if n.metrics == nil {
		return nil
	}
	return n.metrics.Handler()
}

// Ready says whether the node can serve stages: connected to NATS, and JetStream answers for
// the deploy stream.
func (n *Node) Ready(ctx context.Context) error {
	if s := n.conn.Status(); s != nats.CONNECTED {
		return fmt.Errorf("NATS connection is %s", s)
	}
	if _, err := n.Bus.StreamInfo(ctx, n.Bus.Options().Stream); err != nil {
		return fmt.Errorf("JetStream: %w", err)
	}
	return nil
}

// WithProbes runs work, and, when addr is set, the node's probes on addr beside it (ServeHTTP
// with Probes(n.Ready), and /metrics when the node has metrics); the first of them to fail
// ends both, and that error is returned.
func (n *Node) WithProbes(ctx context.Context, addr string, work func(context.Context) error) error {
	if addr == "" {
		return work(ctx)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	probes := make(chan error, 1)
	h := Probes(n.Ready)
	if n.metrics != nil { // Options.Metrics: /metrics on the probes' address
		mux := http.NewServeMux()
		mux.Handle("/", h)
		mux.Handle("GET /metrics", n.metrics.Handler())
		h = mux
	}
	go func() {
		err := ServeHTTP(ctx, addr, h, n.log)
		cancel()
		probes <- err
	}()
	err := work(ctx)
	cancel()
	if perr := <-probes; err == nil || errors.Is(err, context.Canceled) && perr != nil {
		err = perr
	}
	return err
}
