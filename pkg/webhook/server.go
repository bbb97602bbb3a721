package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"go.uber.org/zap"
)

// Server timeouts: a delivery is small and its answer is quick (the deploy runs later), so
// slow clients are cut off early.
const (
	ReadHeaderTimeout = 5 * time.Second
	ReadTimeout       = 20 * time.Second
	WriteTimeout      = 20 * time.Second
	IdleTimeout       = 90 * time.Second
	// ShutdownGrace is how long a stopping server lets requests being handled finish.
	ShutdownGrace = 15 * time.Second
	// maxHeaderBytes bounds a request's headers: a git host's are a few KiB.
	maxHeaderBytes = 16 << 10
)

// ServerOptions say where the intake listens.
type ServerOptions struct {
	// Addr is the listen address, e.g. ":8090" (":0" picks a free port: see Server.Addr).
	Addr string
	// TLSCert and TLSKey, both set, serve HTTPS with that certificate and key (files, read
	// again on every handshake so that a renewed certificate needs no restart).
	TLSCert, TLSKey string
	// Ready reports whether the intake can take deliveries (/readyz); nil is always ready.
	Ready func(context.Context) error
	// Metrics, if set, is served on /metrics (pkg/metrics).
	Metrics http.Handler
}

// Server is the webhook intake's HTTP server: /hooks/<id> (Handler), /healthz and /readyz.
type Server struct {
	h    *Handler
	srv  *http.Server
	ln   net.Listener
	log  *zap.Logger
	opts ServerOptions
}

// Listen binds the address; Serve then serves on it.
func Listen(h *Handler, o ServerOptions, log *zap.Logger) (*Server, error) {
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return nil, errors.New("webhook TLS: give both the certificate and the key file, or neither")
	}
	mux := http.NewServeMux()
	mux.Handle(HookPrefix, h)
	if o.Metrics != nil {
		mux.Handle("GET /metrics", o.Metrics)
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if o.Ready != nil {
			if err := o.Ready(r.Context()); err != nil {
				http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	s := &Server{h: h, log: log, opts: o, srv: &http.Server{
		Handler: mux, ReadHeaderTimeout: ReadHeaderTimeout, ReadTimeout: ReadTimeout,
		WriteTimeout: WriteTimeout, IdleTimeout: IdleTimeout, MaxHeaderBytes: maxHeaderBytes,
		ErrorLog: zap.NewStdLog(log.Named("http")),
	}}
	if o.TLSCert != "" {
		s.srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			c, err := tls.LoadX509KeyPair(o.TLSCert, o.TLSKey)
			if err != nil {
				return nil, fmt.Errorf("webhook TLS certificate %s: %w", o.TLSCert, err)
			}
			return &c, nil
		}}
		if _, err := tls.LoadX509KeyPair(o.TLSCert, o.TLSKey); err != nil {
			return nil, fmt.Errorf("webhook TLS certificate %s and key %s: %w", o.TLSCert, o.TLSKey, err)
		}
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return nil, fmt.Errorf("webhook intake: listen on %s: %w", o.Addr, err)
	}
	cl := newConnLimiter(ln, h.Limits(), log)
	cl.refuse = func(addr string) { h.refused.add(connectionsReceiver, "connections", 0, addr) }
	s.ln = cl
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve serves until ctx ends, then stops taking requests and lets those being handled
// finish (up to ShutdownGrace) before it returns.
func (s *Server) Serve(ctx context.Context) error {
	errc := make(chan error, 1)
	tls := s.srv.TLSConfig != nil // read before ServeTLS, which sets up HTTP/2 in it
	go func() {
		var err error
		if tls {
			err = s.srv.ServeTLS(s.ln, "", "")
		} else {
			err = s.srv.Serve(s.ln)
		}
		errc <- err
	}()
	s.log.Info("webhook intake listening", zap.Stringer("addr", s.Addr()), zap.Bool("tls", tls))
	select {
	case err := <-errc:
		return fmt.Errorf("webhook intake: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownGrace)
	defer cancel()
	err := s.srv.Shutdown(sctx)
	<-errc // http.ErrServerClosed
	s.h.Wait()
	if err != nil {
		return fmt.Errorf("webhook intake shutdown: %w", err)
	}
	return nil
}
