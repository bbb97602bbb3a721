package gitsource

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"
)

// cloneLocks holds one lock per clone directory in this process: a channel of capacity
// one, so that waiting for it honours the context.
var cloneLocks sync.Map // clone dir → chan struct{}

// lockClone takes the process's lock of a clone and then an exclusive flock on the file
// <clone>.lock beside it, so that neither two goroutines nor two processes sharing the
// cache use a clone at once. It returns the function that releases both.
func lockClone(ctx context.Context, clone string) (func(), error) {
	v, _ := cloneLocks.LoadOrStore(clone, make(chan struct{}, 1))
	ch := v.(chan struct{})
	select {
	case ch <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the clone's lock: %w", ctx.Err())
	}
	f, err := flock(ctx, clone+".lock")
	if err != nil {
		<-ch
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
		<-ch
	}, nil
}

// flock opens file and takes an exclusive lock on it, polling so that a cancelled context
// stops the wait.
func flock(ctx context.Context, file string) (*os.File, error) {
	f, err := os.OpenFile(file, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock file: %w", err)
	}
	wait := 5 * time.Millisecond
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			_ = f.Close()
			return nil, fmt.Errorf("lock file %s: %w", file, err)
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, fmt.Errorf("waiting for the clone's lock file: %w", ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 200*time.Millisecond)
	}
}
