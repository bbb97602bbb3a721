package webhook

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sealane/sealane/test/harness"
)

// watcher runs Watch on a file for a test, reporting what it calls on channels.
type watcher struct {
	applied chan *Config
	errs    chan error
	mu      sync.Mutex
	env     map[string]string
}

func (w *watcher) getenv(k string) (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	v, ok := w.env[k]
	return v, ok
}

func (w *watcher) setenv(k, v string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.env[k] = v
}

func startWatch(t *testing.T, path string, env map[string]string) *watcher {
	t.Helper()
	w := &watcher{applied: make(chan *Config, 10), errs: make(chan error, 10), env: env}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Watch(ctx, WatchOptions{Path: path, Interval: 5 * time.Millisecond, Getenv: w.getenv},
			func(c *Config) { w.applied <- c },
			func(err error) { w.errs <- err })
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		goleak.VerifyNone(t, harness.NATSLeftover)
	})
	return w
}

func (w *watcher) wantApply(t *testing.T) *Config {
	t.Helper()
	select {
	case c := <-w.applied:
		return c
	case err := <-w.errs:
		t.Fatalf("onError(%v), want apply", err)
	case <-time.After(5 * time.Second):
		t.Fatal("apply not called")
	}
	return nil
}

func (w *watcher) wantError(t *testing.T) error {
	t.Helper()
	select {
	case c := <-w.applied:
		t.Fatalf("apply(%v), want onError", c)
	case err := <-w.errs:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("onError not called")
	}
	return nil
}

// wantQuiet checks that nothing is reported over several polls.
func (w *watcher) wantQuiet(t *testing.T) {
	t.Helper()
	select {
	case c := <-w.applied:
		t.Fatalf("apply(%v) without a change", c)
	case err := <-w.errs:
		t.Fatalf("onError(%v) without a change", err)
	case <-time.After(50 * time.Millisecond):
	}
}

// writeAtomic replaces a file as editors and kubelet do: a new file renamed over the old.
func writeAtomic(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

const watchConfig = `receivers:
  - id: r
    type: github
    secrets: [{file: secret}, {env: NEXT}]
    routes:
      - repository: acme/shop
        branches: [main]
        deploy: {cluster: c, namespace: ns, release: rel}
`

func TestWatch(t *testing.T) {
	path := writeFiles(t, map[string]string{"webhooks.yaml": watchConfig, "secret": "one\n"})
	secret := filepath.Join(filepath.Dir(path), "secret")
	w := startWatch(t, path, map[string]string{"NEXT": "two"})

	c := w.wantApply(t)
	if r, _ := c.Receiver("r"); strings.Join(r.Secrets(), ",") != "one,two" {
		t.Fatalf("first load: secrets %v", len(r.Secrets()))
	}
	w.wantQuiet(t)

	writeAtomic(t, path, strings.Replace(watchConfig, "namespace: ns", "namespace: ns2", 1))
	if c := w.wantApply(t); c.Receivers[0].Routes[0].Deploy.Namespace != "ns2" {
		t.Errorf("after the change, namespace %q", c.Receivers[0].Routes[0].Deploy.Namespace)
	}

	writeAtomic(t, path, strings.Replace(watchConfig, "type: github", "type: gitea", 1))
	var ce *ConfigError
	if err := w.wantError(t); !errors.As(err, &ce) || !strings.Contains(err.Error(), `unknown type "gitea"`) {
		t.Errorf("invalid change: %v", err)
	}
	w.wantQuiet(t) // an invalid file is reported once

	writeAtomic(t, path, watchConfig)
	w.wantApply(t)

	writeAtomic(t, secret, "three\n")
	if c := w.wantApply(t); strings.Join(c.Receivers[0].Secrets(), ",") != "three,two" {
		t.Error("secret file change: secrets not updated")
	}

	w.setenv("NEXT", "four")
	if c := w.wantApply(t); strings.Join(c.Receivers[0].Secrets(), ",") != "three,four" {
		t.Error("env change: secrets not updated")
	}

	if err := os.Remove(secret); err != nil {
		t.Fatal(err)
	}
	if err := w.wantError(t); !strings.Contains(err.Error(), "secrets[0].file: file "+secret+" does not exist") {
		t.Errorf("secret removed: %v", err)
	}
	writeAtomic(t, secret, "five")
	w.wantApply(t)
}

// TestWatchConfigMapSwap mounts the file as kubelet does a ConfigMap: webhooks.yaml is a
// symlink through ..data, a symlink swapped for a new timestamped directory.
func TestWatchConfigMapSwap(t *testing.T) {
	dir := t.TempDir()
	version := func(name, content string) {
		if err := os.Mkdir(filepath.Join(dir, name), 0o700); err != nil {
			t.Fatal(err)
		}
		for f, c := range map[string]string{"webhooks.yaml": content, "secret": "s1"} {
			if err := os.WriteFile(filepath.Join(dir, name, f), []byte(c), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Symlink(name, filepath.Join(dir, "..data_tmp")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	version("..v1", watchConfig)
	for _, f := range []string{"webhooks.yaml", "secret"} {
		if err := os.Symlink(filepath.Join("..data", f), filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	w := startWatch(t, filepath.Join(dir, "webhooks.yaml"), map[string]string{"NEXT": "n"})
	w.wantApply(t)
	version("..v2", strings.Replace(watchConfig, "release: rel", "release: rel2", 1))
	if c := w.wantApply(t); c.Receivers[0].Routes[0].Deploy.Release != "rel2" {
		t.Errorf("after the swap, release %q", c.Receivers[0].Routes[0].Deploy.Release)
	}
}

func TestWatchInvalidAtStart(t *testing.T) {
	path := writeFiles(t, map[string]string{"webhooks.yaml": "receivers: []\n"})
	w := startWatch(t, path, map[string]string{})
	w.wantError(t)
	w.wantQuiet(t)
	w.setenv("S", "x")
	writeAtomic(t, path, validConfig)
	w.wantApply(t)
}
