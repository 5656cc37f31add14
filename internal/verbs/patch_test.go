package verbs

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/forge/forgetest"
	"github.com/collab-forge/collab/internal/issues"
	"github.com/collab-forge/collab/internal/leases"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/store"
)

// patchWorld is a forge root with one repository "demo" whose history is
// built with real git, and patches recorded the way a push records them
// (patches.Create, patches.AddRevision), without the hooks.
type patchWorld struct {
	t    *testing.T
	ctx  context.Context
	root forge.Root
	db   *store.DB
	work string // a work tree whose origin is the bare repository
	bare string
	now  time.Time
}

func newPatchWorld(t *testing.T) *patchWorld {
	t.Helper()
	ctx, root, db := forgetest.New(t)
	w := &patchWorld{t: t, ctx: ctx, root: root, db: db, bare: filepath.Join(root.ReposDir(), "demo.git"),
		work: t.TempDir(), now: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
	w.git("", "init", "-q", "--bare", w.bare)
	w.git(w.work, "init", "-q", "-b", "main")
	w.git(w.work, "remote", "add", "origin", w.bare)
	w.exec("INSERT INTO repos(name, public, created_at) VALUES ('demo.git', 0, 'x')")
	for _, g := range [][2]string{{"alice", "write"}, {"bob", "write"}, {"carol", "read"}} {
		w.exec("INSERT INTO principals(name, created_at) VALUES (?, 'x')", g[0])
		w.exec("INSERT INTO grants(principal, repo, level) VALUES (?, 'demo.git', ?)", g[0], g[1])
	}
	w.exec("INSERT INTO principals(name, created_at) VALUES ('mallory', 'x')")
	return w
}

func (w *patchWorld) exec(q string, args ...any) {
	w.t.Helper()
	if err := w.db.Write(w.ctx, func(tx *sql.Tx) error { _, err := tx.ExecContext(w.ctx, q, args...); return err }); err != nil {
		w.t.Fatal(err)
	}
}

func (w *patchWorld) git(dir string, args ...string) string {
	w.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@example.com",
		"GIT_COMMITTER_NAME=A", "GIT_COMMITTER_EMAIL=a@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+w.work)
	out, err := cmd.CombinedOutput()
	if err != nil {
		w.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func (w *patchWorld) commit(msg string, files map[string]string) string {
	w.t.Helper()
	for name, body := range files {
		p := filepath.Join(w.work, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			w.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			w.t.Fatal(err)
		}
	}
	w.git(w.work, "add", "-A")
	w.git(w.work, "commit", "-q", "--allow-empty", "-m", msg)
	return w.git(w.work, "rev-parse", "HEAD")
}

// pushRevision stores commit in the bare repository (as a push would pin
// it) and records it as the patch's next revision.
func (w *patchWorld) pushRevision(id, title, commit, base, pusher string) {
	w.t.Helper()
	w.git(w.work, "push", "-q", "origin", commit+":refs/collab/patches/"+id+"/rev/"+commit)
	w.now = w.now.Add(time.Minute)
	err := w.db.Write(w.ctx, func(tx *sql.Tx) error {
		if _, ok, err := patches.Lookup(w.ctx, tx, "demo.git", id); err != nil {
			return err
		} else if !ok {
			if _, err := patches.Create(w.ctx, tx, patches.New{Repo: "demo.git", ID: id, Title: title, Author: pusher, Base: "main"}, w.now); err != nil {
				return err
			}
		}
		_, _, err := patches.AddRevision(w.ctx, tx, "demo.git", id, commit, base, pusher, w.now)
		return err
	})
	if err != nil {
		w.t.Fatal(err)
	}
}

type result struct {
	code           int
	stdout, stderr string
}

func (w *patchWorld) run(principal string, line string) result {
	w.t.Helper()
	w.now = w.now.Add(time.Second)
	var out, errb bytes.Buffer
	now := w.now
	env := &Env{Root: w.root, DB: w.db, Principal: principal, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Now: func() time.Time { return now }, URL: "http://forge.test"}
	code := Run(w.ctx, env, strings.Fields(line))
	return result{code, out.String(), errb.String()}
}

func (w *patchWorld) ok(principal, line string) string {
	w.t.Helper()
	r := w.run(principal, line)
	if r.code != 0 {
		w.t.Fatalf("%s: exit %d: %s%s", line, r.code, r.stderr, r.stdout)
	}
	return r.stdout
}

func (w *patchWorld) refused(principal, line string, code int, msg string) {
	w.t.Helper()
	r := w.run(principal, line)
	if r.code != code || !strings.Contains(r.stderr, msg) {
		w.t.Fatalf("%s: want exit %d with %q, got exit %d: %s%s", line, code, msg, r.code, r.stderr, r.stdout)
	}
	if strings.Count(strings.TrimRight(r.stderr, "\n"), "\n") != 0 {
		w.t.Fatalf("%s: refusal is not one line: %q", line, r.stderr)
	}
}

func lines(n int, change map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if s, ok := change[i]; ok {
			b.WriteString(s + "\n")
		} else {
			fmt.Fprintf(&b, "line %d\n", i)
		}
	}
	return b.String()
}

const pid = "1234abcd00000000000000000000000000000001"

// threeRevisions records the review story: revisions 1 and 2 on the first
// base, then the base branch moves and revision 3 is rebased onto it.
func (w *patchWorld) threeRevisions() {
	base1 := w.commit("base", map[string]string{"a.txt": lines(20, nil), "b.txt": lines(20, nil)})
	w.git(w.work, "push", "-q", "origin", "HEAD:refs/heads/main")
	w.git(w.work, "checkout", "-q", "-b", "topic")
	c1 := w.commit("author 1", map[string]string{"a.txt": lines(20, map[int]string{3: "author three"})})
	w.pushRevision(pid, "Fix a", c1, base1, "alice")
	w.git(w.work, "reset", "-q", "--hard", base1)
	c2 := w.commit("author 2", map[string]string{"a.txt": lines(20, map[int]string{3: "author three v2"})})
	w.pushRevision(pid, "Fix a", c2, base1, "alice")
	w.git(w.work, "checkout", "-q", "main")
	base2 := w.commit("base moves", map[string]string{"b.txt": lines(20, map[int]string{10: "base ten"})})
	w.git(w.work, "push", "-q", "origin", "HEAD:refs/heads/main")
	w.git(w.work, "checkout", "-q", "topic")
	w.git(w.work, "rebase", "-q", "main")
	c3 := w.commit("author 3", map[string]string{"a.txt": lines(20, map[int]string{3: "author three v2", 15: "author fifteen"}), "new.txt": "one\ntwo\n"})
	w.pushRevision(pid, "Fix a", c3, base2, "alice")
}

func TestPatchReviewStory(t *testing.T) {
	w := newPatchWorld(t)
	w.threeRevisions()

	// The interdiff 2→3 shows the author's change, not the base's.
	out := w.ok("bob", "patch diff demo 1234abcd --from 2 --revision 3")
	if !strings.Contains(out, "+author fifteen") || strings.Contains(out, "base ten") || strings.Contains(out, "b.txt") {
		t.Fatalf("interdiff 2→3:\n%s", out)
	}
	var dj struct {
		From      *int   `json:"from"`
		Revision  int    `json:"revision"`
		Diff      string `json:"diff"`
		Truncated bool   `json:"truncated"`
		Conflict  bool   `json:"conflict"`
	}
	if err := json.Unmarshal([]byte(w.ok("bob", "patch diff demo 1234abcd --from 1 --json")), &dj); err != nil {
		t.Fatal(err)
	}
	if dj.From == nil || *dj.From != 1 || dj.Revision != 3 || dj.Conflict || !strings.Contains(dj.Diff, "-author three\n") || strings.Contains(dj.Diff, "base ten") {
		t.Fatalf("interdiff 1→3 json: %+v", dj)
	}
	// A revision's own diff is base_commit..commit.
	out = w.ok("bob", "patch diff demo 1234abcd --revision 1")
	if !strings.Contains(out, "+author three") || strings.Contains(out, "base ten") {
		t.Fatalf("revision 1 diff:\n%s", out)
	}
	w.refused("bob", "patch diff demo 1234abcd --revision 9", 4, "no revision 9")

	// Inline comments are checked against the revision's own tree.
	w.refused("bob", "patch review demo 1234abcd --comment --revision 1 --file new.txt --line 1 --body x", 2, "file new.txt does not exist in revision 1")
	w.refused("bob", "patch review demo 1234abcd --comment --revision 1 --file a.txt --line 21 --body x", 2, "line 21 is past the end of a.txt in revision 1")
	w.refused("bob", "patch review demo 1234abcd --comment --file ../etc/passwd --line 1 --body x", 2, "outside the repository")
	w.refused("bob", "patch review demo 1234abcd --comment --line 1 --body x", 2, "--line needs --file")
	w.refused("bob", "patch review demo 1234abcd --approve --comment --body x", 2, "exactly one of")
	var n int
	if err := w.db.R().QueryRow("SELECT count(*) FROM reviews").Scan(&n); err != nil || n != 0 {
		t.Fatalf("refused reviews were recorded: %d %v", n, err)
	}

	w.ok("bob", "patch review demo 1234abcd --comment --revision 1 --file a.txt --line 3 --body why")
	w.ok("bob", "patch review demo 1234abcd --approve --revision 2 --body lgtm")
	w.ok("carol", "patch review demo 1234abcd --comment --file new.txt --line 2 --body nit")
	w.refused("carol", "patch review demo 1234abcd --approve --body ok", 5, "permission denied")
	w.refused("mallory", "patch review demo 1234abcd --comment --body hi", 4, "repository demo not found")
	w.ok("alice", "patch review demo 1234abcd --request-changes --body wait")

	var show struct {
		ID        string `json:"id"`
		State     string `json:"state"`
		Revisions []struct {
			Number     int    `json:"number"`
			Commit     string `json:"commit"`
			BaseCommit string `json:"base_commit"`
			Pusher     string `json:"pusher"`
		} `json:"revisions"`
		Reviews []struct {
			Revision int     `json:"revision"`
			Author   string  `json:"author"`
			Verdict  string  `json:"verdict"`
			File     *string `json:"file"`
			Line     *int    `json:"line"`
			Outdated bool    `json:"outdated"`
		} `json:"reviews"`
		Summary struct {
			Approvals      []string `json:"approvals"`
			ChangeRequests []string `json:"change_requests"`
			Stale          []struct {
				Author   string `json:"author"`
				Revision int    `json:"revision"`
			} `json:"stale"`
		} `json:"summary"`
		Merge    any `json:"merge"`
		Timeline []struct {
			Kind string `json:"kind"`
		} `json:"timeline"`
	}
	if err := json.Unmarshal([]byte(w.ok("carol", "patch show demo 1234 --json")), &show); err != nil {
		t.Fatal(err)
	}
	if show.ID != pid || len(show.Revisions) != 3 || show.Revisions[2].Pusher != "alice" || len(show.Reviews) != 4 || show.Merge != nil {
		t.Fatalf("show: %+v", show)
	}
	if r := show.Reviews[0]; r.File == nil || *r.File != "a.txt" || *r.Line != 3 || r.Revision != 1 || !r.Outdated {
		t.Fatalf("inline comment on revision 1 should stay there, outdated: %+v", r)
	}
	if r := show.Reviews[2]; r.Revision != 3 || r.Outdated {
		t.Fatalf("inline comment on the latest revision: %+v", r)
	}
	if s := show.Summary; len(s.Approvals) != 0 || fmt.Sprint(s.ChangeRequests) != "[alice]" || len(s.Stale) != 1 || s.Stale[0].Author != "bob" {
		t.Fatalf("summary: %+v", s)
	}
	text := w.ok("carol", "patch show demo 1234")
	for _, want := range []string{"a.txt:3 on revision 1 by bob", "(on an older revision)", "new.txt:2 on revision 3 by carol", "changes requested by alice", "1 stale vote"} {
		if !strings.Contains(text, want) {
			t.Errorf("show text lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "new.txt:2 on revision 3 by carol at "+"x (on an older") {
		t.Error("latest-revision comment marked older")
	}
	if err := w.db.R().QueryRow("SELECT count(*) FROM events WHERE event = 'review.posted'").Scan(&n); err != nil || n != 4 {
		t.Fatalf("review.posted events: %d %v", n, err)
	}

	// List: newest first with revision count and summary.
	out = w.ok("bob", "patch list demo")
	if !strings.Contains(out, pid+" open   rev 3  alice -> main  [changes requested by alice; 1 stale vote]  Fix a") {
		t.Fatalf("list:\n%s", out)
	}

	// Close, reopen, then a manual merge with a commit on main.
	w.refused("carol", "patch close demo 1234abcd", 5, "permission denied")
	w.ok("bob", "patch close demo 1234abcd")
	if out := w.ok("bob", "patch close demo 1234abcd"); !strings.Contains(out, "already closed") {
		t.Fatalf("second close: %s", out)
	}
	w.refused("bob", "patch review demo 1234abcd --approve --body late", 3, "is closed")
	if out := w.ok("bob", "patch list demo --state closed --json"); !strings.Contains(out, pid) {
		t.Fatalf("closed list: %s", out)
	}
	w.ok("bob", "patch reopen demo 1234abcd")
	topic := w.git(w.work, "rev-parse", "topic")
	w.refused("bob", "patch merge demo 1234abcd", 2, "--commit is required")
	w.refused("bob", "patch merge demo 1234abcd --commit "+topic, 3, "not reachable from branch main")
	w.refused("bob", "patch merge demo 1234abcd --commit --upload-pack=x", 2, "bad commit")
	w.refused("bob", "patch merge demo 1234abcd --commit ffffffffffff", 4, "no commit")
	w.git(w.work, "push", "-q", "origin", "topic:refs/heads/main")
	w.ok("bob", "patch merge demo 1234abcd --commit "+topic[:10])
	if out := w.ok("bob", "patch merge demo 1234abcd --commit "+topic); !strings.Contains(out, "was already merged: "+topic) {
		t.Fatalf("repeated merge: %s", out)
	}
	w.refused("bob", "patch merge demo 1234abcd --commit "+w.git(w.work, "rev-parse", "main~1"), 3, "already merged ("+topic)
	w.refused("bob", "patch reopen demo 1234abcd", 3, "is merged")
	if err := json.Unmarshal([]byte(w.ok("bob", "patch show demo 1234abcd --json")), &show); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range show.Timeline {
		kinds = append(kinds, e.Kind)
	}
	if got := strings.Join(kinds, " "); got != "revision revision revision comment review comment review closed reopened merged" {
		t.Fatalf("timeline: %s", got)
	}
	if m, ok := show.Merge.(map[string]any); !ok || m["commit"] != topic || m["branch"] != "main" || m["by"] != "bob" {
		t.Fatalf("merge record: %+v", show.Merge)
	}
}

func TestPatchIDs(t *testing.T) {
	w := newPatchWorld(t)
	base := w.commit("base", map[string]string{"a.txt": "a\n"})
	w.git(w.work, "push", "-q", "origin", "HEAD:refs/heads/main")
	c := w.commit("x", map[string]string{"a.txt": "b\n"})
	w.pushRevision("abcd111100000000000000000000000000000000", "one", c, base, "alice")
	w.pushRevision("abcd222200000000000000000000000000000000", "two", c, base, "alice")
	for _, verb := range []string{"show", "diff", "close"} {
		w.refused("bob", "patch "+verb+" demo ffff0000", 4, "no patch ffff0000")
		w.refused("bob", "patch "+verb+" demo xyz-not-hex", 2, "bad id")
		w.refused("bob", "patch "+verb+" demo abcd", 2, "ambiguous patch id abcd: candidates abcd111100000000000000000000000000000000 abcd222200000000000000000000000000000000")
	}
	r := w.run("bob", "patch show demo abcd --json")
	var refusal struct {
		Error      string   `json:"error"`
		Candidates []string `json:"candidates"`
	}
	if r.code != 2 || json.Unmarshal([]byte(r.stdout), &refusal) != nil || len(refusal.Candidates) != 2 {
		t.Fatalf("ambiguous --json: %d %q", r.code, r.stdout)
	}
	w.refused("bob", "patch show nosuch abcd1111", 4, "repository nosuch not found")
	w.refused("bob", "patch list demo --state weird", 2, "bad state")
	// Flags after positional arguments, and --json everywhere.
	var list []map[string]any
	if err := json.Unmarshal([]byte(w.ok("bob", "patch list demo --json --state all")), &list); err != nil || len(list) != 2 || list[0]["id"] != "abcd222200000000000000000000000000000000" {
		t.Fatalf("list newest first: %v %v", list, err)
	}
}

func TestReviewLeaseToken(t *testing.T) {
	w := newPatchWorld(t)
	base := w.commit("base", map[string]string{"a.txt": "a\n"})
	w.git(w.work, "push", "-q", "origin", "HEAD:refs/heads/main")
	c := w.commit("x", map[string]string{"a.txt": "b\n"})
	w.pushRevision(pid, "one", c, base, "alice")
	w.refused("bob", "patch review demo 1234abcd --approve --body x --lease-token 1", 2, "links none; give --lease-token ISSUE:1")
	w.refused("bob", "patch review demo 1234abcd --approve --body x --lease-token one", 2, "bad lease token")

	var is1, is2 issues.Issue
	var lease leases.Lease
	err := w.db.Write(w.ctx, func(tx *sql.Tx) error {
		var err error
		if is1, err = issues.New(w.ctx, tx, "demo.git", "alice", "first", "", w.now); err != nil {
			return err
		}
		if is2, err = issues.New(w.ctx, tx, "demo.git", "alice", "second", "", w.now); err != nil {
			return err
		}
		if _, err := patches.LinkIssue(w.ctx, tx, "demo.git", pid, is1.ID); err != nil {
			return err
		}
		lease, err = leases.Acquire(w.ctx, tx, "demo.git", is1.ID, "bob", time.Hour, false, w.now)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	w.refused("bob", fmt.Sprintf("patch review demo 1234abcd --approve --body x --lease-token %d", lease.Token+1), 3, "stale lease token")
	w.refused("alice", fmt.Sprintf("patch review demo 1234abcd --approve --body x --lease-token %d", lease.Token), 3, "stale lease token")
	w.ok("bob", fmt.Sprintf("patch review demo 1234abcd --approve --body x --lease-token %d", lease.Token))
	w.ok("bob", fmt.Sprintf("patch review demo 1234abcd --comment --body y --lease-token %s:%d", is1.ID[:8], lease.Token))
	w.refused("bob", fmt.Sprintf("patch review demo 1234abcd --comment --body y --lease-token %s:%d", is2.ID[:8], lease.Token), 3, "no live lease")

	err = w.db.Write(w.ctx, func(tx *sql.Tx) error {
		_, err := patches.LinkIssue(w.ctx, tx, "demo.git", pid, is2.ID)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	w.refused("bob", fmt.Sprintf("patch review demo 1234abcd --approve --body x --lease-token %d", lease.Token), 2, "links 2 issues")
}
