package clusters

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// ConnectionError reports whether err says an API server could not be reached at all — the
// connection refused, reset or lost, a dial, TLS handshake or response timeout, no route —
// rather than an answer from it. Such a call may be retried once the cluster is back; an
// answer (an HTTP status) is the cluster speaking and is never an outage.
func ConnectionError(err error) bool {
	if err == nil {
		return false
	}
	var urlErr *url.Error
	var opErr *net.OpError
	var netErr net.Error
	var recordErr tls.RecordHeaderError
	switch {
	case errors.Is(err, context.Canceled):
		return false // the caller gave up: says nothing about the cluster
	case utilnet.IsConnectionRefused(err), utilnet.IsConnectionReset(err), utilnet.IsHTTP2ConnectionLost(err),
		errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, &opErr), errors.As(err, &recordErr):
		return true
	case errors.As(err, &netErr) && netErr.Timeout():
		return true
	case errors.As(err, &urlErr) && (errors.Is(urlErr.Err, io.EOF) || errors.Is(urlErr.Err, context.DeadlineExceeded)):
		return true
	}
	// client-go flattens some transport errors into text (a watch's decoder, http2's).
	msg := err.Error()
	for _, s := range []string{"connection refused", "connection reset by peer", "TLS handshake timeout",
		"http2: client connection lost", "use of closed network connection", "no route to host"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// Recheck checks name's API server now (GET /version within recheckTimeout), whatever its
// last check found, records the result and returns an *UnreachableError when it does not
// answer. A stage calls it when a call to the cluster failed with a ConnectionError, so that
// an outage is told apart from a blip without waiting for the checker's next round.
func (r *Registry) Recheck(ctx context.Context, name string) error {
	cl, err := r.Get(name)
	if err != nil {
		return err
	}
	s := r.statusWithSource(name)
	cctx, cancel := context.WithTimeout(ctx, recheckTimeout)
	defer cancel()
	now := time.Now()
	v, err := ServerVersion(cctx, cl)
	if ctx.Err() != nil {
		return ctx.Err() // the caller gave up, not the cluster
	}
	if err != nil {
		s.Reachable, s.Error, s.CheckedAt = false, err.Error(), now
		r.SetStatus(s)
		return &UnreachableError{Status: s}
	}
	s.Reachable, s.Version, s.Error, s.LastSeen, s.CheckedAt = true, v, "", now, now
	r.SetStatus(s)
	return nil
}

// MarkUnreachable records that name's API server did not answer another process (a stage's
// classified failure, cause): until it answers a check again, Reachable checks it live
// instead of trusting a last check that found it up.
func (r *Registry) MarkUnreachable(name, cause string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.status[name]
	if s.Source == "" {
		s.Source = r.sourceLocked(name)
	}
	s.Name, s.Reachable, s.Error, s.CheckedAt = name, false, cause, time.Now()
	r.status[name] = s
}

// statusWithSource is name's last recorded check, or a new one, knowing where name is
// registered (a cluster no check reached yet has no status).
func (r *Registry) statusWithSource(name string) Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.status[name]
	s.Name = name
	if s.Source == "" {
		s.Source = r.sourceLocked(name)
	}
	return s
}

// AwaitReachable blocks until name's API server answers a check (every interval) and
// returns nil, or returns the last *UnreachableError when ctx ends first.
func (r *Registry) AwaitReachable(ctx context.Context, name string, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	var last error
	for {
		err := r.Recheck(ctx, name)
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil && last != nil:
			return last // cut short mid-check: the last check's answer stands
		case !errors.Is(err, ErrUnreachable):
			return err
		}
		last = err
		select {
		case <-ctx.Done():
			return last
		case <-t.C:
		}
	}
}
