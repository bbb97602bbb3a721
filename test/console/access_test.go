package console

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sealane/sealane/test/harness"
)

// TestConsoleTokenAccess runs `sealane serve console --token-file` as its own process beside
// the pipeline: the API answers 401 without the token and 200 with it; a browser gets the
// sign-in form, signs in once and then follows the stream with a session cookie the page's
// scripts cannot read.
func TestConsoleTokenAccess(t *testing.T) {
	p := startPipeline(t)
	token := "tok-" + randomHex(t, 16)
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	port := harness.FreePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	p.sealane(t, "serve console", "serve", "console", "--console-addr", fmt.Sprintf("127.0.0.1:%d", port), "--token-file", file)
	status := func(ctx context.Context, bearer string) int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/api/deploys", nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	eventually(t, time.Minute, "serve console answers", func(ctx context.Context) bool { return status(ctx, "") != 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if got := status(ctx, ""); got != http.StatusUnauthorized {
		t.Errorf("without the token: %d, want 401", got)
	}
	if got := status(ctx, token+"x"); got != http.StatusUnauthorized {
		t.Errorf("with a wrong token: %d, want 401", got)
	}
	if got := status(ctx, token); got != http.StatusOK {
		t.Errorf("with the token: %d, want 200", got)
	}

	b := newBrowser(t)
	run(t, b, "open "+url, chromedp.Navigate(url+"/"))
	b.waitFor(t, 30*time.Second, "the sign-in form", `document.querySelector('form.login input[name="token"]')`)
	eval[string](t, b, fmt.Sprintf(`document.querySelector('input[name="token"]').value = %q; document.querySelector('form.login').submit(); 'sent'`, token))
	b.waitForNavigation(t, 30*time.Second, "the console after signing in", `document.querySelector('#live.on')`)
	if cookies := eval[string](t, b, `document.cookie`); strings.Contains(cookies, "sealane_console") {
		t.Errorf("the session cookie is readable by scripts: %q", cookies)
	}
	noneOf(t, "the page", b.html(t), token)
}

// waitForNavigation is waitFor across a page load: evaluation errors while the new page
// replaces the old one are retried.
func (b *browser) waitForNavigation(t *testing.T, d time.Duration, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("Boolean("+expr+")"))
		cancel()
		if err == nil && ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("after %s the page never showed %s", d, what)
}
