package console

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
)

// sessionCookie is the cookie the login form sets: an HMAC of the token, never the token.
const sessionCookie = "sealane_console"

// guard lets a request through when it proves access: any request when the console has no
// access control (loopback only, checked by Validate), else the bearer token (header or
// session cookie) or the auth proxy header.
type guard struct {
	token       string
	proxyHeader string
}

func (g guard) open() bool { return g.token == "" && g.proxyHeader == "" }

// allowed says whether r carries a valid credential.
func (g guard) allowed(r *http.Request) bool {
	if g.open() {
		return true
	}
	if g.proxyHeader != "" && strings.TrimSpace(r.Header.Get(g.proxyHeader)) != "" {
		return true
	}
	if g.token == "" {
		return false
	}
	if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && equal(strings.TrimSpace(bearer), g.token) {
		return true
	}
	if c, err := r.Cookie(sessionCookie); err == nil && equal(c.Value, g.session()) {
		return true
	}
	return false
}

// session is the session cookie's value: HMAC-SHA256 of a fixed label keyed by the token.
func (g guard) session() string {
	mac := hmac.New(sha256.New, []byte(g.token))
	mac.Write([]byte("sealane console session"))
	return hex.EncodeToString(mac.Sum(nil))
}

// equal compares secrets in constant time (for equal lengths; lengths are not secret here).
func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// wrap refuses requests without a credential: 401 with the login form for pages, 401 with a
// plain message for the API and the event stream.
func (g guard) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.allowed(r) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="sealane console"`)
		if strings.HasPrefix(r.URL.Path, "/api/") || g.token == "" {
			http.Error(w, "unauthorized: a bearer token or the auth proxy header is required", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write(loginPage)
	})
}

// login takes the token once from the login form and answers with the session cookie
// (HttpOnly, SameSite=Strict; Secure behind TLS).
func (g guard) login(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || g.token == "" {
		http.Error(w, "POST the token from the login form", http.StatusMethodNotAllowed)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	if err := r.ParseForm(); err != nil || !equal(strings.TrimSpace(r.PostForm.Get("token")), g.token) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write(loginPage)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: g.session(), Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}
