package ops

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/forge/forgetest"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/repos"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/text"
)

// testForge is a unit-test forge: a root with one repository (demo.git, whose
// hook shims run /bin/true, so pushes into it record nothing by
// themselves) and a working clone; the tests drive the hooks' Go entry
// points directly.
type testForge struct {
	t    *testing.T
	ctx  context.Context
	db   *store.DB
	env  *Push
	bare string
	work string
	now  time.Time
	said bytes.Buffer
}

func newForge(t *testing.T) *testForge {
	t.Helper()
	ctx, root, db := forgetest.New(t)
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	if _, err := repos.Create(ctx, root, db, "demo", false, "", "/bin/true", now); err != nil {
		t.Fatal(err)
	}
	f := &testForge{t: t, ctx: ctx, db: db, bare: filepath.Join(root.ReposDir(), "demo.git"), work: t.TempDir(), now: now}
	f.env = &Push{Root: root, DB: db, Repo: "demo.git", Git: git.Open(f.bare), Principal: "alice", Stderr: &f.said,
		Now: func() time.Time { f.now = f.now.Add(time.Second); return f.now }}
	f.git("init", "-q", "-b", "main")
	f.git("commit", "-q", "--allow-empty", "-m", "init")
	f.git("push", "-q", f.bare, "HEAD:refs/heads/main")
	return f
}

// git runs git in the working clone (as Ada, or as committer whom when
// the first argument is "as=NAME") and returns its trimmed output.
func (f *testForge) git(args ...string) string {
	f.t.Helper()
	committer := "Ada"
	email := "ada@example.com"
	if len(args) > 0 && strings.HasPrefix(args[0], "as=") {
		if committer = strings.TrimPrefix(args[0], "as="); committer != "Ada" {
			email = committer + "@collab.invalid" // as serve has git name a principal
		}
		args = args[1:]
	}
	cmd := exec.Command("git", args...)
	cmd.Dir = f.work
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@example.com",
		"GIT_COMMITTER_NAME="+committer, "GIT_COMMITTER_EMAIL="+email, "GIT_CONFIG_NOSYSTEM=1", "HOME="+f.work,
		// The forge's clock, for commits and reflog entries alike.
		fmt.Sprintf("GIT_COMMITTER_DATE=@%d +0000", f.now.Unix()), fmt.Sprintf("GIT_AUTHOR_DATE=@%d +0000", f.now.Unix()))
	out, err := cmd.CombinedOutput()
	if err != nil {
		f.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// commit makes a commit on top of HEAD with msg and returns its oid; its
// objects reach the bare repository under refs/test/ (no branch moves).
func (f *testForge) commit(msg string) string {
	f.t.Helper()
	f.git("commit", "-q", "--allow-empty", "-m", msg)
	oid := f.git("rev-parse", "HEAD")
	f.git("push", "-q", "-f", f.bare, "HEAD:refs/test/"+oid[:8])
	return oid
}

// procReceive records one refs/for command as proc-receive does and
// returns the report lines git would get (hookrun.ReportLines' words).
func (f *testForge) procReceive(ref, oid string, opts ...string) []string {
	f.t.Helper()
	f.said.Reset()
	reps := f.env.ProcReceive(f.ctx, []Update{{Old: git.ZeroOID, New: oid, Ref: ref}}, opts)
	// Whatever it answered, no git it started is left running (the
	// update-ref it starts early is aborted on a refusal).
	if kids := children(f.t); len(kids) > 0 {
		f.t.Fatalf("ProcReceive left child processes %v", kids)
	}
	var lines []string
	for _, r := range reps {
		if r.NG != "" {
			lines = append(lines, "ng "+r.Ref+" "+text.Line(r.NG))
			continue
		}
		lines = append(lines, "ok "+r.Ref, "option refname "+r.Refname, "option old-oid "+r.Old, "option new-oid "+r.New)
		if r.Forced {
			lines = append(lines, "option forced-update")
		}
	}
	return lines
}

// query returns the first column of a query's rows, joined by ",".
func (f *testForge) query(q string, args ...any) string {
	f.t.Helper()
	rows, err := f.db.R().QueryContext(f.ctx, q, args...)
	if err != nil {
		f.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s sql.NullString
		if err := rows.Scan(&s); err != nil {
			f.t.Fatal(err)
		}
		out = append(out, s.String)
	}
	return strings.Join(out, ",")
}

// refs returns refs/collab/ of the bare repository.
func (f *testForge) refs() map[string]string {
	f.t.Helper()
	m, err := f.env.Git.Refs(f.ctx, "refs/collab/")
	if err != nil {
		f.t.Fatal(err)
	}
	return m
}

func (f *testForge) updateRef(ref, oid string) {
	f.t.Helper()
	if err := f.env.Git.UpdateRefs(f.ctx, []git.RefUpdate{{Ref: ref, New: oid}}); err != nil {
		f.t.Fatal(err)
	}
}

// children are the pids of this process's children that have not been
// waited for.
func children(t *testing.T) []string {
	t.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*/children")
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		pids = append(pids, strings.Fields(string(b))...)
	}
	return pids
}
