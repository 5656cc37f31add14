package main

import (
	"context"
	"os"
	"testing"
	"time"
)

// spawn reports git's exit as sshd would see it had serve exec'd git, and
// passes serve's SIGTERM on to it.
func TestSpawn(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		cancel bool
		want   int
	}{
		{"success", "exit 0", false, 0},
		{"failure", "exit 3", false, 3},
		{"killed", "kill -KILL $$", false, 128 + 9},
		{"serve's SIGTERM", "echo ready >&3; exec sleep 30", true, 128 + 15},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if tc.cancel {
				go func() {
					b := make([]byte, 6)
					if n, _ := r.Read(b); n > 0 {
						cancel()
					}
				}()
			}
			start := time.Now()
			code, err := spawn(ctx, "/bin/sh", []string{"sh", "-c", tc.script}, nil, []*os.File{w})
			w.Close()
			if err != nil || code != tc.want {
				t.Errorf("exit %d, %v; want %d", code, err, tc.want)
			}
			if time.Since(start) > 20*time.Second {
				t.Errorf("took %v: the signal did not reach the child", time.Since(start))
			}
		})
	}
	if _, err := spawn(context.Background(), "/nonexistent/git", []string{"git"}, nil, nil); err == nil {
		t.Error("a git that cannot start: no error")
	}
}
