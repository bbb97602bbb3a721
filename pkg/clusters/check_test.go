package clusters

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sealane/sealane/pkg/clusterspec"
)

// countingStore counts the statuses stored per cluster.
type countingStore struct {
	mu   sync.Mutex
	puts map[string]int
}

func (s *countingStore) Put(_ context.Context, st Status) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.puts[st.Name]++
	return nil
}

func (s *countingStore) Delete(context.Context, string) error { return nil }

func (s *countingStore) count(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.puts[name]
}

// TestCheckerStoresChanges: a round stores a cluster's status when the check found
// something new (the API server stopped answering), else only once the stored one is
// StatusRefresh old.
func TestCheckerStoresChanges(t *testing.T) {
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"major":"1","minor":"34","gitVersion":"v1.34.2"}`))
	}))
	defer api.Close()
	kubeconfig := strings.ReplaceAll(testKubeconfig, `{server: "https://a.example:6443"}`,
		fmt.Sprintf("{server: %q, insecure-skip-tls-verify: true}", api.URL))
	r, err := New(Options{Contexts: true, Kubeconfig: writeKubeconfig(t, kubeconfig)})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	at := start
	store := &countingStore{puts: map[string]int{}}
	c := &Checker{Registry: r, Store: store, Timeout: 2 * time.Second, Clock: func() time.Time { return at }}
	for _, tt := range []struct {
		after     time.Duration
		down      bool
		reachable bool
		want      int
		what      string
	}{
		{0, false, true, 1, "the first check"},
		{30 * time.Second, false, true, 1, "the same found again"},
		{StatusRefresh - time.Second, false, true, 1, "the same, the stored status not old yet"},
		{StatusRefresh, false, true, 2, "the same, the stored status StatusRefresh old"},
		{StatusRefresh + 30*time.Second, true, false, 3, "the API server stopped answering"},
		{StatusRefresh + time.Minute, true, false, 3, "still down"},
	} {
		at = start.Add(tt.after)
		if tt.down {
			api.Close()
		}
		if s := c.CheckAll(context.Background())["ctx-a"]; s.Reachable != tt.reachable {
			t.Fatalf("%s: %+v, want reachable %v", tt.what, s, tt.reachable)
		}
		if got := store.count("ctx-a"); got != tt.want {
			t.Errorf("%s (+%s): stored %d times, want %d", tt.what, tt.after, got, tt.want)
		}
	}
}

// TestCheckRoundPastRoomBuildsNoClients: once the registry keeps as many clients as it may, a
// check round still checks every cluster Secret, through a REST client built for the check,
// and keeps no clients of its own.
func TestCheckRoundPastRoomBuildsNoClients(t *testing.T) {
	api, kubeconfig, asked := versionAPI(t)
	r, err := New(Options{MaxClients: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"c-1", "c-2", "c-3"} {
		r.PutSecret(clusterSecret(name, name, map[string]string{clusterspec.KubeconfigKey: kubeconfig}))
	}
	got := (&Checker{Registry: r, Timeout: 2 * time.Second}).CheckAll(context.Background())
	for _, name := range []string{"c-1", "c-2", "c-3"} {
		if s := got[name]; !s.Reachable || s.Version != "v1.34.2" || s.Server != api.URL {
			t.Errorf("%s: %+v, want reachable v1.34.2 at %s", name, s, api.URL)
		}
	}
	if n := asked.Load(); n != 3 {
		t.Errorf("GET /version asked %d times, want 3", n)
	}
	r.mu.Lock()
	kept := r.clients.Len()
	r.mu.Unlock()
	if kept != 1 {
		t.Errorf("%d clusters' clients kept, want 1 (MaxClients)", kept)
	}
}

// versionAPI serves GET /version (v1.34.2) over TLS until the test ends: the server, a
// kubeconfig for it (a cluster Secret's), and the count of /version requests.
func versionAPI(t testing.TB) (*httptest.Server, string, *atomic.Int32) {
	var asked atomic.Int32
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/version" {
			asked.Add(1)
		}
		_, _ = w.Write([]byte(`{"major":"1","minor":"34","gitVersion":"v1.34.2"}`))
	}))
	t.Cleanup(api.Close)
	kubeconfig := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: %q, insecure-skip-tls-verify: true}}]\n"+
		"users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n", api.URL)
	return api, kubeconfig, &asked
}
