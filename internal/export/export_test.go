package export

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/issues"
	"github.com/collab-forge/collab/internal/leases"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/store"
)

const repoKey = "demo.git"

// testNow is before every expiry the fixtures write.
var testNow = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// fixture is a forge database, the bare repository the export writes
// into, and the forge key.
type fixture struct {
	t   *testing.T
	ctx context.Context
	db  *store.DB
	git string
	key ed25519.PrivateKey
	x   *Exporter
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(dir, "collab.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, ctx: ctx, db: db, git: filepath.Join(dir, "demo.git"), key: key}
	f.x = &Exporter{DB: db, Key: key}
	run(t, "", "git", "init", "-q", "--bare", f.git)
	return f
}

func run(t *testing.T, dir string, name string, args ...string) string {
	t.Helper()
	c := exec.Command(name, args...)
	c.Dir = dir
	c.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir(),
		"GIT_AUTHOR_NAME=Mallory", "GIT_AUTHOR_EMAIL=m@example.com", "GIT_COMMITTER_NAME=Mallory", "GIT_COMMITTER_EMAIL=m@example.com")
	out, err := c.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr)
	}
	return string(out)
}

func (f *fixture) exec(query string, args ...any) {
	f.t.Helper()
	err := f.db.Write(f.ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(f.ctx, query, args...)
		return err
	})
	if err != nil {
		f.t.Fatalf("%s: %v", query, err)
	}
}

func ptr[T any](v T) *T { return &v }

// timeText is a nullable domain time as the record writes it.
func timeText(t *store.Time) *string {
	if t == nil {
		return nil
	}
	return ptr(t.String())
}

func ts(n int) string { return fmt.Sprintf("2026-11-29T10:%02d:%02d.000Z", n/60, n%60) }

func hexID(n int) string { return fmt.Sprintf("%040x", 0xabc000+n) }

// want is what the test put into the database, in the export's own shapes.
type want struct {
	issues   map[string]Issue
	comments map[string][]Comment
	tenures  map[string][]Tenure
	patches  map[string]Patch
	revs     map[string][]Revision
	reviews  map[string][]Review
	states   map[string][]StateChange
}

