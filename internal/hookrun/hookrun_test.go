package hookrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/ops"
)

// Run's answers that need no database: the root here has none, so a hook
// that opened one would fail with "forge database unavailable".
func TestRunWithoutDatabase(t *testing.T) {
	root, err := forge.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	demo := filepath.Join(root.ReposDir(), "demo.git")
	other := filepath.Join(root.ReposDir(), "other.git")
	for _, d := range []string{demo, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const a, b = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	for _, tc := range []struct {
		name, hook, dir, repo, stdin string
		code                         int
		stderr                       string
	}{
		{"refs/for only: nothing to scan", "post-receive", demo, "", a + " " + b + " refs/collab/patches/ab/head\n", 0, ""},
		{"tag only", "post-receive", demo, "demo.git", a + " " + b + " refs/tags/v1\n", 0, ""},
		{"outside the root", "post-receive", t.TempDir(), "", "", 1, "collab: this repository is not under the forge root"},
		{"another repository than serve's", "post-receive", other, "demo.git", "", 1, "collab: hook of other.git relayed by the push to demo.git"},
		{"malformed input", "post-receive", demo, "", "not a ref update\n", 1, "collab: "},
		{"unknown hook", "update", demo, "", "", 1, "collab: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := Run(context.Background(), Hook{
				Name: tc.hook, Root: root, Environ: []string{"GIT_DIR=."}, Dir: tc.dir, Repo: tc.repo,
				Stdin: strings.NewReader(tc.stdin), Stdout: &stderr, Stderr: &stderr, Log: slog.New(slog.DiscardHandler),
			})
			if code != tc.code || !strings.HasPrefix(stderr.String(), tc.stderr) || (tc.stderr == "") != (stderr.Len() == 0) {
				t.Errorf("exit %d, %q; want %d, %q", code, stderr.String(), tc.code, tc.stderr)
			}
		})
	}
}

// The detached merge scan gets every deferred update, however many: far
// more lines than a pipe holds once hung the hook that started it.
func TestDetachFeedsAllUpdates(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "got")
	scan := filepath.Join(dir, "scan")
	if err := os.WriteFile(scan, []byte("#!/bin/sh\ncat > \"$OUT.tmp\" && mv \"$OUT.tmp\" \"$OUT\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var us []ops.Update
	var want strings.Builder
	for i := 0; i < 5000; i++ { // about 500 KB
		u := ops.Update{Old: strings.Repeat("1", 40), New: strings.Repeat("2", 40), Ref: fmt.Sprintf("refs/heads/b%d", i)}
		us = append(us, u)
		fmt.Fprintf(&want, "%s %s %s\n", u.Old, u.New, u.Ref)
	}
	done := make(chan error, 1)
	go func() { done <- detach(scan, nil, dir, append(os.Environ(), "OUT="+out), us) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute): // a write of 500 KB takes milliseconds
		t.Fatal("detach still writing after a minute: nobody reads the pipe")
	}
	// The child is detached: wait for its file, as long as it takes.
	deadline := time.Now().Add(time.Minute)
	for {
		got, err := os.ReadFile(out)
		if err == nil {
			if string(got) != want.String() {
				t.Fatalf("the scan got %d bytes, want %d", len(got), want.Len())
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the scan wrote nothing: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A post-receive that cannot record what a push merged says the push is
// in and not to push again; anything but "cannot write now" is an error.
func TestMovedAnyway(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		ok   bool
		want string
	}{
		{"disk full", fault.Later(errors.New("ENOSPC"), time.Minute, "disk full: the forge cannot write now; try again later"), true,
			"collab: your push is in (its refs moved), but what it merged could not be recorded now (disk full: the forge cannot write now); the forge's sweep records it once it can write: do not push again"},
		{"busy", fault.Later(errors.New("busy"), time.Second, "database busy: other writers held it past busy_timeout; try again later"), true,
			"(database busy: other writers held it past busy_timeout)"},
		{"a bug", errors.New("boom"), false, ""},
		{"refused", fault.New(fault.Usage, "bad"), false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg, ok := movedAnyway(tc.err)
			if ok != tc.ok || !strings.Contains(msg, tc.want) || strings.Contains(msg, "try again") {
				t.Fatalf("movedAnyway = %q, %v; want %v with %q", msg, ok, tc.ok, tc.want)
			}
		})
	}
}
