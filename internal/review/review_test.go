package review

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/store"
)

// at0 is the time of every review rv makes.
var at0 = store.At(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))

func rv(author, verdict string, rev int) patches.Review {
	return patches.Review{Author: author, Verdict: verdict, Revision: rev, CreatedAt: at0}
}

func TestSummarize(t *testing.T) {
	tests := []struct {
		name    string
		reviews []patches.Review
		latest  int
		want    Summary
		text    string
	}{
		{"none", nil, 1, Summary{Revision: 1, Approvals: []string{}, ChangeRequests: []string{}, Stale: []Vote{}}, "no votes"},
		{
			"latest vote of each reviewer counts",
			[]patches.Review{rv("bob", RequestChanges, 2), rv("bob", Approve, 2), rv("carol", Comment, 2), rv("dan", RequestChanges, 2)},
			2,
			Summary{Revision: 2, Approvals: []string{"bob"}, ChangeRequests: []string{"dan"}, Stale: []Vote{}, Comments: 1},
			"approved by bob; changes requested by dan",
		},
		{
			"votes on older revisions are stale",
			[]patches.Review{rv("bob", Approve, 1), rv("carol", Approve, 1), rv("carol", Approve, 3), rv("bob", Comment, 3)},
			3,
			Summary{Revision: 3, Approvals: []string{"carol"}, ChangeRequests: []string{}, Stale: []Vote{{Author: "bob", Verdict: Approve, Revision: 1, At: at0}}, Comments: 1},
			"approved by carol; 1 stale vote",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Summarize(tt.reviews, tt.latest)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
			if got.String() != tt.text {
				t.Errorf("text %q, want %q", got.String(), tt.text)
			}
		})
	}
}

func TestViewsOutdated(t *testing.T) {
	f := "a.go"
	l := 3
	rs := []patches.Review{{Revision: 1, File: &f, Line: &l}, {Revision: 2, File: &f}, {Revision: 2}}
	v := Views(rs, 2)
	if !v[0].Outdated || v[1].Outdated || v[2].Outdated {
		t.Fatalf("outdated: %+v", v)
	}
	if v[0].Anchor() != "a.go:3" || v[1].Anchor() != "a.go" || v[2].Anchor() != "" || v[2].IsInline() {
		t.Fatalf("anchors: %q %q %q", v[0].Anchor(), v[1].Anchor(), v[2].Anchor())
	}
}

func TestParseLeaseToken(t *testing.T) {
	tests := []struct {
		in     string
		issue  string
		token  int64
		errKnd fault.Kind
		isNil  bool
	}{
		{in: "", isNil: true},
		{in: "7", token: 7},
		{in: "abcd1234:12", issue: "abcd1234", token: 12},
		{in: "0", errKnd: fault.Usage},
		{in: "-3", errKnd: fault.Usage},
		{in: "x", errKnd: fault.Usage},
		{in: "abc:1", errKnd: fault.Usage},
		{in: "zzzz:1", errKnd: fault.Usage},
		{in: "abcd:", errKnd: fault.Usage},
		{in: "abcd:1:2", errKnd: fault.Usage},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			f, err := ParseFence(tt.in)
			if tt.errKnd != fault.Internal {
				if err == nil || fault.KindOf(err) != tt.errKnd {
					t.Fatalf("want refusal, got %+v %v", f, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.isNil != (f == nil) || (f != nil && (f.issuePrefix != tt.issue || f.token != tt.token)) {
				t.Fatalf("got %+v", f)
			}
		})
	}
}

func TestCleanPath(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a.go", "a.go"},
		{"./dir//b.go", "dir/b.go"},
		{"dir/../c.go", "c.go"},
		{"-rf", "-rf"}, // a file may be called that; it only ever follows "--"
		{"", ""},
		{"/etc/passwd", ""},
		{"../x", ""},
		{"a/../../x", ""},
		{".", ""},
		{"a\nb", ""},
	}
	for _, tt := range tests {
		got, err := CleanPath(tt.in)
		if tt.want == "" {
			if err == nil || fault.KindOf(err) != fault.Usage {
				t.Errorf("%q: want a usage refusal, got %q %v", tt.in, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q: got %q %v, want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestCheckAnchor(t *testing.T) {
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@x", "GIT_COMMITTER_NAME=A", "GIT_COMMITTER_EMAIL=a@x", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	files := map[string]string{
		"three.txt":      "1\n2\n3\n",
		"nonl.txt":       "1\n2",
		"empty.txt":      "",
		"sub/deep.go":    "package x\n",
		"bin.dat":        "ab\x00cd\n",
		"*":              "star\n",
		"-rf":            "dash\n",
		"sub/other.text": "x\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("add", "-A")
	git("commit", "-qm", "x")
	rev := patches.Revision{Number: 2, Commit: git("rev-parse", "HEAD")}
	gitDir := filepath.Join(dir, ".git")
	tests := []struct {
		file string
		line int
		want string // "" ok, else part of the refusal
	}{
		{"three.txt", 3, ""},
		{"three.txt", 4, "line 4 is past the end of three.txt in revision 2"},
		{"nonl.txt", 2, ""},
		{"nonl.txt", 3, "which has 2 lines"},
		{"empty.txt", 0, ""},
		{"empty.txt", 1, "past the end"},
		{"sub/deep.go", 1, ""},
		{"sub", 0, "is a directory"},
		{"deep.go", 1, "file deep.go does not exist in revision 2"},
		{"bin.dat", 1, "binary"},
		{"bin.dat", 0, ""},
		{"*", 1, ""},
		{"s*", 1, "does not exist"}, // no pathspec magic
		{"-rf", 1, ""},
		{"missing/x", 1, "does not exist"},
	}
	for _, tt := range tests {
		got, err := CheckAnchor(context.Background(), gitDir, rev, tt.file, tt.line)
		if tt.want == "" {
			if err != nil || got != tt.file {
				t.Errorf("%s:%d: %q %v", tt.file, tt.line, got, err)
			}
			continue
		}
		if err == nil || fault.KindOf(err) != fault.Usage || !strings.Contains(fault.Public(err), tt.want) {
			t.Errorf("%s:%d: want refusal %q, got %v", tt.file, tt.line, tt.want, err)
		}
	}
}
