package gitsource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing/object"
)

// ErrFileNotFound is wrapped by ReadFile's error for a path the commit does not have (or
// that is not a regular file).
var ErrFileNotFound = errors.New("file not in the repository at this commit")

// MaxFileBytes bounds the file ReadFile returns.
const MaxFileBytes = 1 << 20

// ReadFile returns the file at name (a path from the repository's root) of the commit
// src.Commit of the repository src.URL (src.Path is ignored), fetched as Checkout fetches:
// only the file's directory is written, under a temporary directory removed again.
func ReadFile(ctx context.Context, src Source, name string, o Options) ([]byte, error) {
	clean := path.Clean(name)
	dir := path.Dir(clean)
	if dir == "." {
		dir = ""
	}
	tmp, err := os.MkdirTemp("", "sealane-gitfile-")
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", clean, err)
	}
	defer os.RemoveAll(tmp)
	tree, err := Checkout(ctx, Source{URL: src.URL, Commit: src.Commit, Path: dir}, tmp, o)
	if errors.Is(err, object.ErrDirectoryNotFound) {
		return nil, fmt.Errorf("%s: %w", clean, ErrFileNotFound)
	}
	if err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(tree, filepath.FromSlash(path.Base(clean))))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", clean, ErrFileNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", clean, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w", clean, ErrFileNotFound)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: %w", clean, err)
	case len(data) > MaxFileBytes:
		return nil, fmt.Errorf("%s is over %d bytes: %w", clean, MaxFileBytes, ErrTooLarge)
	}
	return data, nil
}
