package webhook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"sync"
	"time"
)

// bodies recycles the buffers of large bodies, so that a flood of them does not make garbage.
var bodies sync.Pool

// readBody reads the body through the receiver's cap and the shared budget, within
// BodyTimeout: 413 over the cap, 408 for a body too slow, 503 when the budget stays full.
// release gives the body's buffer back once the request is handled.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request, limit int64) (body []byte, release func(), _ reply, _ bool) {
	if r.ContentLength > limit {
		return nil, nil, unreadBody(http.StatusRequestEntityTooLarge, fmt.Sprintf("size: body of %d bytes over the receiver's %d", r.ContentLength, limit)), false
	}
	deadline := time.Now().Add(h.opts.BodyTimeout)
	need := limit + 1 // +1: reading to EOF
	if r.ContentLength >= 0 {
		need = r.ContentLength + 1
	}
	release = func() {}
	// A body of known small size takes nothing from the budget: a push is a few KiB, and it
	// must not queue behind large bodies (the budget is first come, first served).
	if need > smallBody {
		ctx, cancel := context.WithDeadline(r.Context(), deadline)
		defer cancel()
		if err := h.budget.Acquire(ctx, need); err != nil {
			rep := unreadBody(http.StatusServiceUnavailable, "busy: too many request bodies at once")
			rep.retry = time.Second
			return nil, nil, rep, false
		}
		buf := largeBuffer(need)
		release = func() { bodies.Put(buf); h.budget.Release(need) }
		body = (*buf)[:0]
	} else {
		body = make([]byte, 0, need)
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(deadline) // not supported by a test recorder: the loop checks the time too
	body, rep, ok := readCapped(r.Body, body, limit, deadline)
	if !ok {
		release()
		return nil, nil, rep, false
	}
	_ = rc.SetReadDeadline(time.Time{})
	return body, release, rep, true
}

// largeBuffer is a recycled buffer of at least n bytes' capacity, or a new one.
func largeBuffer(n int64) *[]byte {
	if b, ok := bodies.Get().(*[]byte); ok && int64(cap(*b)) >= n {
		return b
	}
	b := make([]byte, 0, n)
	return &b
}

// readCapped reads body r into buf, at most limit bytes, before deadline (a blocked Read is
// ended by the connection's read deadline).
func readCapped(r io.Reader, buf []byte, limit int64, deadline time.Time) ([]byte, reply, bool) {
	body := buf[:0]
	for {
		if time.Now().After(deadline) {
			return nil, unreadBody(http.StatusRequestTimeout, "timeout: the body took too long"), false
		}
		if len(body) == cap(body) {
			body = append(body, 0)[:len(body)] // an unknown length: grow
		}
		n, err := r.Read(body[len(body):cap(body)])
		body = body[:len(body)+n]
		if len(body) > smallBody {
			runtime.Gosched() // a large body yields to the small ones (pushes) between reads
		}
		if int64(len(body)) > limit {
			return nil, unreadBody(http.StatusRequestEntityTooLarge, fmt.Sprintf("size: body over the receiver's %d bytes", limit)), false
		}
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			return nil, unreadBody(http.StatusRequestTimeout, "timeout: the body took too long"), false
		case errors.Is(err, io.EOF):
			return body, reply{}, true
		case err != nil:
			return nil, unreadBody(http.StatusBadRequest, "body: "+err.Error()), false
		}
	}
}
