package chartsource

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sealane/sealane/pkg/admission"
)

// metadataServer is a loopback stand-in for an internal endpoint (a cloud metadata service):
// it counts its requests and answers with a secret.
type metadataServer struct {
	*httptest.Server
	hits atomic.Int64
}

const metadataSecret = "instance-credential-7f3a"

func newMetadataServer(t *testing.T) *metadataServer {
	t.Helper()
	m := &metadataServer{}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		m.hits.Add(1)
		w.Header().Set("X-Secret", metadataSecret)
		_, _ = w.Write([]byte(metadataSecret))
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *metadataServer) host() string { return strings.TrimPrefix(m.URL, "http://") }

// policy is the renderer's real source policy over the patterns.
func policy(t *testing.T, patterns ...string) func(string) error {
	t.Helper()
	p, err := admission.NewSourcePolicy(patterns)
	if err != nil {
		t.Fatal(err)
	}
	return p.Allow
}

// TestResolveRefusesUnallowedFetches: with Options.Allow set, every URL the resolution
// requests is checked, not only the source: a chart URL in an allowed repository's
// index.yaml, a redirect of an allowed host, a dependency's archive and an OCI registry's
// blob redirect that lead to a loopback "metadata" host are refused before any request
// reaches it (ErrNotAllowed), and the reason names the host and the rule, never what the
// host would answer.
func TestResolveRefusesUnallowedFetches(t *testing.T) {
	meta := newMetadataServer(t)
	metaURL := meta.URL + "/latest/meta-data/iam"

	// A repository whose index.yaml lists web's archive on the metadata host.
	viaIndex := newChartRepo(t, testChart{name: "web", version: "1.0.0"})
	viaIndex.index = []byte(strings.ReplaceAll(string(viaIndex.index), viaIndex.URL+"/web-1.0.0.tgz", metaURL))

	// A repository whose archive URL answers 302 to the metadata host.
	plain := newChartRepo(t, testChart{name: "web", version: "1.0.0"})
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/index.yaml" {
			_, _ = w.Write([]byte(strings.ReplaceAll(string(plain.index), plain.URL, "http://"+r.Host)))
			return
		}
		http.Redirect(w, r, metaURL, http.StatusFound)
	}))
	t.Cleanup(redirecting.Close)

	// An allowed chart whose dependency, from the same allowed repository, is on the metadata
	// host according to the index.
	depRepo := newChartRepo(t, testChart{name: "web", version: "1.0.0"})
	app := testChart{name: "app", version: "1.0.0", deps: []map[string]any{{"name": "web", "version": "1.0.0", "repository": depRepo.URL}}}
	app.pack(t, depRepo.dir)
	depRepo.reindex(t, nil)
	depRepo.index = []byte(strings.ReplaceAll(string(depRepo.index), depRepo.URL+"/web-1.0.0.tgz", metaURL))

	// An OCI registry whose blobs answer 307 to the metadata host.
	reg := newOCIRegistry(t, "", "")
	reg.push(t, "charts", testChart{name: "web", version: "1.0.0"})
	regFront := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/blobs/") && !strings.Contains(r.URL.Path, "/uploads/") {
			http.Redirect(w, r, metaURL, http.StatusTemporaryRedirect)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(regFront.Close)
	frontHost := strings.TrimPrefix(regFront.URL, "http://")

	for _, tt := range []struct {
		name  string
		src   Source
		allow string
	}{
		{"chart URL in index.yaml", NewSource("web", viaIndex.URL, ""), viaIndex.URL + "/**"},
		{"302 of an allowed host", NewSource("web", redirecting.URL, ""), redirecting.URL + "/**"},
		{"archive URL redirected", NewSource(redirecting.URL+"/web-1.0.0.tgz", "", ""), redirecting.URL + "/**"},
		{"dependency in index.yaml", NewSource("app", depRepo.URL, ""), depRepo.URL + "/**"},
		{"OCI blob redirect", NewSource("oci://"+frontHost+"/charts/web:1.0.0", "", ""), "oci://" + frontHost + "/charts/*"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, _, err := Resolve(t.Context(), tt.src, Options{Allow: policy(t, tt.allow), PlainHTTP: true})
			if !errors.Is(err, ErrNotAllowed) {
				t.Fatalf("Resolve = %v, want ErrNotAllowed", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, "host "+meta.host()) || !strings.Contains(msg, "--allow-chart-source") {
				t.Errorf("reason %q: want the refused host %s and the rule", msg, meta.host())
			}
			if strings.Contains(msg, metadataSecret) {
				t.Errorf("reason %q quotes the metadata host's answer", msg)
			}
			if n := meta.hits.Load(); n != 0 {
				t.Fatalf("the metadata host got %d requests, want none", n)
			}
		})
	}
}

