package chartsource

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"
)

// testChart describes a small chart written by the tests.
type testChart struct {
	name, version string
	deps          []map[string]any // Chart.yaml dependencies
	marker        string           // ends up in templates/cm.yaml, to tell copies apart
}

// write writes the chart as a directory dir/<name> and returns that directory.
func (c testChart) write(t *testing.T, dir string) string {
	t.Helper()
	md := map[string]any{"apiVersion": "v2", "name": c.name, "version": c.version, "appVersion": "1.0"}
	if len(c.deps) > 0 {
		md["dependencies"] = c.deps
	}
	chartYAML, err := yaml.Marshal(md)
	if err != nil {
		t.Fatal(err)
	}
	marker := c.marker
	if marker == "" {
		marker = c.name + "-" + c.version
	}
	root := filepath.Join(dir, c.name)
	writeFiles(t, root, map[string]string{
		"Chart.yaml":        string(chartYAML),
		"values.yaml":       "replicas: 1\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-" + c.name + "\ndata:\n  marker: " + marker + "\n",
		".helmignore":       "*.bak\n",
	})
	return root
}

// pack writes the chart as name-version.tgz into dir with Helm's chartutil.Save.
func (c testChart) pack(t *testing.T, dir string) string {
	t.Helper()
	src := c.write(t, t.TempDir())
	ch, err := loader.LoadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	file, err := chartutil.Save(ch, dir)
	if err != nil {
		t.Fatal(err)
	}
	return file
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// snapshot returns every file under root with a hash of its content, to check that a
// directory was not modified.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			out[rel+"/"] = ""
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		out[rel] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func assertUnchanged(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	if len(before) != len(after) {
		t.Errorf("%s was modified: before %v, after %v", what, keys(before), keys(after))
		return
	}
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s was modified: %s changed", what, k)
		}
	}
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// chartRepo is a classic Helm chart repository served by httptest: chart archives made
// with chartutil.Save and an index.yaml made with repo.IndexDirectory.
type chartRepo struct {
	*httptest.Server
	dir        string
	user, pass string // basic auth when set

	mu       sync.Mutex
	index    []byte
	requests []string
}

func newChartRepo(t *testing.T, charts ...testChart) *chartRepo {
	t.Helper()
	r := &chartRepo{dir: t.TempDir()}
	r.Server = httptest.NewServer(r)
	t.Cleanup(r.Close)
	for _, c := range charts {
		c.pack(t, r.dir)
	}
	r.reindex(t, nil)
	return r
}

// reindex rebuilds index.yaml; when only is set, it lists only those archives.
func (r *chartRepo) reindex(t *testing.T, only []string) {
	t.Helper()
	idx, err := repo.IndexDirectory(r.dir, r.URL)
	if err != nil {
		t.Fatal(err)
	}
	if only != nil {
		keep := map[string]bool{}
		for _, o := range only {
			keep[o] = true
		}
		for name, vs := range idx.Entries {
			var kept repo.ChartVersions
			for _, v := range vs {
				if keep[name+"-"+v.Version] {
					kept = append(kept, v)
				}
			}
			if len(kept) == 0 {
				delete(idx.Entries, name)
			} else {
				idx.Entries[name] = kept
			}
		}
	}
	idx.SortEntries()
	data, err := yaml.Marshal(idx)
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	r.index = data
	r.mu.Unlock()
}

