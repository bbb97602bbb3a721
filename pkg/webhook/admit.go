package webhook

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limits bound what requests may cost before anything tells who sent them: they apply before
// a body is read or a signature checked. Zero fields take the defaults (DefaultLimits).
type Limits struct {
	// SourceRate and SourceBurst bound the requests one client address may send (per second,
	// and at once); the excess is answered 429 unread.
	SourceRate  float64
	SourceBurst int
	// GlobalRate and GlobalBurst bound the requests of all clients together.
	GlobalRate  float64
	GlobalBurst int
	// MaxBodies bounds the request bodies being read at once (all of them unauthenticated
	// until read); SourceBodies the share of one client address. More wait for a slot within
	// the body timeout, then get 503.
	MaxBodies    int
	SourceBodies int
	// MaxConnections bounds the open connections, SourceConnections those of one address
	// (not counted for TrustedProxies, whose connections carry many clients); a connection
	// over either is closed at once.
	MaxConnections    int
	SourceConnections int
	// ProxyHeader (X-Forwarded-For, X-Real-IP...) names the client address of a request that
	// comes from one of TrustedProxies; from any other peer it is ignored. Empty: the peer.
	ProxyHeader    string
	TrustedProxies []netip.Prefix
	// AuditInterval is how often the refused requests are summed up in one webhook_rejected
	// event.
	AuditInterval time.Duration
	// MaxSources bounds the client addresses tracked at once; past it, new addresses share
	// one limiter.
	MaxSources int
}

// DefaultLimits are the limits of a zero Limits field.
var DefaultLimits = Limits{
	SourceRate: 10, SourceBurst: 40, GlobalRate: 200, GlobalBurst: 400,
	MaxBodies: 64, SourceBodies: 8, MaxConnections: 512, SourceConnections: 32,
	AuditInterval: time.Minute, MaxSources: 10000,
}

// withDefaults fills the zero fields of l from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	set := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	if l.SourceRate == 0 {
		l.SourceRate = d.SourceRate
	}
	if l.GlobalRate == 0 {
		l.GlobalRate = d.GlobalRate
	}
	set(&l.SourceBurst, d.SourceBurst)
	set(&l.GlobalBurst, d.GlobalBurst)
	set(&l.MaxBodies, d.MaxBodies)
	set(&l.SourceBodies, d.SourceBodies)
	set(&l.MaxConnections, d.MaxConnections)
	set(&l.SourceConnections, d.SourceConnections)
	set(&l.MaxSources, d.MaxSources)
	if l.AuditInterval == 0 {
		l.AuditInterval = d.AuditInterval
	}
	return l
}

// Validate reports the first limit that cannot work, naming it.
func (l Limits) Validate() error {
	l = l.withDefaults()
	switch {
	case l.SourceRate < 0 || l.GlobalRate < 0:
		return fmt.Errorf("webhook limits: negative rate (per source %g, global %g)", l.SourceRate, l.GlobalRate)
	case l.SourceBurst < 1 || l.GlobalBurst < 1 || l.MaxBodies < 1 || l.SourceBodies < 1 ||
		l.MaxConnections < 1 || l.SourceConnections < 1 || l.MaxSources < 1:
		return fmt.Errorf("webhook limits: bursts, bodies, connections and sources must be at least 1")
	case l.AuditInterval < 0:
		return fmt.Errorf("webhook limits: negative audit interval %s", l.AuditInterval)
	case l.ProxyHeader != "" && len(l.TrustedProxies) == 0:
		return fmt.Errorf("webhook limits: proxy header %s without trusted proxies: name the proxies' addresses (CIDRs) whose header is believed", l.ProxyHeader)
	}
	return nil
}

// sourceState is one client address's state: its rate limiter and bodies being read.
type sourceState struct {
	lim    *rate.Limiter
	bodies int
	seen   time.Time
}

// sources tracks the client addresses (at most max; then new ones share crowd).
type sources struct {
	mu        sync.Mutex
	lim       Limits
	m         map[string]*sourceState
	crowd     *sourceState
	lastSweep time.Time
}

func newSources(l Limits) *sources {
	return &sources{lim: l, m: map[string]*sourceState{},
		crowd: &sourceState{lim: rate.NewLimiter(rate.Limit(l.SourceRate), l.SourceBurst)}}
}

// get returns addr's state, creating it; the caller holds mu.
func (s *sources) get(addr string, now time.Time) *sourceState {
	if src, ok := s.m[addr]; ok {
		src.seen = now
		return src
	}
	if len(s.m) >= s.lim.MaxSources && now.Sub(s.lastSweep) > time.Second {
		s.lastSweep = now
		for k, src := range s.m { // forget idle addresses: no body, not seen for a minute
			if src.bodies == 0 && now.Sub(src.seen) > time.Minute {
				delete(s.m, k)
			}
		}
	}
	if len(s.m) >= s.lim.MaxSources {
		return s.crowd
	}
	src := &sourceState{lim: rate.NewLimiter(rate.Limit(s.lim.SourceRate), s.lim.SourceBurst), seen: now}
	s.m[addr] = src
	return src
}

// allow takes one request of addr from its rate; false with the wait when there is none.
func (s *sources) allow(addr string, now time.Time) (bool, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.get(addr, now).lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// startBody takes one of addr's body slots; false when it has SourceBodies being read.
func (s *sources) startBody(addr string, now time.Time) (release func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	src := s.get(addr, now)
	if src.bodies >= s.lim.SourceBodies {
		return nil, false
	}
	src.bodies++
	return func() {
		s.mu.Lock()
		src.bodies--
		s.mu.Unlock()
	}, true
}

// maxForwarded bounds the entries of a proxy header read from the right.
const maxForwarded = 16

// clientAddr is who sent r: the peer's address, or, from a trusted proxy, the right-most
// address in the proxy header that is not itself a trusted proxy. IPv6 addresses are taken
// by their /64, which one host usually has whole.
func (l *Limits) clientAddr(r *http.Request) string {
	peer := peerAddr(r.RemoteAddr)
	if l.ProxyHeader == "" || !peer.IsValid() || !l.trusted(peer) {
		return sourceKey(peer, r.RemoteAddr)
	}
	values := r.Header.Values(l.ProxyHeader)
	client := peer
	for i, n := len(values)-1, 0; i >= 0 && n < maxForwarded; i-- {
		parts := strings.Split(bounded(values[i]), ",")
		for j := len(parts) - 1; j >= 0 && n < maxForwarded; j-- {
			n++
			a, err := netip.ParseAddr(strings.TrimSpace(parts[j]))
			if err != nil {
				return sourceKey(client, r.RemoteAddr)
			}
			client = a.Unmap()
			if !l.trusted(client) {
				return sourceKey(client, r.RemoteAddr)
			}
		}
	}
	return sourceKey(client, r.RemoteAddr)
}

// trusted reports whether a is one of the trusted proxies.
func (l *Limits) trusted(a netip.Addr) bool {
	for _, p := range l.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// peerAddr is the address of a "host:port" (invalid when it is not one).
func peerAddr(hostport string) netip.Addr {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}

// sourceKey is the rate-limiting key of address a: itself for IPv4, its /64 for IPv6.
func sourceKey(a netip.Addr, fallback string) string {
	switch {
	case !a.IsValid():
		return bounded(fallback)
	case a.Is6():
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}
