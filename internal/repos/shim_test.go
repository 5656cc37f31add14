package repos

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPostReceiveShim runs the post-receive shim under /bin/sh with a
// stand-in for collab-hook that records its arguments and stdin: it must
// start for every push that updates a branch, with git's lines unchanged,
// and only then.
func TestPostReceiveShim(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bin dir") // a path that needs quoting
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(dir, "rec")
	bin := filepath.Join(dir, "collab-hook")
	stub := "#!/bin/sh\nprintf '%s\\n' \"$*\" > '" + rec + ".args'\ncat > '" + rec + ".in'\n"
	env := os.Environ()
	if err := os.WriteFile(bin, []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	shim := filepath.Join(dir, "post-receive")
	if err := os.WriteFile(shim, []byte(Shim(bin, "/srv/it's", "post-receive")), 0o755); err != nil {
		t.Fatal(err)
	}
	const z, a, b = "0000000000000000000000000000000000000000", "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	line := func(ref string) string { return a + " " + b + " " + ref + "\n" }
	var tags, tagsThenBranch strings.Builder
	for i := 0; i < 60; i++ {
		tags.WriteString(line(fmt.Sprintf("refs/tags/v%d", i)))
	}
	tagsThenBranch.WriteString(tags.String() + line("refs/heads/main"))
	for _, tc := range []struct {
		name, in string
		starts   bool
	}{
		{"empty", "", false},
		{"refs/for", line("refs/collab/patches/ab/rev/"+b) + z + " " + b + " refs/collab/patches/ab/head\n", false},
		{"tag", line("refs/tags/v1"), false},
		{"branch", line("refs/heads/main"), true},
		{"branch delete", b + " " + z + " refs/heads/gone\n", true}, // collab-hook decides
		{"mixed", line("refs/tags/v1") + line("refs/heads/topic") + line("refs/collab/x"), true},
		{"odd names", line("refs/heads/$HOME`id`*?") + line("refs/tags/a'b\"c"), true},
		{"no final newline", strings.TrimSuffix(line("refs/heads/main"), "\n"), true},
		{"big, branch last", tagsThenBranch.String(), true},
		{"big, no branch", tags.String(), true}, // handed over unread
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(rec + ".args")
			os.Remove(rec + ".in")
			cmd := exec.Command("/bin/sh", shim)
			cmd.Env = env
			cmd.Stdin = strings.NewReader(tc.in)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("shim: %v: %s", err, out)
			}
			args, err := os.ReadFile(rec + ".args")
			if started := err == nil; started != tc.starts {
				t.Fatalf("collab-hook started: %v, want %v", started, tc.starts)
			}
			if !tc.starts {
				return
			}
			if string(args) != "--root /srv/it's hook post-receive\n" {
				t.Errorf("args %q", args)
			}
			in, _ := os.ReadFile(rec + ".in")
			want := tc.in
			if !strings.HasSuffix(want, "\n") {
				want += "\n"
			}
			// The here-document ends with one empty line, which readers skip.
			if got := strings.TrimSuffix(string(in), "\n\n") + "\n"; got != want && string(in) != want {
				t.Errorf("stdin:\n%q\nwant\n%q", in, want)
			}
		})
	}
}
