package chartsource

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"helm.sh/helm/v3/pkg/getter"
	"helm.sh/helm/v3/pkg/registry"
	"oras.land/oras-go/v2/registry/remote/auth"
)

// userAgent is sent with every HTTP request.
const userAgent = "sealane-chartsource (Helm/v3)"

// session is the state of one Resolve call: a temporary directory holding the private
// Helm home and the work copies, and the HTTP transports and registry client bound to
// the call's context.
type session struct {
	ctx  context.Context
	opts Options
	log  io.Writer

	tmp        string // removed by close
	repoConfig string // private repositories.yaml
	repoCache  string // private repository cache (index files)
	regConfig  string // private registry credentials file

	endpoints []endpoint // configured credentials, the source's first

	mu         sync.Mutex
	transports map[string]*http.Transport // by host[:port]
	indexes    map[string]*repoIndex      // by normalized repository URL
	client     *http.Client
	reg        *registry.Client
	budget     *budget         // bytes read from the network, Options.MaxBytes
	registries map[string]bool // hosts an allowed OCI request went to (checkRequest)
	refused    *refusedError   // the first request Options.Allow refused
}

// endpoint is a repository or registry location with its Auth.
type endpoint struct {
	scheme string // http, https or oci
	host   string
	path   string // without trailing slash
	auth   Auth
	source bool // the source's own repository: PassCredentialsAll applies
}

func newSession(ctx context.Context, src Source, opts Options) (*session, error) {
	tmp, err := os.MkdirTemp("", "sealane-chartsource-")
	if err != nil {
		return nil, fmt.Errorf("create temporary directory: %w", err)
	}
	home := filepath.Join(tmp, "helm")
	s := &session{
		ctx:        ctx,
		opts:       opts,
		log:        opts.Log,
		tmp:        tmp,
		repoConfig: filepath.Join(home, "config", "repositories.yaml"),
		repoCache:  filepath.Join(home, "cache", "repository"),
		regConfig:  filepath.Join(home, "config", "registry", "config.json"),
		transports: map[string]*http.Transport{},
		indexes:    map[string]*repoIndex{},
		budget:     newBudget(opts.MaxBytes),
		registries: map[string]bool{},
	}
	if s.log == nil {
		s.log = io.Discard
	} else {
		s.log = redactWriter{w: s.log, secrets: secretsOf(src, opts)}
	}
	for _, dir := range []string{filepath.Dir(s.repoConfig), s.repoCache, filepath.Dir(s.regConfig)} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			s.close()
			return nil, fmt.Errorf("create helm home: %w", err)
		}
	}
	if ref := sourceLocation(src); ref != "" {
		if ep, ok := parseEndpoint(ref, opts.Auth); ok {
			ep.source = true
			s.endpoints = append(s.endpoints, ep)
		}
	}
	for _, r := range opts.Repositories {
		if ep, ok := parseEndpoint(r.URL, r.Auth); ok {
			s.endpoints = append(s.endpoints, ep)
		}
	}
	s.client = &http.Client{Transport: sessionTransport{s}, CheckRedirect: s.checkRedirect}
	return s, nil
}

// sourceLocation is the URL whose host Options.Auth is for.
func sourceLocation(src Source) string {
	switch {
	case src.Path != "":
		return ""
	case src.Repo != "":
		return src.Repo
	case registry.IsOCI(src.Name):
		return src.Name
	default:
		// A chart archive URL: the credentials are for its directory.
		u, err := url.Parse(src.Name)
		if err != nil {
			return ""
		}
		u.Path = path.Dir(u.Path)
		return u.String()
	}
}

// parseEndpoint parses an http(s) or oci:// location; credentials in the URL are used
// when a has none.
func parseEndpoint(raw string, a Auth) (endpoint, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return endpoint{}, false
	}
	switch u.Scheme {
	case "http", "https", registry.OCIScheme:
	default:
		return endpoint{}, false
	}
	if u.User != nil && a.Username == "" && a.Password == "" {
		// Credentials in the URL apply to the whole repository, as if given in Auth.
		a.Username = u.User.Username()
		a.Password, _ = u.User.Password()
	}
	return endpoint{scheme: u.Scheme, host: u.Host, path: strings.TrimSuffix(u.Path, "/"), auth: a}, true
}

