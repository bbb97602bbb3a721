package gitsource

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// TestFlockExcludesAnotherHolder takes the lock file as another process would (a separate
// open file description) and checks that lockClone waits for it and honours the context.
func TestFlockExcludesAnotherHolder(t *testing.T) {
	clone := filepath.Join(t.TempDir(), "0123456789abcdef.git")
	other, err := flock(context.Background(), clone+".lock")
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := lockClone(ctx, clone); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("lockClone while another holds the file: err = %v, want a deadline", err)
	}

	time.AfterFunc(50*time.Millisecond, func() { _ = other.Close() }) // closing releases the flock
	unlock, err := lockClone(context.Background(), clone)
	if err != nil {
		t.Fatalf("lockClone after the release: %v", err)
	}
	unlock()
	unlock2, err := lockClone(context.Background(), clone)
	if err != nil {
		t.Fatalf("lockClone after unlock: %v", err)
	}
	unlock2()
}
