// Package apicount puts a counting proxy between a client and a cluster's apiserver: every
// request passes through it, and it says how many requests of each verb and resource a client
// made, how many bytes it read, and how often it read a Helm release history. Tests and
// benchmarks point a tool's kubeconfig at it to turn "how much does a deploy ask of the
// cluster" into numbers that a regression changes.
package apicount

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Proxy is a plain-HTTP proxy on loopback in front of one apiserver.
type Proxy struct {
	srv      *http.Server
	listener net.Listener
	upstream *url.URL
	config   *rest.Config

	mu     sync.Mutex
	counts Counts
}

// Counts is what went through the proxy since it started or was last Reset.
type Counts struct {
	// Requests by "VERB resource" (VERB: GET, LIST, WATCH, CREATE, UPDATE, PATCH, APPLY, DELETE,
	// with "(meta)" when only metadata was asked for and "(dry-run)"; resource: the plural, with
	// /subresource; "discovery" and "openapi" for those documents).
	Requests map[string]int
	// BytesRead is every response body the client read (watch streams included).
	BytesRead int64
	// BytesSent is every request body the client sent.
	BytesSent int64
	// HistoryReads counts LISTs of Secrets or ConfigMaps selecting Helm's owner=helm label: one
	// read of a release's history (or of every release, for helm list).
	HistoryReads int
	// HistoryBytes are the bytes of those LISTs' responses.
	HistoryBytes int64
	// RecordGets counts GETs of one Helm release record (sh.helm.release.v1.<name>.v<rev>).
	RecordGets int
}

// Total is the number of requests.
func (c Counts) Total() int {
	n := 0
	for _, v := range c.Requests {
		n += v
	}
	return n
}

// String lists the requests, most frequent first, then the byte and history counts.
func (c Counts) String() string {
	keys := make([]string, 0, len(c.Requests))
	for k := range c.Requests {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if c.Requests[keys[i]] != c.Requests[keys[j]] {
			return c.Requests[keys[i]] > c.Requests[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, c.Requests[k]))
	}
	return fmt.Sprintf("%d requests (%s); read %s, sent %s; history reads %d (%s), record GETs %d",
		c.Total(), strings.Join(parts, ", "), Bytes(c.BytesRead), Bytes(c.BytesSent), c.HistoryReads, Bytes(c.HistoryBytes), c.RecordGets)
}

// Bytes formats n as KB or MB.
func Bytes(n int64) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.0f KB", float64(n)/(1<<10))
}

// Start starts a proxy in front of the cluster of kubeconfig's current context (or context, if
// not empty). Close stops it.
func Start(kubeconfig, context string) (*Proxy, error) {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig},
		&clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("apicount: kubeconfig %s: %w", kubeconfig, err)
	}
	upstream, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("apicount: server %q: %w", cfg.Host, err)
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("apicount: transport: %w", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("apicount: listen: %w", err)
	}
	p := &Proxy{listener: l, upstream: upstream, config: cfg, counts: Counts{Requests: map[string]int{}}}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(upstream)
			r.Out.Host = upstream.Host
			r.Out.Header.Del("Authorization") // the transport authenticates as the kubeconfig says
		},
		Transport:     transport,
		FlushInterval: -1, // watch events go through as they come
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() == nil { // a client that went away (a watch stopped) is no error
				http.Error(w, err.Error(), http.StatusBadGateway)
			}
		},
	}
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, history, record := classify(r)
		sent := &countingReader{r: r.Body}
		r.Body = sent
		cw := &countingWriter{ResponseWriter: w}
		rp.ServeHTTP(cw, r)
		p.mu.Lock()
		defer p.mu.Unlock()
		p.counts.Requests[key]++
		p.counts.BytesRead += cw.n
		p.counts.BytesSent += sent.n
		if history {
			p.counts.HistoryReads++
			p.counts.HistoryBytes += cw.n
		}
		if record {
			p.counts.RecordGets++
		}
	})}
	go func() { _ = p.srv.Serve(l) }()
	return p, nil
}

// Close stops the proxy.
func (p *Proxy) Close() error { return p.srv.Close() }

