package keyindex

import (
	"errors"
	"os"
	"path/filepath"
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
