package flock

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

func TestLockExcludesAndCancels(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := Lock(context.Background(), path, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := Lock(ctx, path, 0o600); err == nil {
		t.Fatal("second lock granted while the first is held")
	}
	unlock()
	unlock2, err := Lock(context.Background(), path, 0o600)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	unlock2()
}
