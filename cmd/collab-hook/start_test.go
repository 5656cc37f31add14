package main

import (
	"context"
	"io"
	"os"
	"testing"
	"time"
)

// start gives git the stdout serve holds, reports git's exit as sshd
// would see it had serve exec'd git, and passes serve's SIGTERM on to it.
func TestStart(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		cancel bool
		want   int
	}{
		{"success", "echo out; exit 0", false, 0},
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
			or, ow, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer or.Close()
			began := time.Now()
			wait, err := start(ctx, "/bin/sh", []string{"sh", "-c", tc.script}, nil, nil, ow, []*os.File{w})
			if err != nil {
				t.Fatal(err)
			}
			ow.Close()
			w.Close()
			code, err := wait()
			if err != nil || code != tc.want {
				t.Errorf("exit %d, %v; want %d", code, err, tc.want)
			}
			if out, _ := io.ReadAll(or); tc.name == "success" && string(out) != "out\n" {
				t.Errorf("stdout %q, want %q", out, "out\n")
			}
			if time.Since(began) > 20*time.Second {
				t.Errorf("took %v: the signal did not reach the child", time.Since(began))
			}
		})
	}
	if _, err := start(context.Background(), "/nonexistent/git", []string{"git"}, nil, nil, os.Stdout, nil); err == nil {
		t.Error("a git that cannot start: no error")
	}
}
