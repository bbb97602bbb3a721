package console

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

func do(t *testing.T, h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// consoleHandler is a console's handler with opts (nothing followed: the API answers from an
// empty model).
func consoleHandler(t *testing.T, opts Options) http.Handler {
	t.Helper()
	s, err := New(nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s.Handler()
}

// TestBearerToken: without the token 401 (the API and the page), with it 200; the login form
// takes it once and answers with an HttpOnly SameSite=Strict cookie that is not the token and
// lets the browser in.
func TestBearerToken(t *testing.T) {
	o := DefaultOptions()
	o.Addr, o.Token = "0.0.0.0:8090", "s3cret-token"
	h := consoleHandler(t, o)
	for _, path := range []string{"/api/deploys", "/", "/app.js", "/api/stream"} {
		if rec := do(t, h, httptest.NewRequest(http.MethodGet, path, nil)); rec.Code != http.StatusUnauthorized {
			t.Errorf("GET %s without a token: %d, want 401", path, rec.Code)
		}
	}
	wrong := httptest.NewRequest(http.MethodGet, "/api/deploys", nil)
	wrong.Header.Set("Authorization", "Bearer s3cret-tokeX")
	if rec := do(t, h, wrong); rec.Code != http.StatusUnauthorized {
		t.Errorf("wrong token: %d, want 401", rec.Code)
	}
	right := httptest.NewRequest(http.MethodGet, "/api/deploys", nil)
	right.Header.Set("Authorization", "Bearer s3cret-token")
	if rec := do(t, h, right); rec.Code != http.StatusOK {
		t.Errorf("with the token: %d, want 200", rec.Code)
	}
	if rec := do(t, h, httptest.NewRequest(http.MethodGet, "/healthz", nil)); rec.Code != http.StatusOK {
		t.Errorf("/healthz: %d, want 200 without a token", rec.Code)
	}

	bad := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(url.Values{"token": {"nope"}}.Encode()))
	bad.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if rec := do(t, h, bad); rec.Code != http.StatusUnauthorized || len(rec.Result().Cookies()) != 0 {
		t.Errorf("login with a wrong token: %d with cookies %v", rec.Code, rec.Result().Cookies())
	}
	login := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(url.Values{"token": {"s3cret-token"}}.Encode()))
	login.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := do(t, h, login)
	cookies := rec.Result().Cookies()
	if rec.Code != http.StatusSeeOther || len(cookies) != 1 {
		t.Fatalf("login: %d with cookies %v", rec.Code, cookies)
	}
	c := cookies[0]
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || strings.Contains(c.Value, "s3cret") {
		t.Errorf("session cookie %+v: want HttpOnly, SameSite=Strict, not the token", c)
	}
	page := httptest.NewRequest(http.MethodGet, "/", nil)
	page.AddCookie(c)
	if rec := do(t, h, page); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "app.js") {
		t.Errorf("page with the session cookie: %d", rec.Code)
	}
}

// TestAuthProxyHeader: behind an authenticating proxy the header must be present.
func TestAuthProxyHeader(t *testing.T) {
	o := DefaultOptions()
	o.Addr, o.AuthProxyHeader = "0.0.0.0:8090", "X-Forwarded-User"
	h := consoleHandler(t, o)
	if rec := do(t, h, httptest.NewRequest(http.MethodGet, "/api/releases", nil)); rec.Code != http.StatusUnauthorized {
		t.Errorf("without the header: %d, want 401", rec.Code)
	}
	req := httptest.NewRequest(http.MethodGet, "/api/releases", nil)
	req.Header.Set("X-Forwarded-User", "alice")
	if rec := do(t, h, req); rec.Code != http.StatusOK {
		t.Errorf("with the header: %d, want 200", rec.Code)
	}
}

// TestOpenBindRefused: New refuses a non-loopback address without access control; on
// loopback without it every request passes.
func TestOpenBindRefused(t *testing.T) {
	o := DefaultOptions()
	o.Addr = "0.0.0.0:8090"
	if _, err := New(nil, o); err == nil || !strings.Contains(err.Error(), "--token-file") {
		t.Fatalf("New on 0.0.0.0 without a token = %v, want a refusal naming --token-file", err)
	}
	h := consoleHandler(t, DefaultOptions())
	rec := do(t, h, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8090/", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("loopback console: %d, want 200", rec.Code)
	}
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("Content-Security-Policy = %q", csp)
	}
}

