package console

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
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
	rec := do(t, h, httptest.NewRequest(http.MethodGet, "/", nil))
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
