package serve

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/relay"
)

// serve runs only git's three hooks for receive-pack, and only for the
// repository the push is to, whatever a hook script asks.
func TestRelayedHookChecks(t *testing.T) {
	f := setup(t)
	demo := filepath.Join(f.root.ReposDir(), "demo.git")
	pub := filepath.Join(f.root.ReposDir(), "org", "pub.git")
	r := &Request{Root: f.root, Principal: "alice", Log: slog.New(slog.DiscardHandler)}
	run := (&gitFiles{}).hookRunner(context.Background(), r, f.db, "demo.git", nil, nil, nil)
	for _, tc := range []struct {
		hook, dir string
		code      int
		stderr    string
	}{
		{"post-receive", demo, 0, ""}, // no updates: nothing to scan
		{"merge-scan", demo, 1, `collab: hook "merge-scan" is not relayed`},
		{"pre-receive", demo, 0, ""}, // no updates: nothing to check
		{"post-receive", pub, 1, "collab: hook of org/pub.git relayed by the push to demo.git"},
		{"post-receive", "/", 1, "collab: this repository is not under the forge root"},
	} {
		t.Run(tc.hook+" in "+filepath.Base(tc.dir), func(t *testing.T) {
			dir := t.TempDir()
			stdin, err := os.Open(os.DevNull)
			if err != nil {
				t.Fatal(err)
			}
			defer stdin.Close()
			stdout, err := os.Create(filepath.Join(dir, "out"))
			if err != nil {
				t.Fatal(err)
			}
			defer stdout.Close()
			code := run(relay.Request{Hook: tc.hook, Dir: tc.dir, Env: []string{"GIT_DIR=."}}, stdin, stdout, stdout)
			out, err := os.ReadFile(stdout.Name())
			if err != nil {
				t.Fatal(err)
			}
			if code != tc.code || !strings.HasPrefix(string(out), tc.stderr) {
				t.Errorf("hook: exit %d, %q; want %d, %q", code, out, tc.code, tc.stderr)
			}
		})
	}
}