// TestReadyz: /readyz needs no credential and answers what Options.Ready says, with no URL
// credential in the reason.
func TestReadyz(t *testing.T) {
	o := DefaultOptions()
	o.Addr, o.Token = "0.0.0.0:8090", "s3cret-token"
	var notReady error
	o.Ready = func(context.Context) error { return notReady }
	h := consoleHandler(t, o)
	if rec := do(t, h, httptest.NewRequest(http.MethodGet, "/readyz", nil)); rec.Code != http.StatusOK {
		t.Errorf("/readyz while ready: %d, want 200 without a token", rec.Code)
	}
	notReady = errors.New("JetStream: dial nats://user:pa55@nats:4222: refused")
	rec := do(t, h, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if rec.Code != http.StatusServiceUnavailable || strings.Contains(rec.Body.String(), "pa55") {
		t.Errorf("/readyz while not ready: %d %q, want 503 without the password", rec.Code, rec.Body.String())
	}
}

// TestOpenConsoleChecksHost: a console without a token, on a real loopback listener, answers
// requests addressed to localhost, a loopback address or its bound address, and refuses with
// 421 any other Host — the request a browser sends after DNS rebinding, when a page of
// attacker.example whose name now resolves to 127.0.0.1 reads the console. With a token the
// Host is not what protects it, and is not checked.
func TestOpenConsoleChecksHost(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: consoleHandler(t, DefaultOptions()), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	get := func(host, path string) int {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+ln.Addr().String()+path, nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.StatusCode
	}
	for _, host := range []string{ln.Addr().String(), "localhost:" + port, "LOCALHOST:" + port, "[::1]:" + port, "127.0.0.2:" + port, "localhost"} {
		if code := get(host, "/api/deploys"); code != http.StatusOK {
			t.Errorf("Host %s: %d, want 200", host, code)
		}
	}
	for _, host := range []string{"attacker.example:" + port, "attacker.example", "127.0.0.1.nip.io:" + port, "localhost.attacker.example:" + port, "10.0.0.5:" + port} {
		for _, path := range []string{"/api/deploys", "/", "/readyz"} {
			if code := get(host, path); code != http.StatusMisdirectedRequest {
				t.Errorf("Host %q %s: %d, want 421", host, path, code)
			}
		}
	}
	noHost := httptest.NewRequest(http.MethodGet, "/api/deploys", nil)
	noHost.Host = "" // an HTTP/1.0 request without Host
	if rec := do(t, consoleHandler(t, DefaultOptions()), noHost); rec.Code != http.StatusMisdirectedRequest {
		t.Errorf("no Host: %d, want 421", rec.Code)
	}

	o := DefaultOptions()
	o.Token = "s3cret-token"
	req := httptest.NewRequest(http.MethodGet, "http://console.example.com/api/deploys", nil)
	req.Header.Set("Authorization", "Bearer s3cret-token")
	if rec := do(t, consoleHandler(t, o), req); rec.Code != http.StatusOK {
		t.Errorf("with a token, any Host: %d, want 200", rec.Code)
	}
}

// TestSessionCookieExpires: the login form's cookie says when it ends (Max-Age and Expires of
// the session TTL), and the server refuses it after that whatever the browser sends; a cookie
// with a later end than the server gave, or of the former never-ending form, is refused too.
func TestSessionCookieExpires(t *testing.T) {
	o := DefaultOptions()
	o.Addr, o.Token, o.SessionTTL = "0.0.0.0:8090", "s3cret-token", time.Hour
	s, err := New(nil, o)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	s.guard.now = func() time.Time { return now }
	h := s.Handler()

	login := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(url.Values{"token": {"s3cret-token"}}.Encode()))
	login.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	cookies := do(t, h, login).Result().Cookies()
	if len(cookies) != 1 {
		t.Fatalf("login cookies %v", cookies)
	}
	c := cookies[0]
	if c.MaxAge != 3600 || !c.Expires.Equal(now.Add(time.Hour)) {
		t.Errorf("session cookie Max-Age %d Expires %v, want 3600 and %v", c.MaxAge, c.Expires, now.Add(time.Hour))
	}
	page := func(v string) int {
		req := httptest.NewRequest(http.MethodGet, "/api/deploys", nil)
		req.AddCookie(&http.Cookie{Name: sessionCookie, Value: v})
		return do(t, h, req).Code
	}
	now = now.Add(59 * time.Minute)
	if code := page(c.Value); code != http.StatusOK {
		t.Errorf("cookie within its hour: %d, want 200", code)
	}
	now = now.Add(2 * time.Minute)
	if code := page(c.Value); code != http.StatusUnauthorized {
		t.Errorf("cookie after its hour: %d, want 401", code)
	}
	// Its end moved a year on: the MAC no longer matches, and the end is past the TTL anyway.
	_, mac, _ := strings.Cut(c.Value, ".")
	later := strconv.FormatInt(now.Add(30*time.Minute).Unix(), 10)
	if code := page(later + "." + mac); code != http.StatusUnauthorized {
		t.Errorf("cookie with its end changed: %d, want 401", code)
	}
	if code := page(s.guard.session(now.Add(2 * time.Hour))); code != http.StatusUnauthorized {
		t.Errorf("cookie ending later than the TTL allows: %d, want 401", code)
	}
	legacy := hmac.New(sha256.New, []byte("s3cret-token"))
	legacy.Write([]byte("sealane console session"))
	if code := page(hex.EncodeToString(legacy.Sum(nil))); code != http.StatusUnauthorized {
		t.Errorf("never-ending cookie of the former form: %d, want 401", code)
	}
}
