package shellwords

import (
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/fault"
)

var accepted = []struct {
	in   string
	want []string
}{
	{"", nil},
	{"   \t ", nil},
	{"whoami", []string{"whoami"}},
	{"git-upload-pack 'demo.git'", []string{"git-upload-pack", "demo.git"}},
	{"git-receive-pack '/org/demo.git'", []string{"git-receive-pack", "/org/demo.git"}},
	{"git upload-pack demo", []string{"git", "upload-pack", "demo"}},
	{"issue new demo --title 'Two words'", []string{"issue", "new", "demo", "--title", "Two words"}},
	{`issue new demo --title "Two \"quoted\" words"`, []string{"issue", "new", "demo", "--title", `Two "quoted" words`}},
	{`a\ b c`, []string{"a b", "c"}},
	{`'it'\''s'`, []string{"it's"}},
	{`"back\slash" "\\" "\$" "\` + "`" + `"`, []string{`back\slash`, `\`, `$`, "`"}},
	{`'$(x); |&<>'`, []string{"$(x); |&<>"}},
	{`'' x`, []string{"", "x"}},
	{`a""b`, []string{"ab"}},
	{"  spaced   out  ", []string{"spaced", "out"}},
	{"tab\tsep", []string{"tab", "sep"}},
	{"ümlaut 'fix #12'", []string{"ümlaut", "fix #12"}},
	{"glob* ~ #x", []string{"glob*", "~", "#x"}},
}

func TestSplitAccepted(t *testing.T) {
	for _, tc := range accepted {
		got, err := Split(tc.in)
		if err != nil {
			t.Errorf("Split(%q): %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Split(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestSplitAgreesWithSh checks the accepted cases against a real POSIX
// shell (dash), which is what users imagine at the other end.
func TestSplitAgreesWithSh(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	for _, tc := range accepted {
		if strings.ContainsAny(tc.in, "*~#") {
			continue // globbing, tilde and comments are the shell's, not quoting
		}
		out, err := exec.Command(sh, "-c", "set -- "+tc.in+"\n"+`for w in "$@"; do printf '%s\0' "$w"; done`).Output()
		if err != nil {
			t.Fatalf("sh on %q: %v", tc.in, err)
		}
		var shWords []string
		if len(out) > 0 {
			shWords = strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
		}
		if got, _ := Split(tc.in); !reflect.DeepEqual(got, shWords) {
			t.Errorf("Split(%q) = %q, sh gives %q", tc.in, got, shWords)
		}
	}
}

func TestSplitRefused(t *testing.T) {
	for _, tc := range []struct{ in, why string }{
		{"git-upload-pack 'demo'; rm -rf /", "shell syntax"},
		{"git-upload-pack $(id)", "shell syntax"},
		{"git-upload-pack `id`", "shell syntax"},
		{`git-upload-pack "$(id)"`, "shell syntax"},
		{"git-upload-pack \"`id`\"", "shell syntax"},
		{"git-upload-pack demo | sh", "shell syntax"},
		{"git-upload-pack demo && sh", "shell syntax"},
		{"git-upload-pack demo > /etc/passwd", "shell syntax"},
		{"git-upload-pack ${HOME}", "shell syntax"},
		{"git-upload-pack 'demo\nsh'", "newline"},
		{"git-upload-pack demo\nsh", "newline"},
		{"git-upload-pack demo\rsh", "newline"},
		{"git-upload-pack \"demo\nx\"", "newline"},
		{"git-upload-pack demo\x00sh", "NUL"},
		{"git-upload-pack 'demo\x00'", "NUL"},
		{"git-upload-pack \\\x00", "NUL"},
		{"git-upload-pack 'demo", "unbalanced single quote"},
		{`git-upload-pack "demo`, "unbalanced double quote"},
		{`git-upload-pack "demo\`, "unbalanced double quote"},
		{`git-upload-pack demo\`, "ends with a backslash"},
		{"x \x1b[31m", "control character"},
		{"x \xff", "UTF-8"},
		{strings.Repeat("a", MaxLen+1), "too long"},
		{"git-upload-pack " + strings.Repeat("a", 1<<20), "too long"},
		{strings.Repeat("a ", MaxWords+1), "too many words"},
	} {
		got, err := Split(tc.in)
		if err == nil {
			t.Errorf("Split(%.40q) = %q, want refusal", tc.in, got)
			continue
		}
		if fault.KindOf(err) != fault.Usage {
			t.Errorf("Split(%.40q): kind %v, want Usage", tc.in, fault.KindOf(err))
		}
		if msg := err.Error(); !strings.Contains(msg, tc.why) || strings.ContainsAny(msg, "\n\x00") {
			t.Errorf("Split(%.40q) error %q, want one line mentioning %q", tc.in, msg, tc.why)
		}
	}
}

func TestJoinRoundTrip(t *testing.T) {
	for _, w := range [][]string{{"a"}, {"it's", "two words", ""}, {`\`, `"`, "$(x)", "`"}} {
		got, err := Split(Join(w))
		if err != nil || !reflect.DeepEqual(got, w) {
			t.Errorf("Split(Join(%q)) = %q, %v", w, got, err)
		}
	}
}

// FuzzSplit checks that Split never panics, never returns a word holding a
// byte that it refuses, and that a split command survives Join and Split.
func FuzzSplit(f *testing.F) {
	for _, tc := range accepted {
		f.Add(tc.in)
	}
	for _, s := range []string{"git-upload-pack 'demo'; id", "a\\", "\"$(", "'\n'", "x\x00", `"a\"b"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := Split(s)
		if err != nil {
			if msg := err.Error(); strings.ContainsAny(msg, "\n\r\x00") {
				t.Fatalf("refusal message is not one line: %q", msg)
			}
			return
		}
		for _, w := range words {
			if strings.ContainsAny(w, "\x00\n\r") {
				t.Fatalf("Split(%q) gave word %q holding a refused byte", s, w)
			}
		}
		if strings.TrimSpace(s) != "" && len(words) == 0 {
			t.Fatalf("Split(%q) gave no words", s)
		}
		again, err := Split(Join(words))
		if err != nil {
			t.Fatalf("Split(Join(%q)): %v", words, err)
		}
		if len(again) != len(words) || (len(words) > 0 && !reflect.DeepEqual(again, words)) {
			t.Fatalf("round trip of %q: %q != %q", s, again, words)
		}
	})
}
