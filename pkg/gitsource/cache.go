package gitsource

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// fetchSpecs are what a fetch brings: every branch and tag, force-updated.
var fetchSpecs = []config.RefSpec{"+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"}

// fetcher gets commits of one repository into its cached bare clone.
type fetcher struct {
	url     string // as given, credentials included: only for the transport
	auth    transport.AuthMethod
	timeout time.Duration
	clone   string       // the clone's directory
	policy  *fetchPolicy // Options.Allow for each request, nil: none

	deadline time.Time // of the network part: set by the first fetch, shared by the others
}

// checkout locks the clone, makes sure it has the commit and writes the commit's tree (or
// its subpath) into a new temporary directory under dir.
func (f *fetcher) checkout(ctx context.Context, sha, subpath, dir string, limit int64) (string, error) {
	unlock, err := lockClone(ctx, f.clone)
	if err != nil {
		return "", err
	}
	defer unlock()
	c, err := f.commit(ctx, plumbing.NewHash(sha))
	if err != nil {
		return "", err
	}
	tree, err := c.Tree()
	if err != nil {
		return "", fmt.Errorf("tree of the commit: %w", err)
	}
	if subpath != "" {
		if tree, err = tree.Tree(subpath); err != nil {
			return "", fmt.Errorf("path %q in the commit: %w", subpath, err)
		}
	}
	out, err := os.MkdirTemp(dir, "gitsource-*")
	if err != nil {
		return "", fmt.Errorf("checkout directory: %w", err)
	}
	if err := writeTree(tree, out, limit); err != nil {
		_ = os.RemoveAll(out)
		return "", err
	}
	return out, nil
}

// commit finds the commit in the clone, fetching when it is not there yet. A clone that
// cannot be opened or read is removed and cloned again, once.
func (f *fetcher) commit(ctx context.Context, h plumbing.Hash) (*object.Commit, error) {
	for attempt := 0; ; attempt++ {
		r, err := f.open()
		if err != nil {
			return nil, err
		}
		c, err := f.find(ctx, r, h)
		if err == nil || attempt > 0 || !errors.Is(err, errCorrupt) {
			return c, err
		}
		if err := os.RemoveAll(f.clone); err != nil {
			return nil, fmt.Errorf("remove the corrupt clone: %w", err)
		}
	}
}

// errCorrupt marks a clone whose objects cannot be read.
var errCorrupt = errors.New("cached clone is corrupt")

// find looks the commit up, fetches the branches and tags when it is missing, then the sha
// itself.
func (f *fetcher) find(ctx context.Context, r *git.Repository, h plumbing.Hash) (*object.Commit, error) {
	if c, err := lookup(r, h); !errors.Is(err, plumbing.ErrObjectNotFound) {
		return c, err
	}
	if err := f.fetch(ctx, r, fetchSpecs); err != nil {
		return nil, err
	}
	if c, err := lookup(r, h); !errors.Is(err, plumbing.ErrObjectNotFound) {
		return c, err
	}
	// Servers that allow it (uploadpack.allowReachableSHA1InWant) send a commit that no
	// branch or tag holds, such as a pull request's; others refuse, and that is not found.
	spec := config.RefSpec(h.String() + ":refs/gitsource/commits/" + h.String())
	if err := f.fetch(ctx, r, []config.RefSpec{spec}); err != nil && ctx.Err() != nil {
		return nil, err
	}
	if c, err := lookup(r, h); !errors.Is(err, plumbing.ErrObjectNotFound) {
		return c, err
	}
	return nil, fmt.Errorf("%w after fetching all branches and tags: it may not be pushed yet, or was force-pushed away", ErrCommitNotFound)
}

