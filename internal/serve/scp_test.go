package serve

import (
	"fmt"
	"strings"
	"testing"

	collab "github.com/collab-forge/collab"
)

// The scp source sends exactly hooks/commit-msg in the legacy protocol and
// refuses anything else in one line with the right exit code.
func TestSCP(t *testing.T) {
	f := setup(t)
	hook := collab.CommitMsgHook
	sent := fmt.Sprintf("C0755 %d commit-msg\n%s\x00", len(hook), hook)
	for _, tc := range []struct {
		name, cmd, stdin string
		code             int
		stdout, stderr   string
	}{
		{"git-review's", "scp -f hooks/commit-msg", "\x00\x00\x00", 0, sent, ""},
		{"verbose, times, --", "scp -v -p -f -- hooks/commit-msg", "\x00\x00\x00", 0, sent, ""},
		{"joined flags", "scp -pf hooks/commit-msg", "\x00\x00\x00", 0, sent, ""},
		{"sink refuses the file", "scp -f hooks/commit-msg", "\x00\x02no room\n", 2, "C0755 ", "collab: scp: the transfer failed\n"},
		{"sink gone", "scp -f hooks/commit-msg", "", 2, "", "collab: scp: the transfer failed\n"},
		{"another file", "scp -f hooks/pre-receive", "\x00", 4, "", "collab: scp: no such file \"hooks/pre-receive\": the forge serves only hooks/commit-msg\n"},
		{"a path out", "scp -f ../../etc/passwd", "\x00", 4, "", "no such file \"../../etc/passwd\""},
		{"two files", "scp -f hooks/commit-msg hooks/commit-msg", "\x00", 4, "", "no such file"},
		{"upload", "scp -t hooks/commit-msg", "\x00", 2, "", "collab: scp: nothing can be copied to the forge; it serves only hooks/commit-msg"},
		{"no direction", "scp hooks/commit-msg", "\x00", 2, "", "only sends files"},
		{"other option", "scp -S /bin/sh -f hooks/commit-msg", "\x00", 2, "", "collab: scp: unsupported option -S"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := f.run(t, "bob", tc.cmd, func(r *Request) { r.Stdin = strings.NewReader(tc.stdin) })
			if res.code != tc.code || !strings.HasPrefix(res.stdout, tc.stdout) || !strings.Contains(res.stderr, tc.stderr) ||
				(tc.code == 0 && res.stdout != tc.stdout) || strings.Count(res.stderr, "\n") > 1 {
				t.Errorf("%q: exit %d stdout %.60q stderr %q; want %d %.60q %q", tc.cmd, res.code, res.stdout, res.stderr, tc.code, tc.stdout, tc.stderr)
			}
			if len(res.execs) != 0 {
				t.Errorf("%q ran %v", tc.cmd, res.execs)
			}
		})
	}
	// A disabled principal gets nothing, not even the hook.
	if res := f.run(t, "gone", "scp -f hooks/commit-msg", func(r *Request) { r.Stdin = strings.NewReader("\x00\x00\x00") }); res.code == 0 || res.stdout != "" {
		t.Errorf("disabled principal: exit %d stdout %.40q", res.code, res.stdout)
	}
}
