package webhook

import (
	"container/list"
	"net"
	"sync"

	"go.uber.org/zap"
)

// connLimiter is a listener that bounds the open connections, which cost the intake memory
// before any request on them is read: one address (not counted for trusted proxies) may hold
// Limits.SourceConnections, a further one from it is closed at once; past
// Limits.MaxConnections in all, the oldest open connection is closed for the new one. A
// delivery takes milliseconds, so the oldest connections are those held open (or idle
// keep-alives): a flood of held connections from many addresses evicts itself, not the pushes.
type connLimiter struct {
	net.Listener
	lim Limits
	log *zap.Logger
	// refuse, if set, counts a connection refused or evicted from addr (the audit summary).
	refuse func(addr string)

	mu      sync.Mutex
	open    *list.List // of *limitedConn, oldest first
	bySrc   map[string]int
	refused int // since the start, for the log's sampling
}

func newConnLimiter(ln net.Listener, l Limits, log *zap.Logger) *connLimiter {
	return &connLimiter{Listener: ln, lim: l, log: log, open: list.New(), bySrc: map[string]int{}}
}

// Accept returns the next connection within the limits.
func (c *connLimiter) Accept() (net.Conn, error) {
	for {
		conn, err := c.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if lc, ok := c.admit(conn); ok {
			return lc, nil
		}
		_ = conn.Close()
	}
}

// admit counts conn in, closing the oldest connection when all places are taken, or refuses
// it when its address has its share.
func (c *connLimiter) admit(conn net.Conn) (net.Conn, bool) {
	peer := peerAddr(conn.RemoteAddr().String())
	addr := sourceKey(peer, conn.RemoteAddr().String())
	key := ""
	if !c.lim.trusted(peer) {
		key = addr
	}
	c.mu.Lock()
	if key != "" && c.bySrc[key] >= c.lim.SourceConnections {
		c.mu.Unlock()
		c.refused1(addr, "webhook connection refused: its address holds its share of connections")
		return nil, false
	}
	var evict *limitedConn
	if c.open.Len() >= c.lim.MaxConnections {
		evict = c.open.Front().Value.(*limitedConn)
		c.forget(evict)
	}
	lc := &limitedConn{Conn: conn, key: key, addr: addr, owner: c}
	lc.elem = c.open.PushBack(lc)
	if key != "" {
		c.bySrc[key]++
	}
	c.mu.Unlock()
	if evict != nil {
		_ = evict.Conn.Close() // its handler sees the connection end
		c.refused1(evict.addr, "webhook connection closed: the oldest, for a new one past the connection limit")
	}
	return lc, true
}

// forget removes lc from the counts; the caller holds mu.
func (c *connLimiter) forget(lc *limitedConn) {
	if lc.elem == nil {
		return
	}
	c.open.Remove(lc.elem)
	lc.elem = nil
	if lc.key != "" {
		if c.bySrc[lc.key]--; c.bySrc[lc.key] <= 0 {
			delete(c.bySrc, lc.key)
		}
	}
}

// refused1 counts one connection refused or evicted, logging a sample.
func (c *connLimiter) refused1(addr, msg string) {
	if c.refuse != nil {
		c.refuse(addr)
	}
	c.mu.Lock()
	c.refused++
	n, open := c.refused, c.open.Len()
	c.mu.Unlock()
	if n == 1 || n%1000 == 0 {
		c.log.Warn(msg, zap.Int("refusedSinceStart", n), zap.Int("open", open),
			zap.Int("maxConnections", c.lim.MaxConnections), zap.Int("perSource", c.lim.SourceConnections))
	}
}

// limitedConn gives its place back once closed.
type limitedConn struct {
	net.Conn
	key, addr string
	owner     *connLimiter
	elem      *list.Element // nil once forgotten
}

func (l *limitedConn) Close() error {
	err := l.Conn.Close()
	l.owner.mu.Lock()
	l.owner.forget(l)
	l.owner.mu.Unlock()
	return err
}