// close removes the temporary directory and closes idle connections, so that no
// keep-alive goroutine outlives the call.
func (s *session) close() {
	s.mu.Lock()
	for _, t := range s.transports {
		t.CloseIdleConnections()
	}
	s.mu.Unlock()
	_ = os.RemoveAll(s.tmp)
}

// endpointFor returns the configured endpoint for an http(s) URL: same scheme and host,
// the longest matching path prefix first.
func (s *session) endpointFor(u *url.URL) *endpoint {
	var best *endpoint
	bestLen := -1
	for i := range s.endpoints {
		ep := &s.endpoints[i]
		if ep.scheme != u.Scheme || ep.host != u.Host {
			continue
		}
		n := 0
		if ep.path != "" && (u.Path == ep.path || strings.HasPrefix(u.Path, ep.path+"/")) {
			n = len(ep.path)
		}
		if n > bestLen {
			best, bestLen = ep, n
		}
	}
	return best
}

// sourceAuth returns the credentials to send when downloading rawURL for the source
// itself: the source's Auth on its own host or with PassCredentialsAll, else whatever
// endpoint matches.
func (s *session) sourceAuth(rawURL string) *Auth {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil
	}
	for i := range s.endpoints {
		ep := &s.endpoints[i]
		if ep.source && (ep.auth.PassCredentialsAll || (ep.scheme == u.Scheme && ep.host == u.Host)) {
			return &ep.auth
		}
	}
	if ep := s.endpointFor(u); ep != nil {
		return &ep.auth
	}
	return nil
}

// transport returns the transport for host, with the TLS settings of the endpoints on it.
func (s *session) transport(host string) (*http.Transport, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.transports[host]; ok {
		return t, nil
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	for _, ep := range s.endpoints {
		if ep.host != host {
			continue
		}
		a := ep.auth
		if a.CAFile == "" && a.CertFile == "" && a.KeyFile == "" && !a.InsecureSkipTLSVerify {
			continue
		}
		cfg, err := tlsConfig(a)
		if err != nil {
			return nil, fmt.Errorf("TLS settings for %s: %w", host, err)
		}
		t.TLSClientConfig = cfg
		break
	}
	s.transports[host] = t
	return t, nil
}

func tlsConfig(a Auth) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: a.InsecureSkipTLSVerify} //nolint:gosec // explicitly requested
	if a.CAFile != "" {
		pem, err := os.ReadFile(a.CAFile)
		if err != nil {
			return nil, fmt.Errorf("read CA file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s: no PEM certificates", a.CAFile)
		}
		cfg.RootCAs = pool
	}
	if a.CertFile != "" || a.KeyFile != "" {
		if a.CertFile == "" || a.KeyFile == "" {
			return nil, errors.New("a client certificate needs both a certificate file and a key file")
		}
		cert, err := tls.LoadX509KeyPair(a.CertFile, a.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("load client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// sessionTransport routes requests to the per-host transports and binds them to the
// session's context. Helm's downloader and registry client make their requests without
// a context (context.Background); this is where they become cancellable. It is also where
// every request, whoever makes it, is checked against Options.Allow (checkRequest).
type sessionTransport struct{ s *session }

// RoundTrip implements http.RoundTripper.
func (t sessionTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.s.checkRequest(req.URL); err != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, err
	}
	tr, err := t.s.transport(req.URL.Host)
	if err != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, err
	}
	resp, err := tr.RoundTrip(req.WithContext(t.s.ctx))
	if err != nil {
		return nil, err
	}
	if err := t.s.budget.check(resp); err != nil {
		_ = resp.Body.Close()
		return nil, err
	}
	resp.Body = limitedBody{ReadCloser: resp.Body, b: t.s.budget}
	return resp, nil
}

// statusError is an HTTP response other than 200 OK. It keeps the status code only: the
// reason phrase and the body are the server's words, not repeated to a requester.
type statusError struct {
	url  string
	code int
}

func (e *statusError) Error() string {
	return fmt.Sprintf("GET %s: the server answered %d %s", e.url, e.code, http.StatusText(e.code))
}

// fetch GETs rawURL with the session's context, sending a's credentials when set.
func (s *session) fetch(rawURL string, a *Auth) ([]byte, error) {
	req, err := http.NewRequestWithContext(s.ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", redactURL(rawURL), err)
	}
	req.Header.Set("User-Agent", userAgent)
	if a != nil && (a.Username != "" || a.Password != "") {
		req.SetBasicAuth(a.Username, a.Password)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		var re *refusedError
		if errors.As(err, &re) {
			return nil, re // the url.Error would quote a refused redirect's Location in full
		}
		// The url.Error already names the method and URL.
		return nil, redactError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &statusError{url: redactURL(rawURL), code: resp.StatusCode}
	}
	data, err := io.ReadAll(resp.Body) // bounded by the session's budget (sessionTransport)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", redactURL(rawURL), err)
	}
	return data, nil
}

