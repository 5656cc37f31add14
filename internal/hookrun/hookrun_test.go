package hookrun

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/forge"
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
