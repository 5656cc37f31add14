package verbs_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/forge/forgetest"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/verbs"
)

// leaseForge is a forge root with repository demo and principals of every
// access level, driven through verbs.Run with a clock the test moves.
type leaseForge struct {
	t   *testing.T
	ctx context.Context
	db  *store.DB
	now time.Time
}

func newLeaseForge(t *testing.T) *leaseForge {
	t.Helper()
	ctx, _, db := forgetest.New(t)
	err := db.Write(ctx, func(tx *sql.Tx) error {
		stmts := []string{
			"INSERT INTO repos(name, created_at) VALUES ('demo.git', 'x'), ('other.git', 'x')",
			"INSERT INTO principals(name, created_at) VALUES ('alice','x'), ('bob','x'), ('carol','x'), ('dave','x'), ('root','x'), ('eve','x')",
			`INSERT INTO grants(principal, repo, level) VALUES ('alice','demo.git','write'), ('bob','demo.git','write'),
				('carol','*','write'), ('dave','demo.git','read'), ('root','demo.git','admin')`,
		}
		for _, s := range stmts {
			if _, err := tx.ExecContext(ctx, s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return &leaseForge{t: t, ctx: ctx, db: db, now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

type result struct {
	code           int
	stdout, stderr string
}

func (f *leaseForge) run(who, stdin, line string) result {
	f.t.Helper()
	var out, errb bytes.Buffer
	env := &verbs.Env{
		DB: f.db, Principal: who, Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb,
		Now: func() time.Time { return f.now },
	}
	code := verbs.Run(f.ctx, env, strings.Fields(line))
	return result{code, out.String(), errb.String()}
}

// want runs line as who and checks its exit code; refusals must print
// exactly one line on stderr.
func (f *leaseForge) want(code int, who, line string) result {
	f.t.Helper()
	r := f.run(who, "", line)
	if r.code != code {
		f.t.Fatalf("%s: %s: exit %d, want %d\nstdout: %s\nstderr: %s", who, line, r.code, code, r.stdout, r.stderr)
	}
	if code != 0 && strings.Count(strings.TrimRight(r.stderr, "\n"), "\n") != 0 {
		f.t.Fatalf("%s: %s: refusal is not one line: %q", who, line, r.stderr)
	}
	return r
}

func (f *leaseForge) json(who, line string, v any) {
	f.t.Helper()
	r := f.want(0, who, line+" --json")
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		f.t.Fatalf("%s: %v in %q", line, err, r.stdout)
	}
}

type leaseJSON struct {
	Repo       string  `json:"repo"`
	IssueID    string  `json:"issue_id"`
	Holder     string  `json:"holder"`
	Token      int64   `json:"token"`
	AcquiredAt string  `json:"acquired_at"`
	ExpiresAt  *string `json:"expires_at"`
}

type issueJSON struct {
	ID       string           `json:"id"`
	Repo     string           `json:"repo"`
	Title    string           `json:"title"`
	Body     string           `json:"body"`
	State    string           `json:"state"`
	Author   string           `json:"author"`
	Created  string           `json:"created_at"`
	Lease    *leaseJSON       `json:"lease"`
	Comments []commentJSON    `json:"comments"`
	Tenures  []map[string]any `json:"tenures"`
}

type commentJSON struct {
	ID, Author, Body string
	CreatedAt        string `json:"created_at"`
}

func TestIssueVerbs(t *testing.T) {
	f := newLeaseForge(t)
	var is issueJSON
	f.json("dave", "issue new demo --title Crash --body -x", &is) // reading is enough to file
	if len(is.ID) != 40 || is.Repo != "demo.git" || is.State != "open" || is.Author != "dave" || is.Lease != nil {
		t.Fatalf("new issue %+v", is)
	}
	f.want(4, "eve", "issue new demo --title nope")
	f.want(4, "eve", "issue show demo "+is.ID)
	f.want(4, "alice", "issue show demo 0000beef")
	f.want(2, "alice", "issue show demo zzzz")
	f.want(2, "alice", "issue new demo") // no title
	f.want(2, "alice", "issue list demo --state merged")
	f.want(4, "alice", "issue list nosuch")

	// --body - reads stdin; flags may follow positional arguments.
	r := f.run("carol", "from stdin\nline two\n", "issue comment demo "+is.ID[:6]+" --body - --json")
	if r.code != 0 {
		t.Fatalf("comment: %d %s", r.code, r.stderr)
	}
	var d issueJSON
	f.json("dave", "issue show demo "+is.ID[:8], &d)
	if len(d.Comments) != 1 || d.Comments[0].Body != "from stdin\nline two" || d.Comments[0].Author != "carol" {
		t.Fatalf("comments %+v", d.Comments)
	}

	// Closing others' issues needs write; one's own needs read only.
	var others issueJSON
	f.json("carol", "issue new demo --title Others", &others)
	f.want(5, "dave", "issue close demo "+others.ID)
	f.want(0, "dave", "issue close demo "+is.ID)
	if r := f.want(0, "dave", "issue close demo "+is.ID); !strings.Contains(r.stdout, "already closed") {
		t.Fatalf("second close: %q", r.stdout)
	}
	f.want(0, "alice", "issue reopen demo "+is.ID)
	var list []issueJSON
	f.json("dave", "issue list demo --limit 1", &list)
	if len(list) != 1 || list[0].ID != others.ID {
		t.Fatalf("page 1 %+v", list)
	}
	f.json("dave", "issue list demo --after "+others.ID[:6], &list)
	if len(list) != 1 || list[0].ID != is.ID {
		t.Fatalf("page 2 %+v", list)
	}
	f.want(2, "dave", "issue list demo --limit 0")
}

func TestLeaseVerbsZombie(t *testing.T) {
	f := newLeaseForge(t)
	var is issueJSON
	f.json("carol", "issue new demo --title Work", &is)
	id := is.ID

	f.want(5, "dave", "lease acquire demo "+id) // read only
	f.want(2, "alice", "lease acquire demo "+id+" --ttl 0s")
	f.want(2, "alice", "lease acquire demo "+id+" --ttl 721h")
	var a leaseJSON
	f.json("alice", "lease acquire demo "+id[:6]+" --ttl 2s", &a)
	if a.Token != 1 || a.Holder != "alice" || a.ExpiresAt == nil || a.IssueID != id || a.Repo != "demo.git" {
		t.Fatalf("acquire %+v", a)
	}
	r := f.want(3, "bob", "lease acquire demo "+id+" --ttl 1m --json")
	var refusal map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &refusal); err != nil || refusal["holder"] != "alice" || refusal["expires_at"] != *a.ExpiresAt || refusal["error"] == nil {
		t.Fatalf("refusal %q (%v)", r.stdout, err)
	}
	if !strings.Contains(r.stderr, "alice") {
		t.Fatalf("refusal does not name the holder: %s", r.stderr)
	}

	f.now = f.now.Add(3 * time.Second) // alice's lease runs out
	var b leaseJSON
	f.json("bob", "lease acquire demo "+id+" --ttl 1m", &b)
	if b.Token != 2 {
		t.Fatalf("takeover token %d", b.Token)
	}
	for _, line := range []string{
		"issue comment demo " + id + " --body late --lease-token 1",
		"issue close demo " + id + " --lease-token 1",
	} {
		r := f.want(3, "alice", line)
		if !strings.Contains(r.stderr, "stale lease token") || !strings.Contains(r.stderr, "bob") {
			t.Fatalf("%s: %s", line, r.stderr)
		}
	}
	f.want(3, "alice", "lease renew demo "+id)
	f.want(0, "bob", "issue comment demo "+id+" --body mine --lease-token 2")
	f.want(2, "bob", "issue comment demo "+id+" --body x --lease-token -1")
	// A third principal may comment without a token but not close.
	f.want(0, "carol", "issue comment demo "+id+" --body drive-by")
	r = f.want(3, "carol", "issue close demo "+id)
	if !strings.Contains(r.stderr, "bob") {
		t.Fatalf("close refusal: %s", r.stderr)
	}

	// bob's tenure ends; his own older token is stale in his next tenure.
	if r := f.want(0, "bob", "lease release demo "+id[:5]); strings.TrimSpace(r.stdout) != "released" {
		t.Fatalf("release said %q", r.stdout)
	}
	if r := f.want(0, "bob", "lease release demo "+id); strings.TrimSpace(r.stdout) != "not held" {
		t.Fatalf("second release said %q", r.stdout)
	}
	f.json("bob", "lease acquire demo "+id, &b) // open-ended
	if b.Token != 3 || b.ExpiresAt != nil {
		t.Fatalf("third tenure %+v", b)
	}
	f.want(3, "bob", "issue comment demo "+id+" --body old --lease-token 2")
	f.want(0, "bob", "issue close demo "+id+" --lease-token 3")

	// The issue is closed: acquire cannot find it, renew and release can.
	f.want(4, "alice", "lease acquire demo "+id)
	f.json("bob", "lease renew demo "+id[:4]+" --ttl 5m", &b)
	if b.Token != 3 || b.ExpiresAt == nil {
		t.Fatalf("renew %+v", b)
	}
	var list []leaseJSON
	f.json("dave", "lease list demo", &list)
	if len(list) != 1 || list[0].Holder != "bob" {
		t.Fatalf("list %+v", list)
	}
	var d issueJSON
	f.json("dave", "issue show demo "+id, &d)
	if d.State != "closed" || d.Lease == nil || d.Lease.Token != 3 || len(d.Tenures) != 3 || len(d.Comments) != 2 {
		t.Fatalf("show %+v", d)
	}
	if d.Tenures[0]["end_reason"] != "expired" || d.Tenures[1]["end_reason"] != "released" {
		t.Fatalf("tenures %+v", d.Tenures)
	}

	// Admins override: reopen while bob holds it, release with --force.
	f.want(3, "alice", "issue reopen demo "+id)
	f.want(0, "root", "issue reopen demo "+id)
	f.want(5, "alice", "lease release demo "+id+" --force")
	f.want(3, "alice", "lease release demo "+id)
	if r := f.want(0, "root", "lease release demo "+id+" --force"); strings.TrimSpace(r.stdout) != "released" {
		t.Fatalf("forced release said %q", r.stdout)
	}
}

func TestLeaseVerbIDs(t *testing.T) {
	f := newLeaseForge(t)
	x := issueJSON{ID: "abcd000000000000000000000000000000000001"}
	y := issueJSON{ID: "abcd000000000000000000000000000000000002"}
	err := f.db.Write(f.ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(f.ctx, `INSERT INTO issues(repo, id, title, author, created_at, updated_at)
			VALUES ('demo.git', ?, 'x', 'alice', 'x', 'x'), ('demo.git', ?, 'y', 'alice', 'x', 'x')`, x.ID, y.ID)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	f.want(0, "alice", "lease release demo "+x.ID) // never leased
	f.want(4, "alice", "lease release demo 0000000f")
	f.want(4, "alice", "lease renew demo "+x.ID) // no lease row
	f.want(2, "alice", "lease acquire demo abc")
	f.want(2, "alice", "lease acquire demo ghij")
	f.want(4, "carol", "lease acquire other "+x.ID) // same id, another repository
	f.want(4, "eve", "lease list demo")
	for _, verb := range []string{"issue show", "lease acquire", "lease release"} {
		r := f.want(2, "alice", verb+" demo abcd")
		if !strings.Contains(r.stderr, x.ID) || !strings.Contains(r.stderr, y.ID) {
			t.Fatalf("%s: ambiguity does not list candidates: %s", verb, r.stderr)
		}
	}
	// Once only x has a lease row, renew resolves the prefix to it.
	f.want(0, "alice", "lease acquire demo "+x.ID)
	f.want(0, "alice", "lease release demo "+x.ID)
	var l leaseJSON
	f.want(3, "alice", "lease renew demo abcd") // free: not holder
	f.want(0, "alice", "lease acquire demo "+x.ID[:39]+"1 --ttl 1m")
	f.json("alice", "lease renew demo abcd", &l)
	if l.IssueID != x.ID || l.Token != 2 || l.ExpiresAt == nil {
		t.Fatalf("renew by prefix %+v", l)
	}
}
