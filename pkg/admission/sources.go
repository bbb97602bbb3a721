package admission

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"
)

// SourcePolicy says which remote chart sources a request may name: those matching one of its
// patterns. A chart uploaded with the request (to the Object Store, by digest) is always
// allowed; a local path never is.
//
// A pattern is a URL whose scheme, host and path are matched against the source's normalised
// location (see Normalize) with globs: "*" matches any characters but "/", "?" one character
// but "/", "**" any characters including "/"; a pattern ending in "/**" also matches its
// prefix alone. Examples: "oci://registry.example.com/charts/*" (every chart of that OCI
// repository), "https://charts.example.com/*" (every Helm repository one level below the
// host), "https://charts.example.com/**" (the host's repositories and archives at any
// depth). Query strings and user information are not part of a pattern.
type SourcePolicy struct {
	patterns []sourcePattern
}

type sourcePattern struct {
	text string
	re   *regexp.Regexp
}

// NewSourcePolicy compiles patterns (empty entries are ignored); it fails on a pattern that
// is not a URL with a scheme and a host.
func NewSourcePolicy(patterns []string) (SourcePolicy, error) {
	var p SourcePolicy
	for _, raw := range patterns {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		sp, err := compilePattern(raw)
		if err != nil {
			return SourcePolicy{}, err
		}
		p.patterns = append(p.patterns, sp)
	}
	return p, nil
}

// Patterns returns the patterns as given.
func (p SourcePolicy) Patterns() []string {
	out := make([]string, 0, len(p.patterns))
	for _, sp := range p.patterns {
		out = append(out, sp.text)
	}
	return out
}

// compilePattern normalises a pattern's scheme and host and turns its globs into a regexp.
func compilePattern(raw string) (sourcePattern, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || scheme == "" || rest == "" {
		return sourcePattern{}, fmt.Errorf("chart source pattern %q: want a URL such as oci://registry.example.com/charts/* or https://charts.example.com/*", raw)
	}
	host, p, _ := strings.Cut(rest, "/")
	if host == "" || strings.ContainsAny(rest, "@#") {
		return sourcePattern{}, fmt.Errorf("chart source pattern %q: needs a host, and no user information or fragment", redactLocation(raw))
	}
	norm := strings.ToLower(scheme) + "://" + strings.ToLower(stripDefaultPort(strings.ToLower(scheme), host))
	if p != "" {
		norm += "/" + strings.TrimSuffix(p, "/")
	}
	var b strings.Builder
	b.WriteString("^")
	body, optionalTail := norm, false
	if strings.HasSuffix(norm, "/**") {
		body, optionalTail = strings.TrimSuffix(norm, "/**"), true
	}
	b.WriteString(globRegexp(body))
	if optionalTail {
		b.WriteString("(/.*)?")
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return sourcePattern{}, fmt.Errorf("chart source pattern %q: %w", raw, err)
	}
	return sourcePattern{text: raw, re: re}, nil
}

// globRegexp translates "**", "*" and "?" and quotes everything else.
func globRegexp(glob string) string {
	var b strings.Builder
	for i := 0; i < len(glob); i++ {
		switch {
		case strings.HasPrefix(glob[i:], "**"):
			b.WriteString(".*")
			i++
		case glob[i] == '*':
			b.WriteString("[^/]*")
		case glob[i] == '?':
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(glob[i : i+1]))
		}
	}
	return b.String()
}

// ErrLocalPath is wrapped by the refusal of a local filesystem path.
var ErrLocalPath = errors.New("local chart paths are refused")

// Normalize returns the form of a source location that patterns match: lowercase scheme and
// host, no default port, no user information, query or fragment, the path cleaned and without
// a trailing slash. A file:// location, one without a host and one whose path has ".."
// segments are refused.
func Normalize(location string) (string, error) {
	u, err := url.Parse(location)
	if err != nil {
		return "", fmt.Errorf("chart source %q is not a URL", redactLocation(location))
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme == "" || scheme == "file" {
		return "", fmt.Errorf("chart source %s: %w", redactLocation(location), ErrLocalPath)
	}
	if u.Host == "" {
		return "", fmt.Errorf("chart source %s has no host", redactLocation(location))
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == ".." {
			return "", fmt.Errorf("chart source %s: a path with \"..\" segments is refused", redactLocation(location))
		}
	}
	p := strings.TrimSuffix(path.Clean("/"+u.Path), "/")
	return scheme + "://" + strings.ToLower(stripDefaultPort(scheme, u.Host)) + p, nil
}

// stripDefaultPort drops :443 from https and oci hosts and :80 from http ones.
func stripDefaultPort(scheme, host string) string {
	switch {
	case (scheme == "https" || scheme == "oci") && strings.HasSuffix(host, ":443"):
		return strings.TrimSuffix(host, ":443")
	case scheme == "http" && strings.HasSuffix(host, ":80"):
		return strings.TrimSuffix(host, ":80")
	}
	return host
}

// redactLocation hides the password of a location with user information.
func redactLocation(location string) string {
	u, err := url.Parse(location)
	if err != nil || u.User == nil {
		return location
	}
	return u.Redacted()
}

// Allow says whether the remote location (a Helm repository URL, an oci:// reference without
// tag, an archive URL, a dependency's repository, a git remote) may be fetched; the error is
// the reason a failed deploy carries: the source, the rule and what to do. pkg/chartsource and
// pkg/gitsource also ask it about every URL they request, redirects included, accepting a URL
// when it or one of its parents is allowed.
func (p SourcePolicy) Allow(location string) error {
	norm, err := Normalize(location)
	if errors.Is(err, ErrLocalPath) {
		return fmt.Errorf("%w: the renderer never reads its own filesystem for a request from the bus; "+
			"upload the chart with the request (sealane deploy packs and uploads it)", err)
	}
	if err != nil {
		return err
	}
	for _, sp := range p.patterns {
		if sp.re.MatchString(norm) {
			return nil
		}
	}
	if len(p.patterns) == 0 {
		return fmt.Errorf("chart source %s is not allowed: the renderer allows only charts uploaded with the request "+
			"(no --allow-chart-source pattern is configured); upload the chart (sealane deploy packs and uploads it) "+
			"or ask the operator to allow the source", norm)
	}
	return fmt.Errorf("chart source %s is not allowed: it matches none of the renderer's --allow-chart-source patterns (%s); "+
		"upload the chart with the request, or ask the operator to allow the source", norm, strings.Join(p.Patterns(), ", "))
}