func (f *fixture) addIssue(w *want, n int, state string) string {
	id := hexID(n)
	i := Issue{ID: id, Repo: repoKey, Title: fmt.Sprintf("Issue <%d> & \"quotes\"", n), Body: "line one\nline two ✓",
		State: state, Author: "ada", CreatedAt: ts(n), UpdatedAt: ts(n + 1), Labels: []string{}, Patches: []string{}}
	if state == "closed" {
		i.ClosedAt = ptr(ts(n + 1))
	}
	f.exec(`INSERT INTO issues(repo, id, title, body, state, author, created_at, updated_at, closed_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, i.Repo, i.ID, i.Title, i.Body, i.State, i.Author, i.CreatedAt, i.UpdatedAt, i.ClosedAt)
	w.issues[id] = i
	return id
}

func (f *fixture) addComment(w *want, issue string, n int) {
	c := Comment{ID: hexID(1000 + n), Author: "bob", Body: fmt.Sprintf("comment %d\n\n```go\nx := 1\n```", n), CreatedAt: ts(n + 10)}
	f.exec(`INSERT INTO comments(repo, issue_id, id, author, body, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
		repoKey, issue, c.ID, c.Author, c.Body, c.CreatedAt)
	w.comments[issue] = append(w.comments[issue], c)
}

// addLabels labels an issue as issues.EditLabels does (kept sorted).
func (f *fixture) addLabels(w *want, issue string, ls ...string) {
	for _, l := range ls {
		f.exec(`INSERT INTO issue_labels(repo, label, seq, open)
			SELECT repo, ?, seq, state = 'open' FROM issues WHERE repo = ? AND id = ?`, l, repoKey, issue)
	}
	i := w.issues[issue]
	i.Labels = append(i.Labels, ls...)
	sort.Strings(i.Labels)
	w.issues[issue] = i
}

func (f *fixture) addTenure(w *want, issue string, tok int64, ended bool) {
	t := Tenure{Token: tok, Holder: "agent-1", AcquiredAt: ts(int(tok) + 20), ExpiresAt: ptr(ts(int(tok) + 50))}
	if ended {
		t.EndedAt, t.EndReason = ptr(ts(int(tok)+30)), ptr("released")
	}
	f.exec(`INSERT INTO tenures(repo, issue_id, token, holder, acquired_at, expires_at, ended_at, end_reason)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, repoKey, issue, t.Token, t.Holder, t.AcquiredAt, t.ExpiresAt, t.EndedAt, t.EndReason)
	w.tenures[issue] = append(w.tenures[issue], t)
}

func (f *fixture) addPatch(w *want, n int, fixes string, merged bool) string {
	id := hexID(2000 + n)
	p := Patch{ID: id, Repo: repoKey, Title: fmt.Sprintf("Patch %d", n), Description: "does things", Topic: "t",
		State: "open", Author: "ada", Base: "main", CreatedAt: ts(n), UpdatedAt: ts(n + 2), Issues: []string{}}
	var mb, mc, mby, mat any
	if merged {
		p.State = "merged"
		p.Merge = &Merge{Branch: "main", Commit: strings.Repeat("c", 40), By: "bob", At: ts(n + 3)}
		mb, mc, mby, mat = p.Merge.Branch, p.Merge.Commit, p.Merge.By, p.Merge.At
		for _, e := range []StateChange{{Kind: "closed", Actor: "ada", At: ts(n + 1)}, {Kind: "reopened", Actor: "ada", At: ts(n + 2)},
			{Kind: "merged", Actor: "bob", At: ts(n + 3)}} {
			f.exec(`INSERT INTO patch_events(repo, patch_id, kind, actor, at) VALUES (?, ?, ?, ?, ?)`, repoKey, id, e.Kind, e.Actor, e.At)
			w.states[id] = append(w.states[id], e)
		}
	}
	f.exec(`INSERT INTO patches(repo, id, title, description, topic, draft, state, author, base, created_at, updated_at,
		merged_branch, merged_commit, merged_by, merged_at) VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		repoKey, id, p.Title, p.Description, p.Topic, p.State, p.Author, p.Base, p.CreatedAt, p.UpdatedAt, mb, mc, mby, mat)
	for r := 1; r <= 2; r++ {
		v := Revision{Number: int64(r), Commit: strings.Repeat(fmt.Sprint(r), 40), BaseCommit: strings.Repeat("b", 40),
			Pusher: "ada", CreatedAt: ts(n + r)}
		f.exec(`INSERT INTO revisions(repo, patch_id, number, commit_oid, base_commit, pusher, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, repoKey, id, v.Number, v.Commit, v.BaseCommit, v.Pusher, v.CreatedAt)
		w.revs[id] = append(w.revs[id], v)
	}
	for _, v := range []Review{
		{ID: hexID(3000 + n), Revision: 1, Author: "bob", Verdict: "request-changes", Body: "fix this", CreatedAt: ts(n + 4)},
		{ID: hexID(3100 + n), Revision: 2, Author: "bob", Verdict: "comment", Body: "nit", File: ptr("a/b.go"), Line: ptr(int64(7)), CreatedAt: ts(n + 5)},
	} {
		f.exec(`INSERT INTO reviews(repo, patch_id, id, revision, author, verdict, body, file, line, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, repoKey, id, v.ID, v.Revision, v.Author, v.Verdict, v.Body, v.File, v.Line, v.CreatedAt)
		w.reviews[id] = append(w.reviews[id], v)
	}
	if fixes != "" {
		f.exec(`INSERT INTO patch_issues(repo, patch_id, issue_id) VALUES (?, ?, ?)`, repoKey, id, fixes)
		p.Issues = []string{fixes}
		i := w.issues[fixes]
		i.Patches = append(i.Patches, id)
		w.issues[fixes] = i
	}
	w.patches[id] = p
	return id
}

// populate fills the database with a small forge's worth of records.
func (f *fixture) populate() (*want, []string) {
	w := &want{issues: map[string]Issue{}, comments: map[string][]Comment{}, tenures: map[string][]Tenure{},
		patches: map[string]Patch{}, revs: map[string][]Revision{}, reviews: map[string][]Review{},
		states: map[string][]StateChange{}}
	a := f.addIssue(w, 1, "open")
	b := f.addIssue(w, 2, "closed")
	c := f.addIssue(w, 3, "open") // no comments, no tenures, no labels
	f.addLabels(w, a, "ready", "bug")
	f.addLabels(w, b, "prio:high")
	f.addComment(w, a, 1)
	f.addComment(w, a, 2)
	f.addComment(w, b, 3)
	f.addTenure(w, a, 1, true)
	f.addTenure(w, a, 2, false)
	f.addTenure(w, b, 1, true)
	p := f.addPatch(w, 10, b, true)
	q := f.addPatch(w, 11, "", false)
	return w, []string{a, b, c, p, q}
}

// clone fetches refs/collab/* from the export into a fresh repository, as
// a reader would.
func clone(t *testing.T, src string) string {
	dst := filepath.Join(t.TempDir(), "clone")
	run(t, "", "git", "init", "-q", dst)
	run(t, dst, "git", "fetch", "-q", src, "+refs/collab/*:refs/collab/*")
	return dst
}

// readBack reads every record from the clone with stock git alone.
func readBack(t *testing.T, dir string) *want {
	got := &want{issues: map[string]Issue{}, comments: map[string][]Comment{}, tenures: map[string][]Tenure{},
		patches: map[string]Patch{}, revs: map[string][]Revision{}, reviews: map[string][]Review{},
		states: map[string][]StateChange{}}
	for _, ref := range strings.Fields(run(t, dir, "git", "for-each-ref", "--format=%(refname)", "refs/collab/")) {
		id, _ := recordOf(ref)
		paths := strings.Fields(run(t, dir, "git", "ls-tree", "-r", "--name-only", ref))
		sort.Strings(paths)
		for _, p := range paths {
			data := run(t, dir, "git", "show", ref+":"+p)
			dec := func(v any) {
				d := json.NewDecoder(strings.NewReader(data))
				d.DisallowUnknownFields()
				if err := d.Decode(v); err != nil {
					t.Fatalf("%s:%s: %v", ref, p, err)
				}
			}
			switch dir, _, _ := strings.Cut(p, "/"); dir {
			case IssueFile:
				var v Issue
				dec(&v)
				got.issues[id] = v
			case PatchFile:
				var v Patch
				dec(&v)
				got.patches[id] = v
			case CommentsDir:
				var v Comment
				dec(&v)
				got.comments[id] = append(got.comments[id], v)
			case TenuresDir:
				var v Tenure
				dec(&v)
				got.tenures[id] = append(got.tenures[id], v)
			case RevisionDir:
				var v Revision
				dec(&v)
				got.revs[id] = append(got.revs[id], v)
			case ReviewsDir:
				var v Review
				dec(&v)
				got.reviews[id] = append(got.reviews[id], v)
			case StatesDir:
				var v StateChange
				dec(&v)
				got.states[id] = append(got.states[id], v)
			default:
				t.Errorf("%s: unexpected file %s", ref, p)
			}
		}
	}
	return got
}

func refs(t *testing.T, dir string) string {
	return run(t, dir, "git", "for-each-ref", "--format=%(objectname) %(refname)", "refs/collab/")
}

func TestExportRoundTrip(t *testing.T) {
	f := newFixture(t)
	w, recIDs := f.populate()
	res, err := f.x.Export(f.ctx, repoKey, f.git, testNow)
	if err != nil {
		t.Fatal(err)
	}
	if res.Records != len(recIDs) || len(res.Updated) != len(recIDs) {
		t.Fatalf("export: %+v, want %d records updated", res, len(recIDs))
	}
	dir := clone(t, f.git)
	got := readBack(t, dir)
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"issues", got.issues, w.issues},
		{"comments", got.comments, w.comments},
		{"tenures", got.tenures, w.tenures},
		{"patches", got.patches, w.patches},
		{"revisions", got.revs, w.revs},
		{"reviews", got.reviews, w.reviews},
		{"state changes", got.states, w.states},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			gj, _ := json.MarshalIndent(c.got, "", " ")
			wj, _ := json.MarshalIndent(c.want, "", " ")
			t.Errorf("%s read back from the clone differ from the database:\ngot  %s\nwant %s", c.name, gj, wj)
		}
	}

	// The patch records agree with the forge's own read API.
	for id, p := range got.patches {
		db, err := patches.Get(f.ctx, f.db.R(), repoKey, id)
		if err != nil {
			t.Fatal(err)
		}
		if p.Title != db.Title || p.State != string(db.State) || p.Author != db.Author || p.Base != db.Base ||
			p.Description != db.Description || p.Topic != db.Topic || p.CreatedAt != db.CreatedAt.String() ||
			!reflect.DeepEqual(p.Issues, db.Issues) {
			t.Errorf("patch %s: export %+v, patches.Get %+v", id, p, db)
		}
		if (p.Merge == nil) != (db.Merge == nil) || p.Merge != nil && (p.Merge.Commit != db.Merge.Commit ||
			p.Merge.Branch != db.Merge.Branch || p.Merge.By != db.Merge.By || p.Merge.At != db.Merge.At.String()) {
			t.Errorf("patch %s merge: export %+v, patches.Get %+v", id, p.Merge, db.Merge)
		}
		if len(got.revs[id]) != len(db.Revisions) || len(got.reviews[id]) != len(db.Reviews) {
			t.Fatalf("patch %s: %d revisions, %d reviews; database %d, %d", id,
				len(got.revs[id]), len(got.reviews[id]), len(db.Revisions), len(db.Reviews))
		}
		for i, r := range db.Revisions {
			e := got.revs[id][i]
			if int(e.Number) != r.Number || e.Commit != r.Commit || e.BaseCommit != r.BaseCommit || e.Pusher != r.Pusher || e.CreatedAt != r.CreatedAt.String() {
				t.Errorf("patch %s revision %d: export %+v, database %+v", id, i+1, e, r)
			}
		}
		for i, r := range db.Reviews {
			e := got.reviews[id][i]
			if e.ID != r.ID || int(e.Revision) != r.Revision || e.Author != r.Author || e.Verdict != r.Verdict ||
				e.Body != r.Body || !reflect.DeepEqual(e.File, r.File) || (e.Line == nil) != (r.Line == nil) ||
				e.Line != nil && int(*e.Line) != *r.Line {
				t.Errorf("patch %s review %d: export %+v, database %+v", id, i+1, e, r)
			}
		}
	}

	// Every commit is signed by the forge key: our verifier and stock git agree.
	rep, err := Verify(f.ctx, filepath.Join(dir, ".git"), f.key.Public().(ed25519.PublicKey))
	if err != nil || !rep.OK() || rep.Refs != len(recIDs) || rep.Commits != len(recIDs) {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
	signers := allowedSignersFile(t, f.key)
	for _, ref := range strings.Fields(run(t, dir, "git", "for-each-ref", "--format=%(refname)", "refs/collab/")) {
		run(t, dir, "git", "-c", "gpg.ssh.allowedSignersFile="+signers, "verify-commit", ref)
	}
}

