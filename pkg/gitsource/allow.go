package gitsource

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// maxErrorBody bounds what is read of an HTTP error response: go-git reads the whole body of a
// 401, 403 or 404 into its error.
const maxErrorBody = 4 << 10

// fetchPolicy is what one Checkout's HTTP requests are checked against (Options.Allow), and
// the first request it refused.
type fetchPolicy struct {
	allow func(location string) error

	mu      sync.Mutex
	refused *refusedError
}

// refusedError is a request a fetch did not make because Options.Allow refused its URL (a
// redirect of the repository's host to another). It names the host and the rule, never what
// any server answered.
type refusedError struct {
	host, url string
	err       error
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("request to %s refused, nothing was fetched from host %s: %v", e.url, e.host, e.err)
}

func (e *refusedError) Unwrap() []error { return []error{ErrNotAllowed, e.err} }

// check asks allow about u: allowed when allow accepts it or one of its parents at a "/"
// boundary (a repository allows its info/refs and git-upload-pack below it).
func (p *fetchPolicy) check(u *url.URL) error {
	clean := &url.URL{Scheme: strings.ToLower(u.Scheme), Host: strings.ToLower(u.Host), Path: u.Path}
	first := p.allow(clean.String())
	if first == nil {
		return nil
	}
	for dir := strings.TrimSuffix(clean.Path, "/"); dir != ""; {
		i := strings.LastIndex(dir, "/")
		if i < 0 {
			break
		}
		dir = dir[:i]
		if p.allow(clean.Scheme+"://"+clean.Host+dir) == nil {
			return nil
		}
	}
	refused := &refusedError{host: clean.Host, url: clean.String(), err: first}
	p.mu.Lock()
	if p.refused == nil {
		p.refused = refused
	}
	p.mu.Unlock()
	return refused
}

// refusal is the first request the policy refused, or nil.
func (p *fetchPolicy) refusal() error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.refused == nil {
		return nil
	}
	return p.refused
}

type policyKey struct{}

// withPolicy returns ctx carrying p for the requests of the fetches made with it.
func withPolicy(ctx context.Context, p *fetchPolicy) context.Context {
	if p == nil {
		return ctx
	}
	return context.WithValue(ctx, policyKey{}, p)
}

func policyOf(ctx context.Context) *fetchPolicy {
	p, _ := ctx.Value(policyKey{}).(*fetchPolicy)
	return p
}

var (
	installHTTP sync.Once
	// gitTransport carries go-git's http(s) requests once installCheckedHTTP ran.
	gitTransport = http.DefaultTransport.(*http.Transport).Clone()
)

// closeIdleConnections ends the kept-alive connections of finished fetches: a repository is
// fetched again only when a commit is new, and no connection should wait for that.
func closeIdleConnections() { gitTransport.CloseIdleConnections() }

// installCheckedHTTP makes go-git's http and https transports check each request and each
// redirect hop against the policy its context carries (withPolicy); a request whose context
// carries none goes out as with go-git's default client. go-git chooses transports by scheme
// for the whole process, and its requests carry the fetch's context: that is where a
// Checkout's policy reaches them.
func installCheckedHTTP() {
	installHTTP.Do(func() {
		c := &http.Client{
			Transport: checkedTransport{next: gitTransport},
			CheckRedirect: func(req *http.Request, via []*http.Request) error {
				if len(via) >= 10 {
					return fmt.Errorf("stopped after %d redirects", len(via))
				}
				if p := policyOf(req.Context()); p != nil {
					return p.check(req.URL)
				}
				return nil
			},
		}
		t := githttp.NewClient(c)
		client.InstallProtocol("https", t)
		client.InstallProtocol("http", t)
	})
}

// checkedTransport checks every request against its context's policy before it leaves, and
// bounds the body of error responses.
type checkedTransport struct{ next http.RoundTripper }

// RoundTrip implements http.RoundTripper.
func (t checkedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if p := policyOf(req.Context()); p != nil {
		if err := p.check(req.URL); err != nil {
			if req.Body != nil {
				_ = req.Body.Close()
			}
			return nil, err
		}
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= http.StatusBadRequest {
		resp.Body = limitedBody{Reader: io.LimitReader(resp.Body, maxErrorBody), Closer: resp.Body}
	}
	return resp, nil
}

type limitedBody struct {
	io.Reader
	io.Closer
}
