// Package slug turns free-form strings (branch names, project-env pairs) into valid Kubernetes
// namespace and Helm release names with werf's algorithm, so that a project moved from werf to
// sealane keeps its release and namespace names.
package slug

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"

	"github.com/spaolacci/murmur3"
	"golang.org/x/text/unicode/norm"
)

// Limits of the two name kinds, as in werf.
const (
	ReleaseMaxLen   = 53
	NamespaceMaxLen = 63
)

// Format is a kind of name to produce.
type Format string

// The formats `sealane slugify --format` accepts.
const (
	FormatRelease   Format = "release"
	FormatNamespace Format = "namespace"
)

var (
	// A Kubernetes namespace is a DNS-1123 label. werf's check also lets upper case through,
	// which the apiserver then refuses; sealane slugifies such names instead.
	namespaceRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	// Helm 3 release names are lower-case DNS-1123 subdomains (helm's own check).
	releaseRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// Release returns name unchanged when it is already a valid Helm release name of at most 53
// characters, else its slug: e.g. "feature/JIRA-1" → "feature-jira-1-<hash>".
func Release(name string) string { return slugName(name, releaseRe, ReleaseMaxLen) }

// Namespace returns name unchanged when it is already a valid namespace name of at most 63
// characters, else its slug: e.g. "My_branch" → "my-branch-8ebf2d1d".
func Namespace(name string) string { return slugName(name, namespaceRe, NamespaceMaxLen) }

// Make slugifies s for the given format.
func Make(f Format, s string) (string, error) {
	switch f {
	case FormatRelease:
		return Release(s), nil
	case FormatNamespace:
		return Namespace(s), nil
	}
	return "", fmt.Errorf("unknown slug format %q: use %q or %q", f, FormatRelease, FormatNamespace)
}

// slugName keeps a valid name and slugs any other. werf also slugs a valid name of exactly the
// limit's length, which makes its slug not idempotent (its own 63-character slugs get slugged
// again); sealane keeps such names, and matches werf everywhere else.
func slugName(s string, valid *regexp.Regexp, limit int) string {
	if s == "" || (valid.MatchString(s) && len(s) <= limit) {
		return s
	}
	hash := fmt.Sprintf("%x", murmur3.Sum32([]byte(s)))
	body := slugify(s)
	if body == "" {
		return hash
	}
	if room := limit - len(hash) - 1; len(body) > room {
		// werf does not trim a dash left at the cut, so neither do we: "abc--1a2b3c4d".
		body = body[:room]
	}
	return body + "-" + hash
}

// slugify lowercases s, transliterates accented Latin letters, turns separators into single
// dashes, drops every other character and trims dashes at both ends.
func slugify(s string) string {
	var b strings.Builder
	pendingDash := false
	for _, r := range norm.NFD.String(s) {
		var out string
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			out = string(r)
		case r >= 'A' && r <= 'Z':
			out = string(unicode.ToLower(r))
		case isSeparator(r):
			if b.Len() > 0 {
				pendingDash = true
			}
			continue
		default:
			out = latin[r] // empty for combining marks and anything unknown: dropped
		}
		if out == "" {
			continue
		}
		if pendingDash {
			b.WriteByte('-')
			pendingDash = false
		}
		b.WriteString(out)
	}
	return b.String()
}

func isSeparator(r rune) bool {
	return unicode.IsSpace(r) || strings.ContainsRune("-~><+=:;.,[]{}()_&/\\|", r)
}

// latin transliterates the Latin letters that NFD does not split into a base letter and a mark.
var latin = map[rune]string{
	'ß': "ss", 'æ': "ae", 'Æ': "ae", 'œ': "oe", 'Œ': "oe", 'ø': "o", 'Ø': "o",
	'đ': "d", 'Đ': "d", 'ð': "d", 'Ð': "d", 'ł': "l", 'Ł': "l", 'þ': "th", 'Þ': "th",
	'ı': "i", 'ħ': "h", 'Ħ': "h", 'ŧ': "t", 'Ŧ': "t", 'ŋ': "n", 'Ŋ': "n",
}
