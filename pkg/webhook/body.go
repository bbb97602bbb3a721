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

// bodies recycles the buffers of bodies, so that a flood of them does not make garbage.
var bodies sync.Pool

// smallBody is the largest body a body slot holds without a share of the byte budget.
const smallBody = 64 << 10

// largeRead is the size past which reading a body yields between reads.
const largeRead = smallBody

// readBody reads the body through the receiver's cap, a body slot (MaxBodies in all,
// SourceBodies per client address) and the byte budget, within BodyTimeout: 413 over the cap,
// 408 for a body too slow, 503 when no slot or budget frees in time. Every body takes its slot
// before a byte of it is read; a slot holds a body of up to smallBody, a larger one also takes
// its share (its Content-Length, or the receiver's cap) of BodyBudget, so that pushes never
// queue behind large bodies and all bodies together hold at most MaxBodies × smallBody +
// BodyBudget. release gives the body's buffer, share and slot back once the request is handled.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request, addr string, limit int64) (body []byte, release func(), _ reply, _ bool) {
	if r.ContentLength > limit {
		return nil, nil, unreadBody(http.StatusRequestEntityTooLarge, "size", fmt.Sprintf("body of %d bytes over the receiver's %d", r.ContentLength, limit)), false
	}
	busy := func() reply {
		rep := unreadBody(http.StatusServiceUnavailable, "busy", "too many request bodies at once")
		rep.retry = time.Second
		return rep
	}
	deadline := time.Now().Add(h.opts.BodyTimeout)
	need := limit + 1 // +1: reading to EOF
	if r.ContentLength >= 0 {
		need = r.ContentLength + 1
	}
	releaseSource, ok := h.sources.startBody(addr, h.opts.Now())
	if !ok {
		return nil, nil, busy(), false
	}
	ctx, cancel := context.WithDeadline(r.Context(), deadline)
	defer cancel()
	if err := h.bodies.Acquire(ctx, 1); err != nil {
		releaseSource()
		return nil, nil, busy(), false
	}
	if n := h.readingBodies.Add(1); n > h.peakBodies.Load() {
		h.peakBodies.Store(n)
	}
	release = func() { h.readingBodies.Add(-1); h.bodies.Release(1); releaseSource() }
	if need > smallBody {
		if err := h.budget.Acquire(ctx, need); err != nil {
			release()
			return nil, nil, busy(), false
		}
		buf := largeBuffer(need)
		body = (*buf)[:0]
		releaseSlot := release
		release = func() { bodies.Put(buf); h.budget.Release(need); releaseSlot() }
	} else {
		body = make([]byte, 0, need) // within the slot's share
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
			return nil, unreadBody(http.StatusRequestTimeout, "timeout", "the body took too long"), false
		}
		if len(body) == cap(body) {
			body = append(body, 0)[:len(body)] // an unknown length: grow
		}
		n, err := r.Read(body[len(body):cap(body)])
		body = body[:len(body)+n]
		if len(body) > largeRead {
			runtime.Gosched() // a large body yields to the small ones (pushes) between reads
		}
		if int64(len(body)) > limit {
			return nil, unreadBody(http.StatusRequestEntityTooLarge, "size", fmt.Sprintf("body over the receiver's %d bytes", limit)), false
		}
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			return nil, unreadBody(http.StatusRequestTimeout, "timeout", "the body took too long"), false
		case errors.Is(err, io.EOF):
			return body, reply{}, true
		case err != nil:
			return nil, unreadBody(http.StatusBadRequest, "body", bounded(err.Error())), false
		}
	}
}
