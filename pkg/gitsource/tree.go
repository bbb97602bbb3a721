package gitsource

import (
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// maxLinkTarget bounds the length of a symlink's target; maxLinkHops bounds how many
// symlinks one resolution follows (as the kernel's ELOOP limit does).
const (
	maxLinkTarget = 4096
	maxLinkHops   = 40
)

// treeWriter writes one git tree into a directory, counting the bytes written against a
// limit. Symlinks are collected while walking and written last, once each is known to
// resolve inside the tree.
type treeWriter struct {
	root  string
	limit int64
	used  int64
	links map[string]string // slash path in the tree → target
}

// writeTree writes tree under root (an existing empty directory): regular files 0644,
// executables 0755, symlinks that resolve inside the tree; submodules are skipped.
func writeTree(tree *object.Tree, root string, limit int64) error {
	w := &treeWriter{root: root, limit: limit, links: map[string]string{}}
	if err := w.walk(tree, ""); err != nil {
		return err
	}
	for name := range w.links {
		if err := checkLink(w.links, name); err != nil {
			return fmt.Errorf("symlink %s -> %s: %w", name, w.links[name], err)
		}
	}
	for name, target := range w.links {
		if err := os.Symlink(target, w.local(name)); err != nil {
			return fmt.Errorf("symlink %s: %w", name, cause(err))
		}
	}
	return nil
}

// local is the file system path of a slash path in the tree.
func (w *treeWriter) local(name string) string {
	return filepath.Join(w.root, filepath.FromSlash(name))
}

// walk writes the entries of tree, whose path in the written tree is prefix.
func (w *treeWriter) walk(tree *object.Tree, prefix string) error {
	for i := range tree.Entries {
		e := &tree.Entries[i]
		if !validName(e.Name) {
			return fmt.Errorf("tree entry %q under %q: %w", e.Name, prefix, ErrNotAllowed)
		}
		name := path.Join(prefix, e.Name)
		switch e.Mode {
		case filemode.Dir:
			if err := os.Mkdir(w.local(name), 0o755); err != nil {
				return fmt.Errorf("directory %s: %w", name, cause(err))
			}
			sub, err := tree.Tree(e.Name)
			if err != nil {
				return fmt.Errorf("directory %s: %w", name, err)
			}
			if err := w.walk(sub, name); err != nil {
				return err
			}
		case filemode.Regular, filemode.Deprecated, filemode.Executable:
			if err := w.writeFile(tree, e, name); err != nil {
				return err
			}
		case filemode.Symlink:
			if err := w.readLink(tree, e, name); err != nil {
				return err
			}
		case filemode.Submodule:
			// A submodule is another repository at a commit; charts do not use them.
		default:
			return fmt.Errorf("tree entry %s: unsupported mode %s", name, e.Mode)
		}
	}
	return nil
}

// validName refuses entry names a crafted tree could use to write outside the directory.
func validName(n string) bool {
	return n != "" && n != "." && n != ".." && !strings.ContainsAny(n, "/\\\x00")
}

// writeFile writes one blob with its mode, failing before the write that would go over
// the limit.
func (w *treeWriter) writeFile(tree *object.Tree, e *object.TreeEntry, name string) error {
	f, err := tree.TreeEntryFile(e)
	if err != nil {
		return fmt.Errorf("file %s: %w", name, err)
	}
	if w.used+f.Size > w.limit {
		return fmt.Errorf("file %s (%d bytes) takes the checkout over the limit of %d bytes: %w", name, f.Size, w.limit, ErrTooLarge)
	}
	mode := os.FileMode(0o644)
	if e.Mode == filemode.Executable {
		mode = 0o755
	}
	r, err := f.Reader()
	if err != nil {
		return fmt.Errorf("file %s: %w", name, err)
	}
	defer r.Close()
	out, err := os.OpenFile(w.local(name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("file %s: %w", name, cause(err))
	}
	n, err := io.Copy(out, io.LimitReader(r, f.Size))
	w.used += n
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(w.local(name), mode) // the umask may have narrowed it
	}
	if err != nil {
		return fmt.Errorf("file %s: %w", name, cause(err))
	}
	return nil
}

// readLink records a symlink's target, to be checked and written after the walk.
func (w *treeWriter) readLink(tree *object.Tree, e *object.TreeEntry, name string) error {
	f, err := tree.TreeEntryFile(e)
	if err != nil {
		return fmt.Errorf("symlink %s: %w", name, err)
	}
	if f.Size > maxLinkTarget {
		return fmt.Errorf("symlink %s: target of %d bytes: %w", name, f.Size, ErrNotAllowed)
	}
	target, err := f.Contents()
	if err != nil {
		return fmt.Errorf("symlink %s: %w", name, err)
	}
	w.used += int64(len(target))
	w.links[name] = target
	return nil
}

// checkLink resolves the symlink name (a slash path in the tree) as the kernel would,
// following the tree's other symlinks, and fails when the resolution leaves the tree at any
// step (an absolute target, or ".." above the root), or loops.
func checkLink(links map[string]string, name string) error {
	hops := 0
	var resolve func(base []string, target string) ([]string, error)
	resolve = func(base []string, target string) ([]string, error) {
		if strings.HasPrefix(target, "/") {
			return nil, fmt.Errorf("absolute target: %w", ErrNotAllowed)
		}
		cur := append([]string(nil), base...)
		for _, c := range strings.Split(target, "/") {
			switch c {
			case "", ".":
				continue
			case "..":
				if len(cur) == 0 {
					return nil, fmt.Errorf("target outside the checked-out tree: %w", ErrNotAllowed)
				}
				cur = cur[:len(cur)-1]
				continue
			}
			cur = append(cur, c)
			next, ok := links[strings.Join(cur, "/")]
			if !ok {
				continue
			}
			if hops++; hops > maxLinkHops {
				return nil, fmt.Errorf("too many levels of symlinks: %w", ErrNotAllowed)
			}
			var err error
			if cur, err = resolve(cur[:len(cur)-1], next); err != nil {
				return nil, err
			}
		}
		return cur, nil
	}
	dir := strings.Split(path.Dir(name), "/")
	if path.Dir(name) == "." {
		dir = nil
	}
	_, err := resolve(dir, links[name])
	return err
}
