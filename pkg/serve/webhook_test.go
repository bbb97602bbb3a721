package serve

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/githook"
)

const reloadReceivers = `receivers:
%s`

const reloadReceiver = `  - id: %s
    type: github
    secrets: [{file: %s}]
    rateLimit: {perMinute: 100000, burst: 10000}
    routes:
      - repository: acme/shop
        branches: [main]
        deploy: {cluster: c1, namespace: shop, release: %s}
`

// TestWebhookReloadKeepsServing runs the intake as serve does and changes its receivers file
// while pushes arrive without pause: a new receiver is served within the reload interval, an
// invalid file keeps the receivers there were, and no push is refused or dropped meanwhile.
func TestWebhookReloadKeepsServing(t *testing.T) {
	srv, err := bus.StartServer(bus.ServerOptions{StoreDir: t.TempDir(), Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	node, err := Open(ctx, Options{NATSURL: srv.ClientURL(), Provision: true, Name: "webhook-reload", Log: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "webhooks.yaml")
	write := func(ids ...string) {
		var b strings.Builder
		for _, id := range ids {
			fmt.Fprintf(&b, reloadReceiver, id, secret, id)
		}
		if err := os.WriteFile(cfg, fmt.Appendf(nil, reloadReceivers, b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("a")
	addr := make(chan string, 1)
	o := WebhookOptionsFromEnv()
	o.Config, o.Addr, o.ReloadInterval = cfg, "127.0.0.1:0", 20*time.Millisecond
	o.Handler.Limits.SourceRate, o.Handler.Limits.GlobalRate = 1e6, 1e6 // one client, pushing without pause
	o.Listening = func(a string) { addr <- "http://" + a }
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- RunWebhook(runCtx, node, o, zap.NewNop()) }()
	base := <-addr

	// pushes to receiver a, without pause, until the end
	var sent, bad atomic.Int64
	var wg sync.WaitGroup
	quit := make(chan struct{})
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-quit:
				return
			default:
			}
			if code := pushTo(t, base, "a", fmt.Sprintf("d-%d", i), i+1); code != http.StatusAccepted {
				bad.Add(1)
				t.Errorf("push %d to a during the reloads: %d", i, code)
			}
			sent.Add(1)
		}
	})
	if code := pushTo(t, base, "b", "b-0", 1); code != http.StatusNotFound {
		t.Fatalf("receiver b before it is configured: %d, want 404", code)
	}
	write("a", "b")
	if !within(5*time.Second, func() bool { return pushTo(t, base, "b", "b-1", 1) == http.StatusAccepted }) {
		t.Fatal("receiver b not served after the file named it")
	}
	if err := os.WriteFile(cfg, []byte("receivers:\n  - id: broken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // ten reload intervals
	if code := pushTo(t, base, "b", "b-2", 2); code != http.StatusAccepted {
		t.Errorf("receiver b after an invalid file: %d, want 202 (the last valid receivers stay)", code)
	}
	close(quit)
	wg.Wait()
	stop()
	if err := <-done; err != nil {
		t.Fatalf("RunWebhook: %v", err)
	}
	if sent.Load() < 10 || bad.Load() != 0 {
		t.Errorf("%d pushes to a during the reloads, %d refused", sent.Load(), bad.Load())
	}
}

// pushTo sends a signed GitHub push of commit n to receiver id and returns the status.
func pushTo(t *testing.T, base, id, delivery string, n int) int {
	t.Helper()
	body := fmt.Appendf(nil, `{"ref":"refs/heads/main","after":"%040x","repository":{"full_name":"acme/shop","clone_url":"https://git.example.com/acme/shop.git"},"pusher":{"name":"t"}}`, n)
	req, err := http.NewRequest(http.MethodPost, base+"/hooks/"+id, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-GitHub-Delivery", id+"-"+delivery)
	req.Header.Set("X-Hub-Signature-256", githook.SignGitHub([]byte("s3cret"), body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("push to %s: %v", id, err)
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// within polls cond until it holds or d passes.
func within(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return false
}
