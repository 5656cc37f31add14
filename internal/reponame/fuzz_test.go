package reponame

import (
	"strings"
	"testing"
)

// FuzzKey: whatever a client sends as a repository name, a key that Key
// accepts is relative, ends in .git, has no empty, dot or dash segment and
// no character git or a shell could take for more, and is a fixed point.
func FuzzKey(f *testing.F) {
	for _, s := range []string{"foo", "org/foo.git", "/foo.git", "../x", "a\\b", "-x", "org//x", "a\x00b", ".git"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		key, err := Key(name)
		if err != nil {
			if key != "" {
				t.Fatalf("Key(%q) = %q with error %v", name, key, err)
			}
			return
		}
		if !strings.HasSuffix(key, ".git") || strings.HasPrefix(key, "/") || strings.ContainsAny(key, "\\\x00\n\r") {
			t.Fatalf("Key(%q) = %q", name, key)
		}
		for _, seg := range strings.Split(key, "/") {
			if seg == "" || seg == "." || seg == ".." || strings.HasPrefix(seg, "-") || strings.HasPrefix(seg, ".") {
				t.Fatalf("Key(%q) = %q: bad segment %q", name, key, seg)
			}
		}
		for _, r := range key {
			if r < 0x20 || r == 0x7f {
				t.Fatalf("Key(%q) = %q: control character", name, key)
			}
		}
		if again, err := Key(key); err != nil || again != key {
			t.Fatalf("Key(Key(%q)) = %q %v, want %q", name, again, err, key)
		}
	})
}