func allowedSignersFile(t *testing.T, key ed25519.PrivateKey) string {
	line, err := AllowedSigners(key.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "allowed_signers")
	if err := os.WriteFile(p, []byte(line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestExportIsIdempotentAndIncremental(t *testing.T) {
	f := newFixture(t)
	w, ids := f.populate()
	if _, err := f.x.Export(f.ctx, repoKey, f.git, testNow); err != nil {
		t.Fatal(err)
	}
	before := refs(t, f.git)
	objects := run(t, f.git, "git", "count-objects", "-v")

	res, err := f.x.Export(f.ctx, repoKey, f.git, testNow)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Updated) != 0 || res.Objects != 0 {
		t.Fatalf("second export changed something: %+v", res)
	}
	if after := refs(t, f.git); after != before {
		t.Fatalf("refs moved on a no-op export:\n%s\n%s", before, after)
	}
	if o := run(t, f.git, "git", "count-objects", "-v"); o != objects {
		t.Fatalf("objects written on a no-op export:\n%s\n%s", objects, o)
	}

	// One new comment: exactly one new commit, on that issue's ref, adding
	// exactly one file.
	issue := ids[0]
	ref := IssueRef(issue)
	old := strings.TrimSpace(run(t, f.git, "git", "rev-parse", ref))
	f.addComment(w, issue, 9)
	res, err = f.x.Export(f.ctx, repoKey, f.git, testNow)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Updated, []string{ref}) {
		t.Fatalf("after one comment, updated %v, want [%s]", res.Updated, ref)
	}
	if p := strings.TrimSpace(run(t, f.git, "git", "rev-parse", ref+"^")); p != old {
		t.Fatalf("new commit's parent %s, want the old tip %s", p, old)
	}
	if n := strings.TrimSpace(run(t, f.git, "git", "rev-list", "--count", ref)); n != "2" {
		t.Fatalf("%s has %s commits, want 2", ref, n)
	}
	diff := strings.TrimSpace(run(t, f.git, "git", "diff", "--name-status", old, ref))
	if want := "A\tcomments/000003-" + hexID(1009) + ".json"; diff != want {
		t.Fatalf("diff of the new commit: %q, want %q", diff, want)
	}
	// Only the new comment, the two trees it changed and the commit were
	// written; the unchanged comments were already there.
	if res.Objects != 4 {
		t.Fatalf("incremental export wrote %d objects, want 4", res.Objects)
	}
	// And the whole history still verifies.
	rep, err := Verify(f.ctx, f.git, f.key.Public().(ed25519.PublicKey))
	if err != nil || !rep.OK() || rep.Commits != len(ids)+1 {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
}

func TestExportIsDeterministic(t *testing.T) {
	f := newFixture(t)
	f.populate()
	if _, err := f.x.Export(f.ctx, repoKey, f.git, testNow); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "other.git")
	run(t, "", "git", "init", "-q", "--bare", other)
	if _, err := f.x.Export(f.ctx, repoKey, other, testNow); err != nil {
		t.Fatal(err)
	}
	if a, b := refs(t, f.git), refs(t, other); a != b {
		t.Fatalf("the same rows gave different commits:\n%s\n%s", a, b)
	}
}

func TestTamperedExportFailsVerification(t *testing.T) {
	pub := func(f *fixture) ed25519.PublicKey { return f.key.Public().(ed25519.PublicKey) }
	cases := []struct {
		name   string
		tamper func(t *testing.T, dir, ref string)
		want   string
	}{
		{"content changed, signature kept", func(t *testing.T, dir, ref string) {
			// Rewrite issue.json and graft the old signature onto a commit of
			// the new tree.
			blob := strings.TrimSpace(run(t, dir, "sh", "-c", "git show "+ref+":issue.json | sed s/open/closed/ | git hash-object -w --stdin"))
			tree := strings.TrimSpace(run(t, dir, "sh", "-c",
				"git ls-tree "+ref+" | sed 's/[0-9a-f]\\{40\\}\\tissue.json/"+blob+"\\tissue.json/' | git mktree"))
			raw := run(t, dir, "git", "cat-file", "commit", ref)
			forged := "tree " + tree + raw[len("tree ")+40:]
			c := hashObject(t, dir, "commit", forged)
			run(t, dir, "git", "update-ref", ref, c)
		}, "does not match the content"},
		{"unsigned commit on top", func(t *testing.T, dir, ref string) {
			c := strings.TrimSpace(run(t, dir, "git", "commit-tree", "-p", ref, "-m", "forged", ref+"^{tree}"))
			run(t, dir, "git", "update-ref", ref, c)
		}, "not signed"},
		{"signed by another key", func(t *testing.T, dir, ref string) {
			_, other, _ := ed25519.GenerateKey(rand.Reader)
			raw := run(t, dir, "git", "cat-file", "commit", ref)
			payload, _ := splitSignature([]byte(raw))
			sig, _ := sshSign(other, payload)
			run(t, dir, "git", "update-ref", ref, hashObject(t, dir, "commit", string(withSignature(payload, sig))))
		}, "another key"},
		{"history rewritten under a valid tip", func(t *testing.T, dir, ref string) {
			// A signed tip whose parent is forged: the walk must reach it.
			c := strings.TrimSpace(run(t, dir, "git", "commit-tree", "-m", "forged root", ref+"^{tree}"))
			raw := run(t, dir, "git", "cat-file", "commit", ref)
			payload := commitPayload(commitTree([]byte(raw)), c, 1, "x\n")
			sig, _ := sshSign(signingKey, payload)
			run(t, dir, "git", "update-ref", ref, hashObject(t, dir, "commit", string(withSignature(payload, sig))))
		}, "not signed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			f.key = signingKey
			f.x.Key = signingKey
			_, ids := f.populate()
			if _, err := f.x.Export(f.ctx, repoKey, f.git, testNow); err != nil {
				t.Fatal(err)
			}
			dir := clone(t, f.git)
			ref := IssueRef(ids[0])
			c.tamper(t, dir, ref)
			rep, err := Verify(f.ctx, filepath.Join(dir, ".git"), pub(f))
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK() || len(rep.Problems) != 1 || !strings.HasPrefix(rep.Problems[0], ref+": ") ||
				!strings.Contains(rep.Problems[0], c.want) {
				t.Fatalf("verify after tampering: %+v, want one problem on %s saying %q", rep, ref, c.want)
			}
			// Stock git agrees about the tip where it can tell.
			if c.name != "history rewritten under a valid tip" {
				cmd := exec.Command("git", "-c", "gpg.ssh.allowedSignersFile="+allowedSignersFile(t, f.key), "verify-commit", ref)
				cmd.Dir = dir
				if out, err := cmd.CombinedOutput(); err == nil {
					t.Fatalf("git verify-commit accepted a tampered tip:\n%s", out)
				}
			}
		})
	}
}

