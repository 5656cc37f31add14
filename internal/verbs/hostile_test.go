package verbs

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/collab-forge/collab/internal/text"
)

// The payloads of the terminal-escape attack: a window title rewrite (OSC
// 0), a screen clear (CSI 2J), a clipboard write (OSC 52), C1's CSI and a
// lone carriage return that would hide what came before it.
const (
	osc0  = "\x1b]0;pwned\x07"
	csi2J = "\x1b[2J"
	osc52 = "\x1b]52;c;ZXZpbA==\x07"
	c1    = "\u009b31m"
	lone  = "hidden\rshown"
	evil  = osc0 + csi2J + osc52 + c1 + lone + "\x7f\x01"
)

// runIn is w.run with stdin.
func (w *patchWorld) runIn(principal, stdin string, words ...string) result {
	w.t.Helper()
	w.now = w.now.Add(time.Second)
	var out, errb bytes.Buffer
	now := w.now
	env := &Env{Root: w.root, DB: w.db, Principal: principal, Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb,
		Now: func() time.Time { return now }, URL: "http://forge.test"}
	code := Run(w.ctx, env, words)
	if code != 0 {
		w.t.Fatalf("%s: exit %d: %s", strings.Join(words, " "), code, errb.String())
	}
	return result{code, out.String(), errb.String()}
}

// terminalSafe fails when out holds anything a terminal would act on: a C0
// control but newline, tab and the CR of a CRLF, DEL, a C1 control, or a
// byte that is not UTF-8.
func terminalSafe(t *testing.T, what, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Errorf("%s: not UTF-8: %q", what, out)
	}
	for i, r := range out {
		if text.IsControl(r) && r != '\n' && r != '\t' && !(r == '\r' && strings.HasPrefix(out[i:], "\r\n")) {
			t.Errorf("%s: control %U at %d in %q", what, r, i, out)
			return
		}
	}
}

// Stored text that holds escape sequences (planted before titles refused
// them, through a body on stdin, a comment, a review, a file in a diff)
// reaches no terminal through a plain-text verb, and --json keeps every
// value exact.
func TestHostileTextIsShownHarmlessly(t *testing.T) {
	w := newPatchWorld(t)
	w.threeRevisions()
	w.exec("UPDATE patches SET title = ?, topic = ?, description = ? WHERE id = ?", "patch "+evil, "topic"+osc0, "desc "+evil, pid)
	w.runIn("bob", evil, "patch", "review", "demo", "1234abcd", "--comment", "--body", "-")
	w.runIn("bob", evil, "patch", "review", "demo", "1234abcd", "--comment", "--file", "a.txt", "--line", "3", "--body", "-")

	filed := w.runIn("alice", evil, "issue", "new", "demo", "--title", "plain", "--body", "-", "--json")
	var is struct{ ID string }
	if err := json.Unmarshal([]byte(filed.stdout), &is); err != nil {
		t.Fatal(err)
	}
	w.exec("UPDATE issues SET title = ? WHERE id = ?", "issue "+evil, is.ID)
	w.runIn("carol", evil, "issue", "comment", "demo", is.ID, "--body", "-")

	for _, line := range [][]string{
		{"issue", "list", "demo"},
		{"issue", "show", "demo", is.ID},
		{"patch", "list", "demo"},
		{"patch", "show", "demo", "1234abcd"},
		{"patch", "diff", "demo", "1234abcd"},
	} {
		out := w.runIn("carol", "", line...).stdout
		terminalSafe(t, strings.Join(line, " "), out)
		if !strings.Contains(out, `\x1b]0;pwned\x07`) && line[1] != "diff" {
			t.Errorf("%s does not show the planted text as escapes:\n%s", strings.Join(line, " "), out)
		}

		js := w.runIn("carol", "", append(line, "--json")...).stdout
		terminalSafe(t, strings.Join(line, " ")+" --json", js)
		var v any
		if err := json.Unmarshal([]byte(js), &v); err != nil {
			t.Fatalf("%s --json: %v", strings.Join(line, " "), err)
		}
	}

	// gerrit query (git-review's) writes its own formats: the text one is
	// neutralised, the JSON one escaped as --json is.
	out := w.runIn("carol", "", "gerrit", "query", "project:demo").stdout
	terminalSafe(t, "gerrit query", out)
	if !strings.Contains(out, `subject: patch \x1b]0;pwned\x07`) {
		t.Errorf("gerrit query does not show the planted title as escapes:\n%s", out)
	}
	out = w.runIn("carol", "", "gerrit", "query", "--format=JSON", "project:demo").stdout
	terminalSafe(t, "gerrit query --format=JSON", out)
	var change struct{ Subject string }
	if err := json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &change); err != nil || change.Subject != "patch "+evil {
		t.Errorf("gerrit query --format=JSON: %v, subject %q", err, change.Subject)
	}

	// JSON is exact: the stored values come back byte for byte.
	var d struct {
		Title    string
		Body     string
		Comments []struct{ Body string }
	}
	if err := json.Unmarshal([]byte(w.runIn("carol", "", "issue", "show", "demo", is.ID, "--json").stdout), &d); err != nil {
		t.Fatal(err)
	}
	if d.Title != "issue "+evil || d.Body != evil || len(d.Comments) != 1 || d.Comments[0].Body != evil {
		t.Fatalf("issue show --json is not exact: %+v", d)
	}
	var p struct {
		Title   string
		Reviews []struct{ Body string }
	}
	if err := json.Unmarshal([]byte(w.runIn("carol", "", "patch", "show", "demo", "1234abcd", "--json").stdout), &p); err != nil {
		t.Fatal(err)
	}
	if p.Title != "patch "+evil || len(p.Reviews) != 2 || p.Reviews[0].Body != evil {
		t.Fatalf("patch show --json is not exact: %+v", p)
	}

	// A refusal quoting a hostile value is one harmless line too.
	r := w.run("carol", "issue show demo "+osc0)
	terminalSafe(t, "refusal", r.stderr)
	if r.code != 2 || strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("refusal: exit %d %q", r.code, r.stderr)
	}
}

