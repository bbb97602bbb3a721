package bus

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// errConnectionLost ends an attempt whose connection dropped while it waited: its answer, if
// the request even left, will never come, so it is tried again at once on the next connection
// instead of after its deadline. A pull consumer's request is lost with its server the same way.
var errConnectionLost = errors.New("connection to NATS lost")

// link is a NATS connection and the moments it drops. It watches the connection's status
// until the connection closes.
type link struct {
	nc *nats.Conn

	mu      sync.Mutex
	dropped context.Context // canceled at the next drop
	drop    context.CancelFunc
}

// newLink watches nc; a nil nc gives a link that never drops.
func newLink(nc *nats.Conn) *link {
	l := &link{nc: nc}
	l.dropped, l.drop = context.WithCancel(context.Background())
	if nc == nil {
		return l
	}
	ch := nc.StatusChanged(nats.DISCONNECTED, nats.RECONNECTING, nats.CLOSED)
	if nc.IsClosed() {
		nc.RemoveStatusListener(ch)
		l.drop()
		return l
	}
	go l.watch(ch)
	return l
}

func (l *link) watch(ch chan nats.Status) {
	defer l.nc.RemoveStatusListener(ch)
	for s := range ch {
		l.mu.Lock()
		l.drop()
		if s != nats.CLOSED { // once closed, every attempt ends at once
			l.dropped, l.drop = context.WithCancel(context.Background())
		}
		l.mu.Unlock()
		if s == nats.CLOSED {
			return
		}
	}
}

// attempt returns the context of one attempt: it ends after timeout, with ctx, or when the
// connection drops (context.Cause is then errConnectionLost).
func (l *link) attempt(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	actx, cancel := context.WithCancelCause(ctx)
	tctx, cancelT := context.WithTimeout(actx, timeout)
	if l == nil {
		return tctx, func() { cancelT(); cancel(nil) }
	}
	l.mu.Lock()
	dropped := l.dropped
	l.mu.Unlock()
	stop := context.AfterFunc(dropped, func() { cancel(errConnectionLost) })
	return tctx, func() { stop(); cancelT(); cancel(nil) }
}

// lost reports whether the attempt with context actx ended because its connection dropped.
func lost(actx context.Context) bool { return errors.Is(context.Cause(actx), errConnectionLost) }
