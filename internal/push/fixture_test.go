package push

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
	"github.com/collab-forge/collab/internal/pktline"
	"github.com/collab-forge/collab/internal/repos"
	"github.com/collab-forge/collab/internal/store"
)

// testForge is a unit-test forge: a root with one repository (demo.git, whose
// hook shims run /bin/true, so pushes into it record nothing by
// themselves) and a working clone; the tests drive the hooks' Go entry
// points directly.
type testForge struct {
	t    *testing.T
	ctx  context.Context
	db   *store.DB
	env  *Env
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
	f.env = &Env{Root: root, DB: db, Repo: "demo.git", Git: git.Open(f.bare), Principal: "alice", Stderr: &f.said,
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

// procReceive speaks proc-receive's protocol for one refs/for command and
// returns the report lines git would get.
func (f *testForge) procReceive(ref, oid string, opts ...string) []string {
	f.t.Helper()
	var in bytes.Buffer
	w := pktline.NewWriter(&in)
	must := func(err error) {
		if err != nil {
			f.t.Fatal(err)
		}
	}
	must(w.Line("version=1\x00push-options atomic"))
	must(w.Flush())
	must(w.Line(git.ZeroOID + " " + oid + " " + ref))
	must(w.Flush())
	for _, o := range opts {
		must(w.Line(o))
	}
	must(w.Flush())
	var out bytes.Buffer
	f.said.Reset()
	if err := ProcReceive(f.ctx, f.env, &in, &out); err != nil {
		f.t.Fatalf("ProcReceive: %v", err)
	}
	// Whatever it answered, no git it started is left running (the
	// update-ref it starts early is aborted on a refusal).
	if kids := children(f.t); len(kids) > 0 {
		f.t.Fatalf("ProcReceive left child processes %v", kids)
	}
	r := pktline.NewReader(&out)
	hello, err := r.ReadSection()
	if err != nil || len(hello) != 1 || !strings.HasPrefix(string(hello[0]), "version=1") {
		f.t.Fatalf("hello %q %v", hello, err)
	}
	rep, err := r.ReadSection()
	if err != nil {
		f.t.Fatalf("report: %v", err)
	}
	if rest, _ := out.ReadByte(); rest != 0 {
		f.t.Fatalf("stray byte after the report: %q", rest)
	}
	var lines []string
	for _, l := range rep {
		lines = append(lines, string(l))
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