// signingKey is fixed so the tamper cases can sign with the forge's key.
var signingKey = func() ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed([]byte("collab export test key 32 bytes!"))
}()

func hashObject(t *testing.T, dir, typ, content string) string {
	t.Helper()
	c := exec.Command("git", "hash-object", "-t", typ, "-w", "--stdin")
	c.Dir = dir
	c.Stdin = strings.NewReader(content)
	out, err := c.Output()
	if err != nil {
		t.Fatalf("hash-object: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func TestRecordKeysAreSorted(t *testing.T) {
	for _, v := range []any{Issue{}, Comment{}, Tenure{}, Patch{}, Merge{}, Revision{}, Review{}, StateChange{}} {
		typ := reflect.TypeOf(v)
		var names []string
		for i := 0; i < typ.NumField(); i++ {
			names = append(names, strings.Split(typ.Field(i).Tag.Get("json"), ",")[0])
		}
		if !sort.StringsAreSorted(names) {
			t.Errorf("%s: JSON keys %v are not in sorted order", typ.Name(), names)
		}
	}
}

func TestBuildTreeMatchesGit(t *testing.T) {
	dir := t.TempDir()
	run(t, "", "git", "init", "-q", "--bare", dir)
	files := []file{
		{"issue.json", []byte("{}\n")},
		{"comments/000002-b.json", []byte("2\n")},
		{"comments/000001-a.json", []byte("1\n")},
		{"comments.json", []byte("sorts before comments/\n")},
		{"tenures/000001.json", []byte("t\n")},
	}
	oid, objs := buildTree(files)
	for _, o := range objs {
		if got := hashObject(t, dir, typeNames[o.typ], string(o.data)); got != o.oid {
			t.Fatalf("%s object: git says %s, we say %s", typeNames[o.typ], got, o.oid)
		}
	}
	listing := run(t, dir, "git", "ls-tree", "-r", "--name-only", oid)
	if want := "comments.json\ncomments/000001-a.json\ncomments/000002-b.json\nissue.json\ntenures/000001.json\n"; listing != want {
		t.Fatalf("tree lists\n%s\nwant\n%s", listing, want)
	}
}

func TestSignatureRoundTrip(t *testing.T) {
	msg := []byte("tree x\n\nhello\n")
	sig, err := sshSign(signingKey, msg)
	if err != nil {
		t.Fatal(err)
	}
	pub := signingKey.Public().(ed25519.PublicKey)
	if err := sshVerify(pub, msg, sig); err != nil {
		t.Fatalf("own signature: %v", err)
	}
	if err := sshVerify(pub, append(msg, 'x'), sig); err == nil {
		t.Fatal("signature of other content accepted")
	}
	other, _, _ := ed25519.GenerateKey(rand.Reader)
	if err := sshVerify(other, msg, sig); err == nil {
		t.Fatal("signature accepted for another key")
	}
	// ssh-keygen, which git runs, accepts it too.
	dir := t.TempDir()
	line, _ := AllowedSigners(pub)
	os.WriteFile(filepath.Join(dir, "signers"), []byte(line+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "msg.sig"), []byte(sig), 0o644)
	c := exec.Command("ssh-keygen", "-Y", "verify", "-f", filepath.Join(dir, "signers"), "-I", committerEmail,
		"-n", "git", "-s", filepath.Join(dir, "msg.sig"))
	c.Stdin = strings.NewReader(string(msg))
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen -Y verify: %v\n%s", err, out)
	}
}

func TestSplitSignatureInvertsWithSignature(t *testing.T) {
	payload := commitPayload(strings.Repeat("a", 40), strings.Repeat("b", 40), 1700000000, "subject\n\nbody\n")
	sig, _ := sshSign(signingKey, payload)
	p, s := splitSignature(withSignature(payload, sig))
	if string(p) != string(payload) || s != sig {
		t.Fatalf("split gave\n%q\n%q", p, s)
	}
}

// TestExportMatchesTheForgesReaders writes records through the forge's own
// domain code and checks the export against what issue show and patch show
// read from the database.
func TestExportMatchesTheForgesReaders(t *testing.T) {
	f := newFixture(t)
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	var a, b issues.Issue
	const patchID = "feedfacefeedfacefeedfacefeedfacefeedface"
	err := f.db.Write(f.ctx, func(tx *sql.Tx) error {
		var err error
		steps := []func() error{
			func() error {
				a, err = issues.New(f.ctx, tx, repoKey, "ada", "Crash on <start>", "It & breaks\n", at(0))
				return err
			},
			func() error { b, err = issues.New(f.ctx, tx, repoKey, "bob", "Second", "", at(1)); return err },
			func() error { _, err = issues.AddComment(f.ctx, tx, repoKey, a.ID, "bob", "me too", at(2)); return err },
			func() error {
				_, _, err = issues.EditLabels(f.ctx, tx, repoKey, a.ID, []string{"ready", "bug"}, nil, "bob", at(2))
				return err
			},
			func() error { _, err = issues.AddComment(f.ctx, tx, repoKey, a.ID, "ada", "fixed?", at(3)); return err },
			func() error {
				_, err = leases.Acquire(f.ctx, tx, repoKey, a.ID, "agent-1", 10*time.Minute, false, at(4))
				return err
			},
			func() error { _, err = leases.Release(f.ctx, tx, repoKey, a.ID, "agent-1", false, at(5)); return err },
			// The merge below ends this one.
			func() error {
				_, err = leases.Acquire(f.ctx, tx, repoKey, a.ID, "agent-2", 0, false, at(6))
				return err
			},
			// This one runs out at 9:17 and is never swept.
			func() error {
				_, err = leases.Acquire(f.ctx, tx, repoKey, b.ID, "bob", 10*time.Minute, false, at(7))
				return err
			},
			func() error {
				_, _, err = issues.SetState(f.ctx, tx, repoKey, b.ID, issues.Closed, "bob", at(8))
				return err
			},
			func() error {
				_, err = patches.Create(f.ctx, tx, patches.New{Repo: repoKey, ID: patchID, Title: "Fix the crash",
					Description: "d", Author: "ada", Base: "main"}, at(9))
				return err
			},
			func() error {
				_, _, err = patches.AddRevision(f.ctx, tx, repoKey, patchID, strings.Repeat("1", 40), strings.Repeat("0", 39)+"f", "ada", at(9))
				return err
			},
			func() error {
				_, _, err = patches.AddRevision(f.ctx, tx, repoKey, patchID, strings.Repeat("2", 40), strings.Repeat("0", 39)+"f", "ada", at(11))
				return err
			},
			func() error { _, err = patches.LinkIssue(f.ctx, tx, repoKey, patchID, a.ID); return err },
			func() error {
				_, err = tx.ExecContext(f.ctx, `INSERT INTO reviews(repo, patch_id, id, revision, author, verdict, body, file, line, created_at)
					VALUES (?, ?, ?, 2, 'bob', 'approve', 'ok', 'main.go', 3, ?)`, repoKey, patchID, hexID(77), store.FormatTime(at(12)))
				return err
			},
			func() error {
				_, err = patches.RecordMerge(f.ctx, tx, repoKey, patchID, "main", strings.Repeat("2", 40), "bob", at(13))
				return err
			},
		}
		for i, s := range steps {
			if err := s(); err != nil {
				return fmt.Errorf("step %d: %w", i, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	now := at(30) // bob's tenure on b has run out, unswept
	if _, err := f.x.Export(f.ctx, repoKey, f.git, now); err != nil {
		t.Fatal(err)
	}
	got := readBack(t, filepath.Join(clone(t, f.git)))
	if len(got.issues) != 2 || len(got.patches) != 1 {
		t.Fatalf("read back %d issues, %d patches", len(got.issues), len(got.patches))
	}
	for _, id := range []string{a.ID, b.ID} {
		d, err := issues.Get(f.ctx, f.db.R(), repoKey, id, now)
		if err != nil {
			t.Fatal(err)
		}
		e := got.issues[id]
		if e.ID != d.ID || e.Repo != d.Repo || e.Title != d.Title || e.Body != d.Body || e.State != string(d.State) ||
			e.Author != d.Author || e.CreatedAt != d.CreatedAt.String() || e.UpdatedAt != d.UpdatedAt.String() ||
			!reflect.DeepEqual(e.ClosedAt, timeText(d.ClosedAt)) || !reflect.DeepEqual(e.Patches, d.Patches) ||
			!reflect.DeepEqual(e.Labels, d.Labels) {
			t.Errorf("issue %s: export %+v, issue show %+v", id, e, d.Issue)
		}
		if len(got.comments[id]) != len(d.Comments) {
			t.Fatalf("issue %s: %d comments exported, %d in the database", id, len(got.comments[id]), len(d.Comments))
		}
		for i, c := range d.Comments {
			if e := got.comments[id][i]; e != (Comment{ID: c.ID, Author: c.Author, Body: c.Body, CreatedAt: c.CreatedAt.String()}) {
				t.Errorf("issue %s comment %d: export %+v, database %+v", id, i, e, c)
			}
		}
		if len(got.tenures[id]) != len(d.Tenures) {
			t.Fatalf("issue %s: %d tenures exported, %d in the database", id, len(got.tenures[id]), len(d.Tenures))
		}
		for i, l := range d.Tenures {
			want := Tenure{Token: l.Token, Holder: l.Holder, AcquiredAt: l.AcquiredAt.String(), ExpiresAt: timeText(l.ExpiresAt), EndedAt: timeText(l.EndedAt), EndReason: l.EndReason}
			if e := got.tenures[id][i]; !reflect.DeepEqual(e, want) {
				t.Errorf("issue %s tenure %d: export %+v, database %+v", id, i, e, want)
			}
		}
	}
	if tn := got.tenures[a.ID]; len(tn) != 2 || tn[1].EndReason == nil || *tn[1].EndReason != "merged" {
		t.Errorf("the tenure the merge ended is not exported as merged: %s", run(t, f.git, "git", "show", IssueRef(a.ID)+":tenures/000002.json"))
	}
	if tn := got.tenures[b.ID]; len(tn) != 1 || tn[0].EndReason == nil || *tn[0].EndReason != "expired" {
		t.Errorf("the run-out tenure is not exported as expired: %s", run(t, f.git, "git", "show", IssueRef(b.ID)+":tenures/000001.json"))
	}
	p, err := patches.Get(f.ctx, f.db.R(), repoKey, patchID)
	if err != nil {
		t.Fatal(err)
	}
	e := got.patches[patchID]
	wantMerge := &Merge{At: p.Merge.At.String(), Branch: p.Merge.Branch, By: p.Merge.By, Commit: p.Merge.Commit}
	if e.ID != p.ID || e.Repo != p.Repo || e.Title != p.Title || e.State != string(p.State) || e.Author != p.Author ||
		e.Base != p.Base || e.Description != p.Description || e.CreatedAt != p.CreatedAt.String() || e.UpdatedAt != p.UpdatedAt.String() ||
		!reflect.DeepEqual(e.Issues, p.Issues) || !reflect.DeepEqual(e.Merge, wantMerge) {
		t.Errorf("patch: export %+v, patch show %+v", e, p)
	}
	if len(got.revs[patchID]) != len(p.Revisions) || len(got.reviews[patchID]) != len(p.Reviews) {
		t.Fatalf("patch: %d revisions, %d reviews exported; %d, %d in the database",
			len(got.revs[patchID]), len(got.reviews[patchID]), len(p.Revisions), len(p.Reviews))
	}
	for i, r := range p.Revisions {
		want := Revision{Number: int64(r.Number), Commit: r.Commit, BaseCommit: r.BaseCommit, Pusher: r.Pusher, CreatedAt: r.CreatedAt.String()}
		if got.revs[patchID][i] != want {
			t.Errorf("revision %d: export %+v, database %+v", i+1, got.revs[patchID][i], want)
		}
	}
	for i, r := range p.Reviews {
		e := got.reviews[patchID][i]
		if e.ID != r.ID || int(e.Revision) != r.Revision || e.Author != r.Author || e.Verdict != r.Verdict ||
			e.Body != r.Body || !reflect.DeepEqual(e.File, r.File) || e.Line == nil || r.Line == nil || int(*e.Line) != *r.Line ||
			e.CreatedAt != r.CreatedAt.String() {
			t.Errorf("review %d: export %+v, database %+v", i+1, e, r)
		}
	}

	if st := got.states[patchID]; len(st) != 1 || st[0] != (StateChange{Kind: "merged", Actor: "bob", At: p.Merge.At.String()}) {
		t.Errorf("patch state changes: %+v, want the merge", st)
	}

	// The sweep recording the run-out tenure changes nothing in the export.
	if n, err := leases.SweepExpired(f.ctx, f.db, now); err != nil || n != 1 {
		t.Fatalf("sweep: %d, %v; want 1 tenure recorded", n, err)
	}
	res, err := f.x.Export(f.ctx, repoKey, f.git, now)
	if err != nil || len(res.Updated) != 0 {
		t.Fatalf("export after the sweep: %+v, %v", res, err)
	}
}

// Two exports of one repository at once: one writes, the other waits and
// finds nothing new; neither fails.
func TestConcurrentExports(t *testing.T) {
	f := newFixture(t)
	f.populate()
	errs := make(chan error, 2)
	results := make(chan Result, 2)
	for i := 0; i < 2; i++ {
		go func() {
			r, err := f.x.Export(f.ctx, repoKey, f.git, testNow)
			results <- r
			errs <- err
		}()
	}
	moved := 0
	for i := 0; i < 2; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		moved += len((<-results).Updated)
	}
	if moved != 5 {
		t.Fatalf("two concurrent exports moved %d refs, want 5 in all", moved)
	}
}

// Enough records for several compression batches: they arrive as one
// checked pack, the refs end up packed, and all reads back whole.
func TestExportWritesOnePack(t *testing.T) {
	f := newFixture(t)
	w, _ := f.populate()
	for i := 0; i < packRefsLimit; i++ {
		id := f.addIssue(w, 100+i, "open")
		for c := 0; c < 3; c++ {
			f.addComment(w, id, 100+i*3+c)
		}
	}
	res, err := f.x.Export(f.ctx, repoKey, f.git, testNow)
	if err != nil {
		t.Fatal(err)
	}
	if res.Objects <= 2*packBatch {
		t.Fatalf("only %d objects: the test should span several batches", res.Objects)
	}
	counts := run(t, f.git, "git", "count-objects", "-v")
	if !strings.HasPrefix(counts, "count: 0\n") || !strings.Contains(counts, "\npacks: 1\n") {
		t.Fatalf("objects not stored as one pack:\n%s", counts)
	}
	run(t, f.git, "git", "fsck", "--strict", "--no-dangling")
	if loose, _ := filepath.Glob(filepath.Join(f.git, "refs", "collab", "issues", "*")); len(loose) != 0 {
		t.Fatalf("%d loose refs left after a bulk export", len(loose))
	}
	got := readBack(t, clone(t, f.git))
	if !reflect.DeepEqual(got.issues, w.issues) || !reflect.DeepEqual(got.comments, w.comments) {
		t.Fatalf("records read back differ from the database")
	}
}

// A label change rewrites the issue's issue.json alone: one new commit on
// that issue's ref.
func TestLabelChangeExportsOneCommit(t *testing.T) {
	f := newFixture(t)
	_, ids := f.populate()
	if _, err := f.x.Export(f.ctx, repoKey, f.git, testNow); err != nil {
		t.Fatal(err)
	}
	issue := ids[2]
	ref := IssueRef(issue)
	old := strings.TrimSpace(run(t, f.git, "git", "rev-parse", ref))
	err := f.db.Write(f.ctx, func(tx *sql.Tx) error {
		_, _, err := issues.EditLabels(f.ctx, tx, repoKey, issue, []string{"area:web"}, nil, "bob", testNow)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.x.Export(f.ctx, repoKey, f.git, testNow)
	if err != nil || !reflect.DeepEqual(res.Updated, []string{ref}) {
		t.Fatalf("export after a label: %+v, %v", res, err)
	}
	if diff := strings.TrimSpace(run(t, f.git, "git", "diff", "--name-status", old, ref)); diff != "M\t"+IssueFile {
		t.Fatalf("diff %q", diff)
	}
	var got Issue
	if err := json.Unmarshal([]byte(run(t, f.git, "git", "show", ref+":"+IssueFile)), &got); err != nil || !reflect.DeepEqual(got.Labels, []string{"area:web"}) {
		t.Fatalf("issue.json labels %v, %v", got.Labels, err)
	}
}
