package gitsource

import (
	"net/url"
	"regexp"
	"strings"
)

// scpLike matches git's scp-like ssh syntax user@host:path (no scheme, no "//").
var scpLike = regexp.MustCompile(`^(?:([^@/:]+)@)?([^@/:]+):([^/].*|/.*)?$`)

// userinfo matches the user information of URLs inside free text, for redactText.
var userinfo = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://)[^/\s@]*@`)

// Redact returns url without credentials: https://user:pass@host/x becomes https://host/x,
// and an ssh URL keeps its user name (git@) but loses any password.
func Redact(raw string) string {
	if m := scpLike.FindStringSubmatch(raw); m != nil && !strings.Contains(raw, "://") {
		return raw // user@host:path carries no secret: ssh authenticates with keys
	}
	u, err := url.Parse(raw)
	if err != nil {
		return userinfo.ReplaceAllString(raw, "$1")
	}
	if u.User != nil {
		if u.Scheme == "ssh" {
			u.User = url.User(u.User.Username())
		} else {
			u.User = nil
		}
	}
	return u.String()
}

// normalize turns an scp-like address git@host:acme/app.git into
// ssh://git@host/acme/app.git and strips credentials, so that every spelling of an ssh
// URL matches the same credentials entry and cache key.
func normalize(raw string) string {
	if m := scpLike.FindStringSubmatch(raw); m != nil && !strings.Contains(raw, "://") {
		user := ""
		if m[1] != "" {
			user = m[1] + "@"
		}
		return "ssh://" + user + m[2] + "/" + strings.TrimPrefix(m[3], "/")
	}
	return Redact(raw)
}

// minSecretLen is the shortest secret replaced wherever it appears in a message: shorter
// ones would garble unrelated text (they still go from URLs).
const minSecretLen = 4

// redactText hides URL user information and the given secrets in s.
func redactText(s string, secrets []string) string {
	s = userinfo.ReplaceAllString(s, "$1")
	for _, p := range secrets {
		if len(p) >= minSecretLen {
			s = strings.ReplaceAll(s, p, "xxxxx")
		}
	}
	return s
}

// redactedError hides secrets in the message of the error it wraps; errors.Is and
// errors.As see the wrapped error.
type redactedError struct {
	err     error
	secrets []string
}

func (e *redactedError) Error() string { return redactText(e.err.Error(), e.secrets) }
func (e *redactedError) Unwrap() error { return e.err }

// redact wraps err so that its message shows none of secrets nor any URL's user
// information.
func redact(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	return &redactedError{err: err, secrets: secrets}
}
