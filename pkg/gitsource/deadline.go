package gitsource

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"golang.org/x/net/proxy"
)

// deadlineScheme names the "proxy" an ssh fetch dials through: it connects directly and puts
// the fetch's deadline on the connection. go-git's ssh transport takes no context for its
// connect and handshake, so without it a server that accepts and never answers would hold a
// fetch, and its clone's lock, for ever.
const deadlineScheme = "sealane-deadline"

var registerDeadline sync.Once

// deadlineProxy is the proxy option that ends an ssh fetch's connection at deadline.
func deadlineProxy(deadline time.Time) transport.ProxyOptions {
	registerDeadline.Do(func() { proxy.RegisterDialerType(deadlineScheme, newDeadlineDialer) })
	return transport.ProxyOptions{URL: fmt.Sprintf("%s://%d", deadlineScheme, deadline.UnixNano())}
}

// deadlineDialer dials directly, bounding the connection by its deadline.
type deadlineDialer struct{ deadline time.Time }

func newDeadlineDialer(u *url.URL, _ proxy.Dialer) (proxy.Dialer, error) {
	n, err := strconv.ParseInt(u.Host, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%s proxy URL %q: %w", deadlineScheme, u, err)
	}
	return deadlineDialer{deadline: time.Unix(0, n)}, nil
}

func (d deadlineDialer) Dial(network, addr string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, addr)
}

// DialContext connects within the deadline and sets it on the connection.
func (d deadlineDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	ctx, cancel := context.WithDeadline(ctx, d.deadline)
	defer cancel()
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if err := c.SetDeadline(d.deadline); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}
