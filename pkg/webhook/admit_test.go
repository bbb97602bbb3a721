package webhook

import (
	"net/http"
	"net/netip"
	"testing"
)

// TestClientAddr: the proxy header is believed only when configured and only from a trusted
// proxy, read from the right past further trusted proxies; IPv6 clients are taken by their /64.
func TestClientAddr(t *testing.T) {
	trusted := Limits{ProxyHeader: "X-Forwarded-For", TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}
	tests := []struct {
		name   string
		lim    Limits
		peer   string
		header []string
		want   string
	}{
		{"no header configured", Limits{}, "203.0.113.9:4000", []string{"198.51.100.1"}, "203.0.113.9"},
		{"from an untrusted peer", trusted, "203.0.113.9:4000", []string{"198.51.100.1"}, "203.0.113.9"},
		{"from the proxy", trusted, "10.1.2.3:4000", []string{"198.51.100.1"}, "198.51.100.1"},
		{"right-most past trusted hops", trusted, "10.1.2.3:4000", []string{"1.1.1.1, 198.51.100.1", "10.9.9.9"}, "198.51.100.1"},
		{"garbage stops at the last good one", trusted, "10.1.2.3:4000", []string{"not-an-ip"}, "10.1.2.3"},
		{"ipv6 by its /64", Limits{}, "[2001:db8:1:2:3:4:5:6]:4000", nil, "2001:db8:1:2::/64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &http.Request{RemoteAddr: tt.peer, Header: http.Header{}}
			for _, v := range tt.header {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := tt.lim.clientAddr(r); got != tt.want {
				t.Errorf("client address %q, want %q", got, tt.want)
			}
		})
	}
	if err := (Limits{ProxyHeader: "X-Forwarded-For"}).Validate(); err == nil {
		t.Error("a proxy header without trusted proxies was accepted")
	}
}
