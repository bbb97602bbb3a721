package gitsource

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sealane/sealane/pkg/admission"
)

// redirector answers every request with a 302 to the same path and query on target, and
// counts its requests.
func redirector(t *testing.T, target string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		http.Redirect(w, r, target+r.URL.RequestURI(), http.StatusFound)
	}))
	t.Cleanup(s.Close)
	return s, &n
}

// sourcePolicy is the renderer's real --allow-chart-source policy over patterns.
func sourcePolicy(t *testing.T, patterns ...string) func(string) error {
	t.Helper()
	p, err := admission.NewSourcePolicy(patterns)
	if err != nil {
		t.Fatal(err)
	}
	return p.Allow
}

// TestCheckoutRefusesRedirectToUnallowedHost: with Options.Allow, a repository on an allowed
// host that redirects to one Allow refuses fails with ErrNotAllowed naming the refused host
// and the rule, and the other host (a real git server) gets no request; with both hosts
// allowed the same redirect is followed and the commit checked out.
func TestCheckoutRefusesRedirectToUnallowedHost(t *testing.T) {
	srv, repo, c1, _ := chartRepo(t)
	front, hits := redirector(t, srv.URL())
	url := front.URL + strings.TrimPrefix(repo.URL(), srv.URL())
	gitHost := strings.TrimPrefix(srv.URL(), "http://")

	o := opts(t)
	o.Allow = sourcePolicy(t, front.URL+"/**")
	_, err := checkoutOf(context.Background(), url, c1, "chart", t.TempDir(), o)
	if !errors.Is(err, ErrNotAllowed) {
		t.Fatalf("Checkout through a redirect to %s = %v, want ErrNotAllowed", gitHost, err)
	}
	if msg := err.Error(); !strings.Contains(msg, "host "+gitHost) || !strings.Contains(msg, "--allow-chart-source") {
		t.Errorf("reason %q: want the refused host %s and the rule", msg, gitHost)
	}
	if hits.Load() == 0 {
		t.Error("the allowed host got no request: the test proves nothing")
	}
	if n := srv.Requests(); n != 0 {
		t.Fatalf("the git server behind the redirect got %d requests, want none", n)
	}

	o = opts(t)
	o.Allow = sourcePolicy(t, front.URL+"/**", srv.URL()+"/**")
	if got := files(t, mustCheckout(t, url, c1, "chart", o)); got["Chart.yaml"] == "" {
		t.Errorf("checkout through an allowed redirect: files %v", got)
	}
}

// TestCheckoutAllowRefusesRepository: Options.Allow is asked about the repository URL itself;
// a refusal fetches nothing.
func TestCheckoutAllowRefusesRepository(t *testing.T) {
	srv, repo, c1, _ := chartRepo(t)
	o := opts(t)
	o.Allow = sourcePolicy(t, "https://git.example.com/**")
	_, err := checkoutOf(context.Background(), repo.URL(), c1, "", t.TempDir(), o)
	if !errors.Is(err, ErrNotAllowed) || srv.Requests() != 0 {
		t.Fatalf("Checkout of an unallowed repository = %v after %d requests, want ErrNotAllowed and none", err, srv.Requests())
	}
}

// TestCheckoutErrorQuotesNoServerBody: a 401's body (the server's words) is not in the error.
func TestCheckoutErrorQuotesNoServerBody(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("WWW-Authenticate", `Basic realm="x"`)
		http.Error(w, "internal token=hunter22", http.StatusUnauthorized)
	}))
	t.Cleanup(s.Close)
	_, err := checkoutOf(context.Background(), s.URL+"/acme/app", strings.Repeat("ab", 20), "", t.TempDir(), opts(t))
	if err == nil || strings.Contains(err.Error(), "hunter22") || !strings.Contains(err.Error(), "authentication failed") {
		t.Fatalf("Checkout answered 401 = %v, want authentication failed without the body", err)
	}
}