func (r *chartRepo) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.requests = append(r.requests, req.URL.Path)
	index := r.index
	r.mu.Unlock()
	if r.user != "" {
		if u, p, ok := req.BasicAuth(); !ok || u != r.user || p != r.pass {
			w.Header().Set("WWW-Authenticate", `Basic realm="charts"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
	}
	name := strings.TrimPrefix(req.URL.Path, "/")
	if name == "index.yaml" {
		_, _ = w.Write(index)
		return
	}
	if strings.Contains(name, "/") || !strings.HasSuffix(name, ".tgz") {
		http.NotFound(w, req)
		return
	}
	http.ServeFile(w, req, filepath.Join(r.dir, name))
}

func (r *chartRepo) requested(path string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.requests {
		if p == path {
			return true
		}
	}
	return false
}

// ociRegistry is a minimal in-memory registry implementing the parts of the OCI
// distribution API that Helm's registry client (ORAS) uses to push and pull charts:
// blob upload (POST + PUT), blob and manifest GET/HEAD, manifest PUT and tag listing,
// optionally behind HTTP basic auth.
type ociRegistry struct {
	*httptest.Server
	user, pass string

	mu        sync.Mutex
	blobs     map[string][]byte
	manifests map[string]map[string]ociManifest // repository → tag or digest → manifest
	uploads   int
}

type ociManifest struct {
	mediaType string
	data      []byte
}

func newOCIRegistry(t *testing.T, user, pass string) *ociRegistry {
	t.Helper()
	r := &ociRegistry{user: user, pass: pass, blobs: map[string][]byte{}, manifests: map[string]map[string]ociManifest{}}
	r.Server = httptest.NewServer(r)
	t.Cleanup(r.Close)
	return r
}

// host is the registry's host:port, for oci:// references.
func (r *ociRegistry) host() string { return strings.TrimPrefix(r.URL, "http://") }

// push pushes chart c into repository path (e.g. "charts") with Helm's registry client.
func (r *ociRegistry) push(t *testing.T, path string, c testChart) {
	t.Helper()
	data, err := os.ReadFile(c.pack(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	opts := []registry.ClientOption{
		registry.ClientOptPlainHTTP(),
		registry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "config.json")),
	}
	if r.user != "" {
		opts = append(opts, registry.ClientOptBasicAuth(r.user, r.pass))
	}
	client, err := registry.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	ref := fmt.Sprintf("%s/%s/%s:%s", r.host(), path, c.name, c.version)
	if _, err := client.Push(data, ref); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
}

// digestOf returns the manifest digest of repository:tag.
func (r *ociRegistry) digestOf(repository, tag string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.manifests[repository][tag]
	sum := sha256.Sum256(m.data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func ociErr(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]string{{"code": code, "message": msg}}})
}

func (r *ociRegistry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if r.user != "" {
		if u, p, ok := req.BasicAuth(); !ok || u != r.user || p != r.pass {
			w.Header().Set("WWW-Authenticate", `Basic realm="test-registry"`)
			ociErr(w, http.StatusUnauthorized, "UNAUTHORIZED", "authentication required")
			return
		}
	}
	p := req.URL.Path
	if p == "/v2/" || p == "/v2" {
		w.WriteHeader(http.StatusOK)
		return
	}
	if !strings.HasPrefix(p, "/v2/") {
		http.NotFound(w, req)
		return
	}
	p = strings.TrimPrefix(p, "/v2/")
	r.mu.Lock()
	defer r.mu.Unlock()

	switch {
	case strings.HasSuffix(p, "/tags/list"):
		repository := strings.TrimSuffix(p, "/tags/list")
		ms, ok := r.manifests[repository]
		if !ok {
			ociErr(w, http.StatusNotFound, "NAME_UNKNOWN", "repository name not known to registry")
			return
		}
		tags := []string{}
		for ref := range ms {
			if !strings.HasPrefix(ref, "sha256:") {
				tags = append(tags, ref)
			}
		}
		sort.Strings(tags)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"name": repository, "tags": tags})

	case strings.Contains(p, "/blobs/uploads/"):
		i := strings.Index(p, "/blobs/uploads/")
		repository, id := p[:i], p[i+len("/blobs/uploads/"):]
		switch {
		case req.Method == http.MethodPost && id == "":
			r.uploads++
			w.Header().Set("Location", fmt.Sprintf("/v2/%s/blobs/uploads/%d", repository, r.uploads))
			w.WriteHeader(http.StatusAccepted)
		case req.Method == http.MethodPut && id != "":
			data, _ := io.ReadAll(req.Body)
			want := req.URL.Query().Get("digest")
			sum := sha256.Sum256(data)
			if got := "sha256:" + hex.EncodeToString(sum[:]); got != want {
				ociErr(w, http.StatusBadRequest, "DIGEST_INVALID", got+" != "+want)
				return
			}
			r.blobs[want] = data
			w.Header().Set("Location", fmt.Sprintf("/v2/%s/blobs/%s", repository, want))
			w.Header().Set("Docker-Content-Digest", want)
			w.WriteHeader(http.StatusCreated)
		default:
			ociErr(w, http.StatusMethodNotAllowed, "UNSUPPORTED", req.Method)
		}

	case strings.Contains(p, "/blobs/"):
		i := strings.LastIndex(p, "/blobs/")
		digest := p[i+len("/blobs/"):]
		data, ok := r.blobs[digest]
		if !ok {
			ociErr(w, http.StatusNotFound, "BLOB_UNKNOWN", "blob unknown to registry")
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Docker-Content-Digest", digest)
		w.Header().Set("Content-Length", fmt.Sprint(len(data)))
		if req.Method == http.MethodGet {
			_, _ = w.Write(data)
		}

	case strings.Contains(p, "/manifests/"):
		i := strings.LastIndex(p, "/manifests/")
		repository, ref := p[:i], p[i+len("/manifests/"):]
		switch req.Method {
		case http.MethodPut:
			data, _ := io.ReadAll(req.Body)
			sum := sha256.Sum256(data)
			digest := "sha256:" + hex.EncodeToString(sum[:])
			m := ociManifest{mediaType: req.Header.Get("Content-Type"), data: data}
			if r.manifests[repository] == nil {
				r.manifests[repository] = map[string]ociManifest{}
			}
			r.manifests[repository][digest] = m
			r.manifests[repository][ref] = m
			w.Header().Set("Location", fmt.Sprintf("/v2/%s/manifests/%s", repository, digest))
			w.Header().Set("Docker-Content-Digest", digest)
			w.WriteHeader(http.StatusCreated)
		case http.MethodGet, http.MethodHead:
			m, ok := r.manifests[repository][ref]
			if !ok {
				ociErr(w, http.StatusNotFound, "MANIFEST_UNKNOWN", "manifest unknown")
				return
			}
			sum := sha256.Sum256(m.data)
			w.Header().Set("Content-Type", m.mediaType)
			w.Header().Set("Docker-Content-Digest", "sha256:"+hex.EncodeToString(sum[:]))
			w.Header().Set("Content-Length", fmt.Sprint(len(m.data)))
			if req.Method == http.MethodGet {
				_, _ = w.Write(m.data)
			}
		default:
			ociErr(w, http.StatusMethodNotAllowed, "UNSUPPORTED", req.Method)
		}

	default:
		http.NotFound(w, req)
	}
}
