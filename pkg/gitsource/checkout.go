// Package gitsource writes a git repository's tree at exactly one commit into a
// directory, for charts named by git webhooks. Repositories are kept as bare clones in a
// cache directory and fetched incrementally, only when the commit is not there yet.
package gitsource

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/hash"
)

// Defaults for the zero values of Options.MaxBytes and Options.Timeout.
const (
	DefaultMaxBytes = 100 << 20
	DefaultTimeout  = 2 * time.Minute
)

// ErrCommitNotFound is wrapped by the error of a Checkout whose commit the repository does
// not have after fetching all its branches and tags (and the sha itself, where allowed).
var ErrCommitNotFound = errors.New("commit not found")

// ErrTooLarge is wrapped by the error of a Checkout whose files add up to more than
// Options.MaxBytes.
var ErrTooLarge = errors.New("checkout over the size limit")

// ErrNotAllowed is wrapped by the errors for what a Checkout refuses: a URL scheme other
// than https, http or ssh, a path with ".." or absolute, a symlink leaving the tree, a
// URL or redirect Options.Allow refuses.
var ErrNotAllowed = errors.New("not allowed")

// Options configures Checkout; the zero value of a field is its default.
type Options struct {
	// CacheDir holds the bare clones, CacheDir/<sha256(url) hex[:16]>.git (created 0700,
	// the URL without credentials); it is required.
	CacheDir string
	// Credentials are the secrets per URL prefix, from LoadCredentials; zero is anonymous.
	Credentials Credentials
	// MaxBytes bounds the bytes of files one Checkout writes; 0 is DefaultMaxBytes.
	MaxBytes int64
	// Timeout bounds the network part (the fetches) of one Checkout; 0 is DefaultTimeout.
	Timeout time.Duration
	// Allow, when set, is asked about the repository URL (without credentials, scp-like
	// ones as ssh://) and about every http(s) request a fetch makes, each redirect hop
	// included: a request goes out only when Allow accepts its URL or a parent of it. A
	// refusal fails the Checkout with ErrNotAllowed, naming the host and Allow's reason.
	Allow func(location string) error
}

// Validate reports a missing CacheDir or a negative bound.
func (o Options) Validate() error {
	if o.CacheDir == "" {
		return errors.New("git checkout options: CacheDir is required")
	}
	if o.MaxBytes < 0 || o.Timeout < 0 {
		return errors.New("git checkout options: MaxBytes and Timeout must not be negative")
	}
	return nil
}

// DefaultCacheDir is where the clones are kept when nothing else is said:
// $XDG_CACHE_HOME/sealane/git (~/.cache/sealane/git), else under the temporary directory.
func DefaultCacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "sealane", "git")
	}
	return filepath.Join(os.TempDir(), "sealane-git")
}

// withDefaults fills in the zero bounds.
func (o Options) withDefaults() Options {
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	return o
}

// Source is what a Checkout writes: the tree of Commit (a full hex sha) of the repository at
// URL under Path ("" is the whole repository).
type Source struct {
	URL, Commit, Path string
}

// Checkout writes the tree src names into a new temporary directory under dir and returns
// it; the caller removes it. It fetches only when the commit is not in the cached clone yet;
// submodules are skipped, and a symlink resolving outside the written tree fails the Checkout.
func Checkout(ctx context.Context, src Source, dir string, o Options) (string, error) {
	out, err := checkout(ctx, request{url: src.URL, commit: src.Commit, path: src.Path, dir: dir}, o)
	if err != nil {
		return "", fmt.Errorf("git checkout %s at %s: %w", Redact(src.URL), src.Commit, err)
	}
	return out, nil
}

// request is the arguments of one Checkout.
type request struct {
	url, commit, path, dir string
}

// checkout is Checkout without the error's subject.
func checkout(ctx context.Context, req request, o Options) (string, error) {
	if err := o.Validate(); err != nil {
		return "", err
	}
	o = o.withDefaults()
	norm, err := checkURL(req.url)
	if err != nil {
		return "", err
	}
	sha, err := checkCommit(req.commit)
	if err != nil {
		return "", err
	}
	subpath, err := checkPath(req.path)
	if err != nil {
		return "", err
	}
	var policy *fetchPolicy
	if o.Allow != nil {
		if err := o.Allow(norm); err != nil {
			return "", fmt.Errorf("%w: %w", ErrNotAllowed, err)
		}
		policy = &fetchPolicy{allow: o.Allow}
	}
	auth, secrets, err := o.Credentials.auth(norm)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(o.CacheDir, 0o700); err != nil {
		return "", fmt.Errorf("cache: %w", err)
	}
	if u, err := url.Parse(req.url); err == nil && u.User != nil {
		p, _ := u.User.Password()
		secrets = append(secrets, p)
	}
	f := &fetcher{url: req.url, auth: auth, timeout: o.Timeout, clone: filepath.Join(o.CacheDir, cacheKey(norm)+".git"), policy: policy}
	out, err := f.checkout(ctx, sha, subpath, req.dir, o.MaxBytes)
	return out, redact(err, secrets...)
}

// cacheKey names a repository's clone: the first 16 hex digits of the sha256 of its URL.
func cacheKey(norm string) string {
	sum := sha256.Sum256([]byte(norm))
	return hex.EncodeToString(sum[:])[:16]
}

// checkURL accepts https, http and ssh URLs (scp-like too) and returns the URL without
// credentials, scp-like ones as ssh://; other schemes, file:// and local paths included,
// are not allowed.
func checkURL(raw string) (string, error) {
	norm := normalize(raw)
	u, err := url.Parse(norm)
	if err != nil {
		return "", fmt.Errorf("repository URL: %w", redact(err))
	}
	switch u.Scheme {
	case "https", "http", "ssh":
	default:
		return "", fmt.Errorf("repository URL scheme %q (want https, http or ssh): %w", u.Scheme, ErrNotAllowed)
	}
	if u.Host == "" {
		return "", fmt.Errorf("repository URL has no host: %w", ErrNotAllowed)
	}
	return norm, nil
}

// checkCommit accepts a full object name of this build's hash (lower-cased).
func checkCommit(c string) (string, error) {
	c = strings.ToLower(c)
	if _, err := hex.DecodeString(c); err != nil || (len(c) != 40 && len(c) != 64) {
		return "", errors.New("commit must be a full sha (40 or 64 hex digits)")
	}
	if len(c) != hash.HexSize {
		return "", fmt.Errorf("commit of %d hex digits: this build reads repositories with %d-digit object names only", len(c), hash.HexSize)
	}
	return c, nil
}

// checkPath accepts a relative slash path without ".." and returns it cleaned ("" for the
// root).
func checkPath(p string) (string, error) {
	if p == "" || p == "." {
		return "", nil
	}
	if strings.HasPrefix(p, "/") || strings.Contains(p, "\\") || strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("path %q must be relative, with slashes: %w", p, ErrNotAllowed)
	}
	for _, c := range strings.Split(p, "/") {
		if c == ".." {
			return "", fmt.Errorf("path %q has \"..\": %w", p, ErrNotAllowed)
		}
	}
	if c := path.Clean(p); c != "." {
		return c, nil
	}
	return "", nil
}
