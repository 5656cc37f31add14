package keyindex

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestLookup(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "collab.db.keys")
	b, err := Format([]Entry{
		{"ssh-ed25519", "AAAAone", "alice"},
		{"ssh-ed25519", "AAAAtwo", "bob"},
		{"ssh-rsa", "AAAAone", "carol"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(path, b, 0o640); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ typ, blob, want string }{
		{"ssh-ed25519", "AAAAone", "alice"},
		{"ssh-ed25519", "AAAAtwo", "bob"},
		{"ssh-rsa", "AAAAone", "carol"},
		{"ssh-rsa", "AAAAtwo", ""},
		{"ssh-ed25519", "AAAAon", ""}, // a prefix of a blob is not the key
		{"ssh-ed25519", "AAAAone alice", ""},
		{"ed25519", "AAAAone", ""}, // a suffix of a type neither
		{"ssh-ed25519", "", ""},
		{"", "AAAAone", ""},
		{"#", "end", ""},
		{"ssh-ed25519", "AAAAone\nssh-ed25519", ""},
	} {
		got, err := Lookup(path, tc.typ, tc.blob)
		if err != nil || got != tc.want {
			t.Errorf("Lookup(%q, %q) = %q, %v; want %q", tc.typ, tc.blob, got, err, tc.want)
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("mode: %v %v", fi.Mode(), err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".keys-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestLookupUnusable(t *testing.T) {
	dir := t.TempDir()
	full, err := Format([]Entry{{"ssh-ed25519", "AAAAone", "alice"}})
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{
		"truncated":  full[:len(full)-3],
		"no trailer": full[:len(full)-len(trailer)],
		"no header":  full[len(header):],
		"empty":      {},
		"bad line":   []byte(header + "ssh-ed25519 AAAAone \n" + trailer),
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := Lookup(path, "ssh-ed25519", "AAAAone"); !errors.Is(err, ErrUnusable) {
			t.Errorf("%s: Lookup = %q, %v; want ErrUnusable", name, got, err)
		}
	}
	if _, err := Lookup(filepath.Join(dir, "missing"), "ssh-ed25519", "AAAAone"); !errors.Is(err, ErrUnusable) {
		t.Errorf("missing file: %v, want ErrUnusable", err)
	}
}

func TestFormatRefusesBlanks(t *testing.T) {
	for _, e := range []Entry{
		{"ssh-ed25519", "AAAA one", "alice"},
		{"ssh-ed25519", "AAAA", "al ice"},
		{"ssh-ed25519", "AAAA", ""},
		{"ssh\ned25519", "AAAA", "alice"},
	} {
		if _, err := Format([]Entry{e}); err == nil {
			t.Errorf("Format(%q) accepted", e)
		}
	}
}

// TestAwk holds deploy/sshd/keys-command.awk, which install.sh makes sshd's
// AuthorizedKeysCommand, to Answer: the same line for every key, and the
// hand-off to collab-hook-fast wherever Answer says the index cannot answer.
func TestAwk(t *testing.T) {
	sshdSends := regexp.MustCompile(`^[A-Za-z0-9@._+/=-]+ [A-Za-z0-9+/=]+$`)
	awk, err := exec.LookPath("awk")
	if err != nil {
		t.Fatalf("no awk (Debian's mawk is required): %v", err)
	}
	script, err := filepath.Abs("../../deploy/sshd/keys-command.awk")
	if err != nil {
		t.Fatal(err)
	}
	bin, root := t.TempDir(), t.TempDir()
	// What the index cannot answer goes to collab-hook-fast, here a stand-in
	// that shows its arguments.
	fast := "#!/bin/sh\necho \"fallback $*\"\nexit 3\n"
	if err := os.WriteFile(filepath.Join(bin, "collab-hook-fast"), []byte(fast), 0o755); err != nil {
		t.Fatal(err)
	}
	// Answer reads the database's header (dbfile.Check); an empty one passes.
	db := filepath.Join(root, "collab.db")
	if err := os.WriteFile(db, append([]byte("SQLite format 3\x00"), make([]byte, 84)...), 0o644); err != nil {
		t.Fatal(err)
	}
	full, err := Format([]Entry{
		{"ssh-ed25519", "AAAAone", "alice"},
		{"ssh-ed25519", "AAAAtwo", "bob.agent-2"},
		{"ssh-rsa", "AAAAone", "carol"},
		{"sk-ssh-ed25519@openssh.com", "AAAA+/x=", "dave"},
	})
	if err != nil {
		t.Fatal(err)
	}
	indexes := map[string][]byte{
		"whole":       full,
		"truncated":   full[:len(full)-3],
		"no trailer":  full[:len(full)-len(trailer)],
		"no header":   full[len(header):],
		"header only": []byte(header),
		"empty":       {},
		"bad line":    []byte(header + "ssh-ed25519 AAAAone \n" + trailer),
		"bad name":    []byte(header + "ssh-ed25519 AAAAone Alice\n" + trailer),
		"reserved":    []byte(header + "ssh-ed25519 AAAAone local\n" + trailer),
		"four words":  []byte(header + "ssh-ed25519 AAAAone alice x\n" + trailer),
		"first wins":  []byte(header + "ssh-ed25519 AAAAone alice\nssh-ed25519 AAAAone bob\n" + trailer),
		"missing":     nil,
	}
	keys := [][2]string{
		{"ssh-ed25519", "AAAAone"},
		{"ssh-ed25519", "AAAAtwo"},
		{"ssh-rsa", "AAAAone"},
		{"sk-ssh-ed25519@openssh.com", "AAAA+/x="},
		{"ssh-rsa", "AAAAtwo"},
		{"ssh-ed25519", "AAAAon"},
		{"ed25519", "AAAAone"},
		{"#", "end"},
		{"ssh-ed25519", "AAAA;true"},
		{"ssh-ed25519", "$(true)"},
	}
	c := Command{Binary: filepath.Join(bin, "collab-hook"), Root: root}
	for name, content := range indexes {
		path := Path(db)
		os.Remove(path)
		if content != nil {
			if err := os.WriteFile(path, content, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, key := range keys {
			want, err := Answer(c, db, key[0], key[1])
			wantCode := 0
			switch {
			case !sshdSends.MatchString(key[0] + " " + key[1]):
				// Not what sshd's %t and %k are made of: nothing, and no shell
				// sees it, where Answer would ask the database (and find
				// nothing, as only keys sshd parsed are stored).
				want = ""
			case err != nil:
				want, wantCode = fmt.Sprintf("fallback --root %s keys-command git %s %s", root, key[0], key[1]), 3
			}
			cmd := exec.Command(awk, "-v", "bin="+bin, "-v", "root="+root, "-v", "u=git",
				"-v", "t="+key[0], "-v", "k="+key[1], "-f", script)
			out, err := cmd.Output()
			code := cmd.ProcessState.ExitCode()
			if got := strings.TrimSuffix(string(out), "\n"); got != want || code != wantCode {
				t.Errorf("%s index, key %q: awk printed %q (exit %d, %v); want %q (exit %d)",
					name, key, got, code, err, want, wantCode)
			}
		}
	}
}
