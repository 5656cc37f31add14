package serve

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/relay"
)

// A hook process, as git would start it under serve: this test binary
// again, asking serve over fd 3 (TestRelayedHookChecks).
func TestMain(m *testing.M) {
	if hook := os.Getenv("SERVE_TEST_HOOK"); hook != "" {
		code, err := relay.Ask(relay.ChildFD, relay.Request{Hook: hook, Dir: os.Getenv("SERVE_TEST_DIR"), Env: []string{"GIT_DIR=."}})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			if errors.Is(err, relay.ErrNotSent) {
				os.Exit(100)
			}
			os.Exit(101)
		}
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// serve runs only git's three hooks for receive-pack, and only for the
// repository the push is to.
func TestRelayedHookChecks(t *testing.T) {
	f := setup(t)
	demo := filepath.Join(f.root.ReposDir(), "demo.git")
	pub := filepath.Join(f.root.ReposDir(), "org", "pub.git")
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
			var code int
			var stderr string
			res := f.run(t, "alice", "git-receive-pack 'demo.git'", func(r *Request) {
				r.Start = fakeStart(func(path string, argv, env []string, files []*os.File) (int, error) {
					cmd := exec.Command(os.Args[0])
					cmd.Env = append(os.Environ(), "SERVE_TEST_HOOK="+tc.hook, "SERVE_TEST_DIR="+tc.dir, relay.FDVar+"="+strconv.Itoa(relay.ChildFD))
					cmd.ExtraFiles = files
					out, _ := cmd.CombinedOutput()
					code, stderr = cmd.ProcessState.ExitCode(), string(out)
					return 0, nil
				})
			})
			if res.code != 0 {
				t.Fatalf("serve: exit %d: %s", res.code, res.stderr)
			}
			if code != tc.code || !strings.HasPrefix(stderr, tc.stderr) {
				t.Errorf("hook: exit %d, %q; want %d, %q", code, stderr, tc.code, tc.stderr)
			}
		})
	}
}