// lookup reads the commit h (or the commit an annotated tag h points to) from the clone.
// A missing object is plumbing.ErrObjectNotFound; an unreadable one is errCorrupt.
func lookup(r *git.Repository, h plumbing.Hash) (*object.Commit, error) {
	obj, err := r.Object(plumbing.AnyObject, h)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errCorrupt, err)
	}
	switch o := obj.(type) {
	case *object.Commit:
		return o, nil
	case *object.Tag:
		c, err := o.Commit()
		if err != nil {
			return nil, fmt.Errorf("tag %s: %w", h, err)
		}
		return c, nil
	default:
		return nil, fmt.Errorf("object %s is a %s, not a commit", h, obj.Type())
	}
}

// fetch runs one fetch of specs from the repository; all the fetches of one Checkout end
// within the fetcher's timeout of the first. An up-to-date clone or an empty repository is
// no error.
func (f *fetcher) fetch(ctx context.Context, r *git.Repository, specs []config.RefSpec) error {
	if f.deadline.IsZero() {
		f.deadline = time.Now().Add(f.timeout)
	}
	ctx, cancel := context.WithDeadline(ctx, f.deadline)
	defer cancel()
	opts := &git.FetchOptions{
		RemoteName: git.DefaultRemoteName,
		RemoteURL:  f.url,
		RefSpecs:   specs,
		Auth:       f.auth,
		Tags:       git.NoTags,
		Force:      true,
	}
	if isSSH(f.url) {
		opts.ProxyOptions = deadlineProxy(f.deadline) // deadline.go: the handshake takes no ctx
	}
	installCheckedHTTP()
	err := r.FetchContext(withPolicy(ctx, f.policy), opts)
	closeIdleConnections()
	if refused := f.policy.refusal(); err != nil && refused != nil {
		// go-git's error would quote the refused redirect's URL in full.
		return fmt.Errorf("fetch: %w", refused)
	}
	// go-git puts the body of a 401, 403 or 404 in its error: only the kind is kept, the
	// server's words are not repeated.
	switch {
	case err == nil, errors.Is(err, git.NoErrAlreadyUpToDate), errors.Is(err, transport.ErrEmptyRemoteRepository):
		return nil
	case errors.Is(err, transport.ErrAuthenticationRequired):
		return fmt.Errorf("fetch: authentication failed (check the credentials for this URL): %w", transport.ErrAuthenticationRequired)
	case errors.Is(err, transport.ErrAuthorizationFailed):
		return fmt.Errorf("fetch: authentication failed (check the credentials for this URL): %w", transport.ErrAuthorizationFailed)
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return fmt.Errorf("fetch: %w (check the URL and the credentials for it)", transport.ErrRepositoryNotFound)
	case errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.Is(err, context.Canceled):
		return fmt.Errorf("fetch: timed out after %s: %w", f.timeout, err)
	case sshError(err) != nil:
		return fmt.Errorf("fetch: %w", sshError(err))
	}
	return fmt.Errorf("fetch: %w", err)
}

// open opens the bare clone, or creates it (in a temporary directory renamed into place,
// so that a clone directory always holds an initialized repository). A clone that does
// not open is removed and created again.
func (f *fetcher) open() (*git.Repository, error) {
	r, err := git.PlainOpen(f.clone)
	if err == nil {
		if _, err = r.Remote(git.DefaultRemoteName); err == nil {
			return r, nil
		}
	}
	if err := os.RemoveAll(f.clone); err != nil {
		return nil, fmt.Errorf("remove the unusable clone: %w", err)
	}
	stale, _ := filepath.Glob(f.clone + ".init-*")
	for _, s := range stale {
		_ = os.RemoveAll(s)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(f.clone), filepath.Base(f.clone)+".init-*")
	if err != nil {
		return nil, fmt.Errorf("create the clone: %w", err)
	}
	defer os.RemoveAll(tmp) // gone after the rename
	r, err = git.PlainInit(tmp, true)
	if err == nil {
		_, err = r.CreateRemote(&config.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{Redact(f.url)}})
	}
	if err == nil {
		err = os.Rename(tmp, f.clone)
	}
	if err != nil {
		return nil, fmt.Errorf("create the clone: %w", err)
	}
	return git.PlainOpen(f.clone)
}
