package webhook

import (
	"net"
	"sync"

	"go.uber.org/zap"
)

// connLimiter is a listener that closes at once a connection over Limits.MaxConnections, or
// over Limits.SourceConnections from one address (not counted for trusted proxies): held
// connections cost the intake memory before any request on them is read.
type connLimiter struct {
	net.Listener
	lim Limits
	log *zap.Logger
	// refuse, if set, counts a refused connection from addr (the audit summary).
	refuse func(addr string)

	mu      sync.Mutex
	open    int
	bySrc   map[string]int
	refused int // since the last log line
}

func newConnLimiter(ln net.Listener, l Limits, log *zap.Logger) *connLimiter {
	return &connLimiter{Listener: ln, lim: l, log: log, bySrc: map[string]int{}}
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

// admit counts conn in, or refuses it when a limit is reached.
func (c *connLimiter) admit(conn net.Conn) (net.Conn, bool) {
	peer := peerAddr(conn.RemoteAddr().String())
	key := ""
	if !c.lim.trusted(peer) {
		key = sourceKey(peer, conn.RemoteAddr().String())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open >= c.lim.MaxConnections || key != "" && c.bySrc[key] >= c.lim.SourceConnections {
		c.refused++
		if c.refuse != nil {
			c.refuse(sourceKey(peer, conn.RemoteAddr().String()))
		}
		if c.refused == 1 || c.refused%1000 == 0 {
			c.log.Warn("webhook connections refused: over the connection limits", zap.Int("refused", c.refused),
				zap.Int("open", c.open), zap.Int("maxConnections", c.lim.MaxConnections), zap.Int("perSource", c.lim.SourceConnections))
		}
		return nil, false
	}
	c.open++
	if key != "" {
		c.bySrc[key]++
	}
	return &limitedConn{Conn: conn, done: func() { c.closed(key) }}, true
}

func (c *connLimiter) closed(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.open--
	if key != "" {
		if c.bySrc[key]--; c.bySrc[key] <= 0 {
			delete(c.bySrc, key)
		}
	}
}

// limitedConn gives its place back once closed.
type limitedConn struct {
	net.Conn
	once sync.Once
	done func()
}

func (l *limitedConn) Close() error {
	err := l.Conn.Close()
	l.once.Do(l.done)
	return err
}
