// Package flock takes exclusive flock(2) locks on side files: the kernel
// queues waiters, where SQLite's own lock wait is a sleeping poll.
package flock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
)

// Lock takes an exclusive lock on path (created if missing) and returns the
// function that releases it. A cancelled ctx stops the wait; the lock, if it
// is granted later, is dropped at once.
func Lock(ctx context.Context, path string, mode os.FileMode) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, mode)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	done := make(chan error, 1)
	go func() { done <- syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }()
	select {
	case err := <-done:
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		// Closing the file releases the lock (and tells an inotify
		// watcher, such as the webhook dispatcher, that a writer is done).
		return func() { f.Close() }, nil
	case <-ctx.Done():
		go func() { <-done; f.Close() }()
		return nil, ctx.Err()
	}
}

// TryLock takes the lock on path only if nobody holds it: ok is false when
// another holder has it, and nothing waits.
func TryLock(path string, mode os.FileMode) (unlock func(), ok bool, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, mode)
	if err != nil {
		return nil, false, fmt.Errorf("open lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, true, nil
}
