package console

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browser is one headless Chromium tab.
type browser struct {
	ctx       context.Context
	artifacts string
}

// newBrowser starts Chromium with the flags it needs on a closed network (without them it
// waits on the network for component updates, sync and QUIC probes) and a fresh profile.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1440, 960),
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); acancel() })
	// The first call starts the browser and must not have a deadline of its own (it would stop
	// the browser): bound it from outside — a hang here is the closed-network symptom.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx) }()
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("start chromium %s: %v", chromiumPath, err)
		}
	case <-time.After(time.Minute):
		cancel()
		t.Fatalf("chromium %s did not start within a minute", chromiumPath)
	}
	return &browser{ctx: ctx, artifacts: artifacts(t)}
}

// run runs action with a deadline and returns its value.
func run[T any](t *testing.T, b *browser, what string, action chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, action)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// eval evaluates a JavaScript expression to a T.
func eval[T any](t *testing.T, b *browser, expr string) T {
	t.Helper()
	return run(t, b, "evaluate "+expr, chromedp.Evaluate[T](expr))
}

// open loads url and waits until the page follows the event stream; it marks the page so
// that a reload can be told (notReloaded).
func (b *browser) open(t *testing.T, url string) {
	t.Helper()
	run(t, b, "open "+url, chromedp.Navigate(url))
	b.waitFor(t, 30*time.Second, "the live event stream", `document.querySelector('#live.on')`)
	eval[string](t, b, `window.__loadedOnce = 'yes'`)
}

// waitFor polls the JavaScript boolean expression every 50 ms until it holds, failing after d
// with the view's text.
func (b *browser) waitFor(t *testing.T, d time.Duration, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if eval[bool](t, b, "Boolean("+expr+")") {
			return
		}
		if time.Now().After(deadline) {
			text := eval[string](t, b, `document.getElementById('view').innerText.slice(0, 3000)`)
			t.Fatalf("after %s the page never showed %s; the view:\n%s", d, what, text)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// route changes the page's hash route (no reload) and waits for the view's marker.
func (b *browser) route(t *testing.T, hash, ready string) {
	t.Helper()
	eval[string](t, b, fmt.Sprintf("location.hash = %q", hash))
	b.waitFor(t, 30*time.Second, hash+" rendered", ready)
}

// html returns the page's whole DOM as HTML.
func (b *browser) html(t *testing.T) string {
	t.Helper()
	return eval[string](t, b, `document.documentElement.outerHTML`)
}

// notReloaded fails when the page was loaded again since open (the marker is gone).
func (b *browser) notReloaded(t *testing.T) {
	t.Helper()
	if eval[string](t, b, `window.__loadedOnce || 'reloaded'`) != "yes" {
		t.Fatal("the page was reloaded; the console must update in place")
	}
}

// screenshot writes the page as console-<name>.png into the artifacts directory.
func (b *browser) screenshot(t *testing.T, name string) {
	t.Helper()
	png := run(t, b, "screenshot "+name, chromedp.FullScreenshot(100))
	path := filepath.Join(b.artifacts, "console-"+name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s (%d bytes)", path, len(png))
}