// TestResolveAllowedFetches: what the policy allows still works: a redirect that stays on
// an allowed host, a repository's archives below it, and an OCI pull with its token-less
// registry API requests under an oci:// pattern.
func TestResolveAllowedFetches(t *testing.T) {
	plain := newChartRepo(t, testChart{name: "web", version: "1.0.0"})
	sameHost := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/charts/index.yaml":
			_, _ = w.Write([]byte(strings.ReplaceAll(string(plain.index), plain.URL, "http://"+r.Host+"/charts")))
		case strings.HasPrefix(r.URL.Path, "/charts/"):
			http.Redirect(w, r, "/archive/"+strings.TrimPrefix(r.URL.Path, "/charts/"), http.StatusFound)
		case strings.HasPrefix(r.URL.Path, "/archive/"):
			r.URL.Path = "/" + strings.TrimPrefix(r.URL.Path, "/archive/")
			plain.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(sameHost.Close)
	if _, meta, _, err := Resolve(t.Context(), NewSource("web", sameHost.URL+"/charts", ""), Options{Allow: policy(t, sameHost.URL+"/**")}); err != nil || meta.Name != "web" {
		t.Fatalf("redirect on the allowed host: %v %+v", err, meta)
	}

	reg := newOCIRegistry(t, "", "")
	reg.push(t, "charts", testChart{name: "web", version: "1.0.0"})
	src := NewSource("oci://"+reg.host()+"/charts/web", "", "")
	if _, meta, _, err := Resolve(t.Context(), src, Options{Allow: policy(t, "oci://"+reg.host()+"/charts/*"), PlainHTTP: true}); err != nil || meta.Version != "1.0.0" {
		t.Fatalf("OCI pull under an oci:// pattern: %v %+v", err, meta)
	}
}

// TestResolveFailureQuotesNoServerWords: a failed download is told by its status code; the
// server's reason phrase and an OCI registry's error message are not repeated.
func TestResolveFailureQuotesNoServerWords(t *testing.T) {
	const secret = "db-password=hunter22"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = http.ReadRequest(bufio.NewReader(c))
				_, _ = c.Write([]byte("HTTP/1.1 502 " + secret + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
			}()
		}
	}()
	archive := "http://" + ln.Addr().String() + "/web-1.0.0.tgz"
	_, _, _, err = Resolve(t.Context(), NewSource(archive, "", ""), Options{Allow: policy(t, "http://"+ln.Addr().String()+"/**")})
	if err == nil || strings.Contains(err.Error(), "hunter22") || !strings.Contains(err.Error(), "502 Bad Gateway") {
		t.Errorf("archive answering 502: %v, want the status code without the server's reason phrase", err)
	}

	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		ociErr(w, http.StatusInternalServerError, "UNKNOWN", secret)
	}))
	t.Cleanup(front.Close)
	host := strings.TrimPrefix(front.URL, "http://")
	_, _, _, err = Resolve(t.Context(), NewSource("oci://"+host+"/charts/web:1.0.0", "", ""), Options{PlainHTTP: true})
	if err == nil || strings.Contains(err.Error(), "hunter22") || !strings.Contains(err.Error(), "500") {
		t.Errorf("registry answering 500: %v, want the status code without the registry's message", err)
	}
}
