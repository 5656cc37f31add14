package repos

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Branch rules are enforced by collab-hook's pre-receive: whatever the
// shims learn to skip, the pre-receive shim must start it for every push
// that touches refs/heads/, with git's lines unchanged.
func TestPreReceiveShimAlwaysChecksBranches(t *testing.T) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "rec")
	bin := filepath.Join(dir, "collab-hook")
	stub := "#!/bin/sh\nprintf '%s\\n' \"$*\" > " + rec + ".args\ncat > " + rec + ".in\n"
	if err := os.WriteFile(bin, []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	shim := filepath.Join(dir, "pre-receive")
	if err := os.WriteFile(shim, []byte(Shim(bin, "/srv/collab", "pre-receive")), 0o755); err != nil {
		t.Fatal(err)
	}
	const z, a, b = "0000000000000000000000000000000000000000", "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	for name, in := range map[string]string{
		"fast-forward": a + " " + b + " refs/heads/main\n",
		"force push":   b + " " + a + " refs/heads/main\n",
		"delete":       a + " " + z + " refs/heads/main\n",
		"create":       z + " " + a + " refs/heads/main\n",
		"mixed":        z + " " + a + " refs/for/main\n" + a + " " + b + " refs/heads/main\n",
	} {
		t.Run(name, func(t *testing.T) {
			os.Remove(rec + ".args")
			os.Remove(rec + ".in")
			cmd := exec.Command("/bin/sh", shim)
			cmd.Stdin = strings.NewReader(in)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("shim: %v: %s", err, out)
			}
			args, err := os.ReadFile(rec + ".args")
			if err != nil {
				t.Fatal("the pre-receive shim did not start collab-hook for a branch update: branch rules would be bypassed")
			}
			if !strings.HasSuffix(strings.TrimSpace(string(args)), "hook pre-receive") {
				t.Fatalf("args %q", args)
			}
			if got, _ := os.ReadFile(rec + ".in"); string(got) != in {
				t.Fatalf("collab-hook read %q, want %q", got, in)
			}
		})
	}
}

// The shims run collab-hook-fast where it lies beside collab-hook and can
// run, with the same arguments and git's lines: pre-receive always,
// proc-receive and post-receive only under serve (COLLAB_HOOK_FD), which
// they relay to; collab-hook otherwise.
func TestShimFastBinary(t *testing.T) {
	const in = "1111111111111111111111111111111111111111 2222222222222222222222222222222222222222 refs/heads/main\n"
	for _, tc := range []struct {
		hook      string
		fastMode  os.FileMode // 0: no collab-hook-fast
		underServ bool
		want      string
	}{
		{"pre-receive", 0, false, "full"},
		{"pre-receive", 0o644, false, "full"},
		{"pre-receive", 0o755, false, "fast"},
		{"pre-receive", 0o755, true, "fast"},
		{"proc-receive", 0o755, false, "full"},
		{"proc-receive", 0o644, true, "full"},
		{"proc-receive", 0, true, "full"},
		{"proc-receive", 0o755, true, "fast"},
		{"post-receive", 0o755, false, "full"},
		{"post-receive", 0o644, true, "full"},
		{"post-receive", 0o755, true, "fast"},
	} {
		t.Run(fmt.Sprintf("%s/%o/%v", tc.hook, tc.fastMode, tc.underServ), func(t *testing.T) {
			dir := t.TempDir()
			rec := filepath.Join(dir, "rec")
			stub := func(name string) string {
				return "#!/bin/sh\nprintf '" + name + " %s\\n' \"$*\" > " + rec + "\ncat >> " + rec + "\n"
			}
			bin := filepath.Join(dir, "collab-hook")
			if err := os.WriteFile(bin, []byte(stub("full")), 0o755); err != nil {
				t.Fatal(err)
			}
			if tc.fastMode != 0 {
				if err := os.WriteFile(filepath.Join(dir, FastBinary), []byte(stub("fast")), tc.fastMode); err != nil {
					t.Fatal(err)
				}
			}
			shim := filepath.Join(dir, tc.hook)
			if err := os.WriteFile(shim, []byte(Shim(bin, "/srv/collab", tc.hook)), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("/bin/sh", shim)
			cmd.Env = append(os.Environ(), "COLLAB_HOOK_FD=")
			if tc.underServ {
				cmd.Env = append(cmd.Env, "COLLAB_HOOK_FD=3")
			}
			cmd.Stdin = strings.NewReader(in)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("shim: %v: %s", err, out)
			}
			got, err := os.ReadFile(rec)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want + " --root /srv/collab hook " + tc.hook + "\n" + in
			// post-receive's here-document ends with one empty line.
			if g := strings.TrimSuffix(string(got), "\n"); string(got) != want && g != want {
				t.Errorf("ran %q, want %q", got, want)
			}
		})
	}
}