// getters are the getter providers Helm's downloader uses in this session: http(s)
// through the session's fetch (credentials chosen by URL), oci through its registry client.
func (s *session) getters() getter.Providers {
	return getter.Providers{
		{
			Schemes: []string{"http", "https"},
			New: func(...getter.Option) (getter.Getter, error) {
				return httpGetter{s}, nil
			},
		},
		{
			Schemes: []string{registry.OCIScheme},
			New: func(options ...getter.Option) (getter.Getter, error) {
				client, err := s.registryClient()
				if err != nil {
					return nil, err
				}
				return getter.NewOCIGetter(append([]getter.Option{getter.WithRegistryClient(client)}, options...)...)
			},
		},
	}
}

// httpGetter is a Helm getter for http(s) URLs. Helm's options (credentials and TLS of the
// repository entry) are ignored: the session picks them by URL from its endpoints.
type httpGetter struct{ s *session }

// Get implements getter.Getter.
func (g httpGetter) Get(rawURL string, _ ...getter.Option) (*bytes.Buffer, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("parse URL %q: %w", redactURL(rawURL), err)
	}
	var a *Auth
	if ep := g.s.endpointFor(u); ep != nil {
		a = &ep.auth
	}
	data, err := g.s.fetch(rawURL, a)
	if err != nil {
		return nil, err
	}
	return bytes.NewBuffer(data), nil
}

// registryClient returns the session's Helm registry client: the session's transports and
// context, credentials per registry host from the endpoints, and a private credentials
// file.
func (s *session) registryClient() (*registry.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reg != nil {
		return s.reg, nil
	}
	authorizer := auth.Client{
		Client:     s.client,
		Cache:      auth.NewCache(),
		Credential: s.registryCredential,
	}
	authorizer.SetUserAgent(userAgent)
	options := []registry.ClientOption{
		registry.ClientOptCredentialsFile(s.regConfig),
		registry.ClientOptHTTPClient(s.client),
		registry.ClientOptAuthorizer(authorizer),
		registry.ClientOptWriter(s.log),
	}
	if s.opts.PlainHTTP {
		options = append(options, registry.ClientOptPlainHTTP())
	}
	reg, err := registry.NewClient(options...)
	if err != nil {
		return nil, fmt.Errorf("create registry client: %w", err)
	}
	s.reg = reg
	return reg, nil
}

// registryCredential returns the credentials of the oci:// endpoint on hostport.
func (s *session) registryCredential(_ context.Context, hostport string) (auth.Credential, error) {
	for _, ep := range s.endpoints {
		if ep.scheme == registry.OCIScheme && ep.host == hostport && (ep.auth.Username != "" || ep.auth.Password != "") {
			return auth.Credential{Username: ep.auth.Username, Password: ep.auth.Password}, nil
		}
	}
	return auth.EmptyCredential, nil
}

// redactURL hides the password of a URL with user information.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	return u.Redacted()
}

// redactError hides a password in the URL of a url.Error.
func redactError(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		uerr.URL = redactURL(uerr.URL)
	}
	return err
}