// URL is the proxy's address.
func (p *Proxy) URL() string { return "http://" + p.listener.Addr().String() }

// Counts returns what went through the proxy so far.
func (p *Proxy) Counts() Counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.counts
	c.Requests = make(map[string]int, len(p.counts.Requests))
	for k, v := range p.counts.Requests {
		c.Requests[k] = v
	}
	return c
}

// Reset starts counting anew.
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counts = Counts{Requests: map[string]int{}}
}

// WriteKubeconfig writes, in dir, a kubeconfig whose only context talks to the cluster through
// the proxy (no credentials: the proxy adds them) and returns its path.
func (p *Proxy) WriteKubeconfig(dir string) (string, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["counted"] = &clientcmdapi.Cluster{Server: p.URL()}
	cfg.AuthInfos["counted"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["counted"] = &clientcmdapi.Context{Cluster: "counted", AuthInfo: "counted"}
	cfg.CurrentContext = "counted"
	path := filepath.Join(dir, "kubeconfig-counted")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", fmt.Errorf("apicount: write kubeconfig: %w", err)
	}
	return path, nil
}

// classify names a request as "VERB resource" and says whether it reads a release history
// (a LIST selecting owner=helm) or one release record.
func classify(r *http.Request) (key string, history, record bool) {
	path := strings.Trim(r.URL.Path, "/")
	parts := strings.Split(path, "/")
	q := r.URL.Query()
	switch {
	case strings.HasPrefix(path, "openapi") || strings.HasPrefix(path, "swagger"):
		return r.Method + " openapi", false, false
	case path == "version" || path == "api" || path == "apis" || parts[0] == "api" && len(parts) == 2 ||
		parts[0] == "apis" && len(parts) <= 3:
		return r.Method + " discovery", false, false
	}
	// /api/v1/[namespaces/NS/]RESOURCE[/NAME[/SUB]] or /apis/G/V/...
	rest := parts
	if len(rest) > 0 && rest[0] == "api" {
		rest = rest[2:]
	} else if len(rest) > 0 && rest[0] == "apis" && len(rest) >= 3 {
		rest = rest[3:]
	}
	if len(rest) >= 2 && rest[0] == "namespaces" && len(rest) > 2 {
		rest = rest[2:]
	}
	resource, name, sub := "", "", ""
	if len(rest) > 0 {
		resource = rest[0]
	}
	if len(rest) > 1 {
		name = rest[1]
	}
	if len(rest) > 2 {
		sub = "/" + rest[2]
	}
	verb := ""
	switch r.Method {
	case http.MethodGet:
		switch {
		case q.Get("watch") == "true" || q.Get("watch") == "1":
			verb = "WATCH"
		case name == "":
			verb = "LIST"
		default:
			verb = "GET"
		}
	case http.MethodPost:
		verb = "CREATE"
	case http.MethodPut:
		verb = "UPDATE"
	case http.MethodPatch:
		verb = "PATCH"
		if r.Header.Get("Content-Type") == "application/apply-patch+yaml" {
			verb = "APPLY"
		}
	case http.MethodDelete:
		verb = "DELETE"
	default:
		verb = r.Method
	}
	if q.Get("dryRun") != "" {
		verb += "(dry-run)"
	}
	if strings.Contains(r.Header.Get("Accept"), "as=PartialObjectMetadata") {
		verb += "(meta)" // metadata only: no spec, no data
	}
	history = strings.HasPrefix(verb, "LIST") && (resource == "secrets" || resource == "configmaps") && strings.Contains(q.Get("labelSelector"), "owner=helm")
	record = verb == "GET" && (resource == "secrets" || resource == "configmaps") && strings.HasPrefix(name, "sh.helm.release.v1.")
	return verb + " " + resource + sub, history, record
}

type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (w *countingWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.n += int64(n)
	return n, err
}

func (w *countingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the real writer.
func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

type countingReader struct {
	r io.ReadCloser
	n int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	if c.r == nil {
		return 0, io.EOF
	}
	n, err := c.r.Read(b)
	c.n += int64(n)
	return n, err
}

func (c *countingReader) Close() error {
	if c.r == nil {
		return nil
	}
	return c.r.Close()
}
