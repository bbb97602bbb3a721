package bus

import (
	"regexp"
	"strings"
)

// userinfoRe finds the user information of URLs in text: "scheme://userinfo@".
var userinfoRe = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)([^/@\s,]*)@`)

// RedactURL hides the credentials of every URL in s — one URL, a comma-separated server list,
// or a message that quotes URLs: "nats://user:pass@host" becomes "nats://user:***@host" and a
// token URL "nats://tok@host" becomes "nats://***@host". Everything that logs, prints or wraps
// a NATS URL in an error passes it through RedactURL.
func RedactURL(s string) string {
	return userinfoRe.ReplaceAllStringFunc(s, func(m string) string {
		sub := userinfoRe.FindStringSubmatch(m)
		scheme, info := sub[1], sub[2]
		if user, _, ok := strings.Cut(info, ":"); ok && user != "" {
			return scheme + user + ":***@"
		}
		return scheme + "***@"
	})
}

// redactedError is an error whose text went through RedactURL; it still unwraps to the original.
type redactedError struct{ err error }

func (e redactedError) Error() string { return RedactURL(e.err.Error()) }
func (e redactedError) Unwrap() error { return e.err }

// RedactError wraps err so that its text hides URL credentials (nil stays nil).
func RedactError(err error) error {
	if err == nil {
		return nil
	}
	return redactedError{err}
}
