package chartsource

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"helm.sh/helm/v3/pkg/registry"
)

// maxRedirects is how many redirects one request follows, as net/http's default.
const maxRedirects = 10

// refusedError is a request the session did not make because Options.Allow refused its URL:
// a chart URL from an index.yaml, a redirect, a registry's token realm. It names the host
// and the rule, never what any server answered.
type refusedError struct {
	host string
	url  string // without user information, query and fragment
	err  error  // Options.Allow's reason
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("request to %s refused, the renderer fetched nothing from host %s: %v", e.url, e.host, e.err)
}

func (e *refusedError) Unwrap() []error { return []error{ErrNotAllowed, e.err} }

// checkRequest asks Options.Allow about a URL the session is about to request (nil: allowed).
// A URL is allowed when Allow accepts it or one of its parents at a "/" boundary (a Helm
// repository allows its index.yaml and archives below it); a request of the OCI distribution
// API, /v2/<name>/{manifests,blobs,tags}/..., when Allow accepts oci://host/<name>; and any
// other path on a registry host the session already pulled from (its token endpoint). Every
// redirect hop is checked the same way (checkRedirect), so no allowed host can send the
// renderer to one that is not. The first refusal is kept: Resolve reports it whatever the
// library that made the request says.
func (s *session) checkRequest(u *url.URL) error {
	if s.opts.Allow == nil {
		return nil
	}
	clean := &url.URL{Scheme: strings.ToLower(u.Scheme), Host: strings.ToLower(u.Host), Path: u.Path}
	first := s.opts.Allow(clean.String())
	if first == nil {
		return nil
	}
	for p := parentPath(clean.Path); p != ""; p = parentPath(p) {
		if s.opts.Allow(clean.Scheme+"://"+clean.Host+strings.TrimSuffix(p, "/")) == nil {
			return nil
		}
	}
	if name, ok := registryRepository(clean.Path); ok {
		if s.opts.Allow(registry.OCIScheme+"://"+clean.Host+"/"+name) == nil {
			s.mu.Lock()
			s.registries[clean.Host] = true
			s.mu.Unlock()
			return nil
		}
	} else {
		s.mu.Lock()
		known := s.registries[clean.Host]
		s.mu.Unlock()
		if known {
			return nil
		}
	}
	refused := &refusedError{host: clean.Host, url: clean.String(), err: first}
	s.mu.Lock()
	if s.refused == nil {
		s.refused = refused
	}
	s.mu.Unlock()
	return refused
}

// parentPath is p without its last segment, "/" for a top-level path and "" for the root.
func parentPath(p string) string {
	p = strings.TrimSuffix(p, "/")
	if p == "" {
		return ""
	}
	i := strings.LastIndex(p, "/")
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// registryRepository is the repository name of an OCI distribution API path
// (/v2/<name>/manifests/..., /blobs/..., /tags/list).
func registryRepository(p string) (string, bool) {
	rest, ok := strings.CutPrefix(p, "/v2/")
	if !ok {
		return "", false
	}
	for _, marker := range []string{"/manifests/", "/blobs/", "/tags/"} {
		if i := strings.LastIndex(rest, marker); i > 0 {
			return rest[:i], true
		}
	}
	return "", false
}

// checkRedirect is the session client's redirect policy: each hop's URL must be allowed
// (checkRequest), at most maxRedirects of them.
func (s *session) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	return s.checkRequest(req.URL)
}

// refusal is the first request Options.Allow refused in this session, or nil.
func (s *session) refusal() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refused == nil {
		return nil
	}
	return s.refused
}

// asRefusal returns the session's refusal in place of err when there was one: the error a
// library made of it may quote the refused URL in full or a server's answer.
func (s *session) asRefusal(err error) error {
	if err == nil {
		return nil
	}
	if r := s.refusal(); r != nil {
		return r
	}
	var re *refusedError
	if errors.As(err, &re) {
		return re
	}
	return err
}
