package console

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// sessionCookie is the cookie the login form sets: an expiry and an HMAC of it keyed by the
// token, never the token.
const sessionCookie = "sealane_console"

// guard lets a request through when it proves access: any request addressed to loopback when
// the console has no access control (loopback only, checked by Validate), else the bearer
// token (header or an unexpired session cookie) or the auth proxy header.
type guard struct {
	token       string
	proxyHeader string
	sessionTTL  time.Duration    // how long a session cookie is good for
	now         func() time.Time // nil: time.Now
}

func (g guard) open() bool { return g.token == "" && g.proxyHeader == "" }

func (g guard) clock() time.Time {
	if g.now != nil {
		return g.now()
	}
	return time.Now()
}

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
	if c, err := r.Cookie(sessionCookie); err == nil && g.validSession(c.Value) {
		return true
	}
	return false
}

// session is a session cookie's value for a session ending at expires: the Unix second it
// ends, a dot, and HMAC-SHA256 of a label and that second keyed by the token.
func (g guard) session(expires time.Time) string {
	at := strconv.FormatInt(expires.Unix(), 10)
	return at + "." + g.sessionMAC(at)
}

func (g guard) sessionMAC(at string) string {
	mac := hmac.New(sha256.New, []byte(g.token))
	mac.Write([]byte("sealane console session\x00" + at))
	return hex.EncodeToString(mac.Sum(nil))
}

// validSession says whether a cookie value is a session this token made that has not ended:
// the server decides when a session ends, whatever the browser keeps.
func (g guard) validSession(v string) bool {
	at, mac, ok := strings.Cut(v, ".")
	if !ok {
		return false
	}
	sec, err := strconv.ParseInt(at, 10, 64)
	if err != nil {
		return false
	}
	now := g.clock()
	if !now.Before(time.Unix(sec, 0)) || time.Unix(sec, 0).After(now.Add(g.sessionTTL)) {
		return false
	}
	return equal(mac, g.sessionMAC(at))
}

// hostGuard answers 421 to a request whose Host is not loopback when the console is open (no
// token, no proxy header): a page on another site whose name resolves to 127.0.0.1 (DNS
// rebinding) must not read the console through the user's browser. With access control it
// passes everything on.
func (g guard) hostGuard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.open() && !loopbackHost(r.Host) {
			http.Error(w, "misdirected request: a console without a token answers only requests addressed to localhost "+
				"or a loopback address; open it as http://127.0.0.1:<port>/, or set --token-file", http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackHost says whether a Host header (host or host:port) names localhost or a loopback
// address.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return loopback(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
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
// (HttpOnly, SameSite=Strict, Secure behind TLS, ending after the session TTL).
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
	expires := g.clock().Add(g.sessionTTL)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: g.session(expires), Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: int(g.sessionTTL / time.Second), Expires: expires})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}
