package reponame

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKey(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"foo", "foo.git"},
		{"foo.git", "foo.git"},
		{"org/foo", "org/foo.git"},
		{"org/foo.git", "org/foo.git"},
		{"/org/foo.git", "org/foo.git"},
		{"a.b-c_d", "a.b-c_d.git"},
		{"", ""},
		{"/", ""},
		{"//foo", ""},
		{"../foo", ""},
		{"org/../foo", ""},
		{"foo/..", ""},
		{"-foo", ""},
		{"--upload-pack=sh", ""},
		{"org/-x", ""},
		{".hidden", ""},
		{"org/.git", ""},
		{"a\\b", ""},
		{"a\nb", ""},
		{"a\x00b", ""},
		{"a//b", ""},
		{".git", ""},
		{strings.Repeat("a", 300), ""},
	} {
		got, err := Key(tc.in)
		if tc.want == "" {
			if err == nil {
				t.Errorf("Key(%q) = %q, want refusal", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Key(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestDir(t *testing.T) {
	base := t.TempDir()
	repos := filepath.Join(base, "repos")
	must(t, os.MkdirAll(filepath.Join(repos, "org", "foo.git"), 0o755))
	must(t, os.MkdirAll(filepath.Join(base, "outside.git"), 0o755))
	must(t, os.MkdirAll(filepath.Join(base, "repos-evil", "x.git"), 0o755))
	must(t, os.Symlink(filepath.Join(base, "outside.git"), filepath.Join(repos, "link.git")))
	must(t, os.Symlink(filepath.Join(repos, "org", "foo.git"), filepath.Join(repos, "alias.git")))

	if _, err := Dir(repos, "org/foo.git"); err != nil {
		t.Errorf("Dir(org/foo.git): %v", err)
	}
	if _, err := Dir(repos, "alias.git"); err != nil {
		t.Errorf("symlink inside repos/ refused: %v", err)
	}
	if _, err := Dir(repos, "link.git"); err == nil {
		t.Error("symlink to outside accepted")
	}
	if _, err := Dir(repos, "missing.git"); err == nil {
		t.Error("missing repository accepted")
	}
	if Inside(repos, filepath.Join(base, "repos-evil", "x.git")) {
		t.Error("Inside accepted a sibling with a common prefix")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