// A title with a control character is refused at input, and nothing is
// filed.
func TestTitleRefusesControls(t *testing.T) {
	w := newPatchWorld(t)
	for _, title := range []string{osc0, csi2J, osc52, c1} {
		w.refused("alice", "issue new demo --title "+strings.ReplaceAll(title, " ", ""), 2, "control character")
	}
	if out := w.ok("alice", "issue list demo --state all"); out != "" {
		t.Fatalf("a refused title filed an issue:\n%s", out)
	}
}

// issue show pages the comments (--limit, --after), so that a long issue
// costs one page per call; the page says where the next starts.
func TestIssueShowPagesComments(t *testing.T) {
	w := newPatchWorld(t)
	var is struct{ ID string }
	if err := json.Unmarshal([]byte(w.runIn("alice", "", "issue", "new", "demo", "--title", "Long", "--json").stdout), &is); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"one", "two", "three"} {
		w.runIn("bob", "", "issue", "comment", "demo", is.ID, "--body", b)
	}
	type page struct {
		Title        string
		Comments     []struct{ ID, Body string }
		CommentsNext *string `json:"comments_next"`
	}
	show := func(args ...string) page {
		var p page
		out := w.runIn("carol", "", append([]string{"issue", "show", "demo", is.ID, "--json"}, args...)...).stdout
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		return p
	}
	all := show()
	if all.Title != "Long" || len(all.Comments) != 3 || all.CommentsNext != nil {
		t.Fatalf("issue show: %+v", all)
	}
	p1 := show("--limit", "2")
	if len(p1.Comments) != 2 || p1.CommentsNext == nil || *p1.CommentsNext != p1.Comments[1].ID {
		t.Fatalf("page 1: %+v", p1)
	}
	p2 := show("--limit", "2", "--after", (*p1.CommentsNext)[:8])
	if len(p2.Comments) != 1 || p2.Comments[0].Body != "three" || p2.CommentsNext != nil {
		t.Fatalf("page 2: %+v", p2)
	}
	plain := w.runIn("carol", "", "issue", "show", "demo", is.ID, "--limit", "1").stdout
	if !strings.Contains(plain, "one") || strings.Contains(plain, "two") ||
		!strings.Contains(plain, "more comments follow: issue show demo "+is.ID+" --after "+all.Comments[0].ID) {
		t.Fatalf("plain page:\n%s", plain)
	}
	w.refused("carol", "issue show demo "+is.ID+" --limit 0", 2, "bad limit 0")
	w.refused("carol", "issue show demo "+is.ID+" --after ffff", 4, "no comment ffff")
}
