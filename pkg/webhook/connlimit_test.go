package webhook

import (
	"io"
	"net"
	"testing"
	"time"

	"go.uber.org/zap"
)

// TestConnLimiter: one address holds at most its share of connections (a further one is closed
// at once); past the total the oldest connection is closed for the new one, so that held
// connections from many addresses cannot keep a new client out.
func TestConnLimiter(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := newConnLimiter(ln, Limits{MaxConnections: 6, SourceConnections: 2}, zap.NewNop())
	defer cl.Close()
	accepted := make(chan net.Conn, 100)
	go func() {
		for {
			c, err := cl.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	dial := func(src string) net.Conn {
		t.Helper()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
		c, err := d.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	closed := func(c net.Conn) bool { // the intake closed it (EOF), rather than holding it
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		_, err := c.Read(make([]byte, 1))
		return err == io.EOF || err != nil && !isTimeout(err)
	}
	one := []net.Conn{dial("127.0.3.1"), dial("127.0.3.1"), dial("127.0.3.1")}
	if closed(one[0]) || closed(one[1]) || !closed(one[2]) {
		t.Errorf("third connection of one address: want it closed at once and the first two held")
	}
	var many []net.Conn
	for i := range 4 { // 2 + 4 = the total
		many = append(many, dial(net.IPv4(127, 0, 4, byte(1+i)).String()))
	}
	time.Sleep(100 * time.Millisecond)
	fresh := dial("127.0.5.1") // one past the total: the oldest (one[0]) makes room
	if !closed(one[0]) || closed(fresh) || closed(many[3]) {
		t.Errorf("a connection past the total: want the oldest closed, the new one held")
	}
	cl.mu.Lock()
	open := cl.open.Len()
	cl.mu.Unlock()
	if open != 6 {
		t.Errorf("%d connections counted open, want 6", open)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
