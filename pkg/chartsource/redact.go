package chartsource

import (
	"io"
	"net/url"
	"regexp"
	"strings"
)

// minSecretLen is the shortest password that is replaced wherever it appears in a
// message; shorter ones would garble unrelated text (they still go from URLs).
const minSecretLen = 4

// redacted replaces passwords in messages, as url.URL.Redacted does.
const redacted = "xxxxx"

// userinfoPassword matches the password of a URL with user information.
var userinfoPassword = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]*):[^/\s@]*@`)

// secretsOf collects the passwords of src and opts: Auth passwords and those in URLs.
func secretsOf(src Source, opts Options) []string {
	var out []string
	add := func(p string) {
		if len(p) >= minSecretLen {
			out = append(out, p)
		}
	}
	addURL := func(raw string) {
		if u, err := url.Parse(raw); err == nil && u.User != nil {
			if p, ok := u.User.Password(); ok {
				add(p)
				add(url.QueryEscape(p))
				add(url.PathEscape(p))
			}
		}
	}
	add(opts.Auth.Password)
	addURL(src.Repo)
	addURL(src.Name)
	for _, r := range opts.Repositories {
		add(r.Auth.Password)
		addURL(r.URL)
	}
	return out
}

// redactText hides URL passwords and the given secrets in s.
func redactText(s string, secrets []string) string {
	s = userinfoPassword.ReplaceAllString(s, "${1}:"+redacted+"@")
	for _, p := range secrets {
		s = strings.ReplaceAll(s, p, redacted)
	}
	return s
}

// redactedError hides passwords in the message of the error it wraps; errors.Is and
// errors.As see the wrapped error.
type redactedError struct {
	err     error
	secrets []string
}

func (e *redactedError) Error() string { return redactText(e.err.Error(), e.secrets) }
func (e *redactedError) Unwrap() error { return e.err }

// redact wraps err so that its message shows no password of src or opts.
func redact(err error, src Source, opts Options) error {
	if err == nil {
		return nil
	}
	return &redactedError{err: err, secrets: secretsOf(src, opts)}
}

// redactWriter hides passwords in what Helm prints while it downloads.
type redactWriter struct {
	w       io.Writer
	secrets []string
}

func (r redactWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(r.w, redactText(string(p), r.secrets)); err != nil {
		return 0, err
	}
	return len(p), nil
}
