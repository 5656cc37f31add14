package git

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// repo makes a bare repository with a small history: a root, a commit
// with trailers, and a side branch; it returns the repo and named oids.
func repo(t *testing.T) (Repo, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	work := filepath.Join(dir, "w")
	run := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@b", "GIT_COMMITTER_NAME=A", "GIT_COMMITTER_EMAIL=a@b", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	run("init", "-q", "-b", "main")
	run("commit", "-q", "--allow-empty", "-m", "root")
	oids := map[string]string{"root": run("rev-parse", "HEAD")}
	run("commit", "-q", "--allow-empty", "-m", "two", "-m", "Body with Patch: not-this\n\npatch: 0123456789abcdef\nFixes: abcd\nFixes: ef01\nChange-Id: I0123")
	oids["two"] = run("rev-parse", "HEAD")
	run("checkout", "-q", "-b", "side", oids["root"])
	run("commit", "-q", "--allow-empty", "-m", "side")
	oids["side"] = run("rev-parse", "HEAD")
	bare := filepath.Join(dir, "r.git")
	run("clone", "-q", "--bare", work, bare)
	return Repo{Dir: bare}, oids
}

func TestRepo(t *testing.T) {
	ctx := context.Background()
	r, o := repo(t)
	cs, err := r.Commits(ctx, o["two"], o["root"])
	if err != nil || len(cs) != 2 {
		t.Fatalf("Commits = %v, %v", cs, err)
	}
	two := cs[0]
	if two.OID != o["two"] || strings.Join(two.Patch, ",") != "0123456789abcdef" || strings.Join(two.Fixes, ",") != "abcd,ef01" || strings.Join(two.ChangeID, ",") != "I0123" ||
		len(two.Parents) != 1 || two.Parents[0] != o["root"] || !strings.HasPrefix(string(two.Message), "two\n\nBody") {
		t.Errorf("Commits[0] = %+v", two)
	}
	if cs[1].OID != o["root"] || cs[1].Patch != nil || len(cs[1].Parents) != 0 {
		t.Errorf("Commits[1] = %+v", cs[1])
	}
	if _, err := r.Commits(ctx, "--all"); err == nil {
		t.Error("Commits took an option")
	}

	var seen []string
	if err := r.Walk(ctx, []string{o["two"], "^" + o["side"]}, func(c Commit) error { seen = append(seen, c.OID); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(seen, " ") != o["two"] {
		t.Errorf("Walk two ^side = %v", seen)
	}
	stop := errors.New("stop")
	if err := r.Walk(ctx, []string{o["two"]}, func(Commit) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("Walk stop = %v", err)
	}

	if mb, ok, err := r.MergeBase(ctx, o["two"], o["side"]); err != nil || !ok || mb != o["root"] {
		t.Errorf("MergeBase = %q %v %v", mb, ok, err)
	}
	if ok, err := r.IsAncestor(ctx, o["root"], o["two"]); err != nil || !ok {
		t.Errorf("IsAncestor root two = %v %v", ok, err)
	}
	if ok, err := r.IsAncestor(ctx, o["side"], o["two"]); err != nil || ok {
		t.Errorf("IsAncestor side two = %v %v", ok, err)
	}
	if oid, ok, err := r.ResolveRef(ctx, "refs/heads/main"); err != nil || !ok || oid != o["two"] {
		t.Errorf("ResolveRef main = %q %v %v", oid, ok, err)
	}
	if _, ok, err := r.ResolveRef(ctx, "refs/heads/nope"); err != nil || ok {
		t.Errorf("ResolveRef nope = %v %v", ok, err)
	}
	if ok, err := r.HasObject(ctx, strings.Repeat("1", 40)); err != nil || ok {
		t.Errorf("HasObject missing = %v %v", ok, err)
	}

	p, ok, err := r.PushedRange(ctx, o["two"], "refs/heads/side", 100)
	if err != nil || !ok || p.Tip.OID != o["two"] || !strings.HasPrefix(string(p.Tip.Message), "two") ||
		len(p.New) != 1 || !p.New[o["two"]] || strings.Join(p.Boundary, ",") != o["root"] || p.Truncated {
		t.Errorf("PushedRange two side = %+v %v %v", p, ok, err)
	}
	p, ok, err = r.PushedRange(ctx, o["root"], "refs/heads/main", 100)
	if err != nil || !ok || p.Tip.OID != o["root"] || len(p.New) != 0 || len(p.Boundary) != 0 {
		t.Errorf("PushedRange root main = %+v %v %v", p, ok, err)
	}
	if _, ok, err := r.PushedRange(ctx, o["two"], "refs/heads/nope", 100); err != nil || ok {
		t.Errorf("PushedRange to a missing branch = %v %v", ok, err)
	}
	if p, ok, err := r.PushedRange(ctx, o["two"], "refs/heads/nope", 0); err != nil || ok || p.Truncated {
		t.Errorf("PushedRange to a missing branch, limit 0 = %v %v", ok, err)
	}
	if p, ok, err := r.PushedRange(ctx, o["two"], "refs/heads/side", 0); err != nil || !ok || !p.Truncated || p.Tip.OID != o["two"] {
		t.Errorf("PushedRange truncated = %+v %v %v", p, ok, err)
	}
	for _, bad := range []string{"refs/heads/main~1", "refs/heads/a..b", "main", "refs/heads/x@{1}", "--all"} {
		if _, _, err := r.PushedRange(ctx, o["two"], bad, 10); err == nil {
			t.Errorf("PushedRange took %q", bad)
		}
	}
	if mb, ok, err := r.MergeBaseRef(ctx, o["two"], "refs/heads/side"); err != nil || !ok || mb != o["root"] {
		t.Errorf("MergeBaseRef = %q %v %v", mb, ok, err)
	}

	err = r.UpdateRefs(ctx, []RefUpdate{{Ref: "refs/collab/x", New: o["root"], Old: ZeroOID}, {Ref: "refs/collab/y", New: o["two"]}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.UpdateRefs(ctx, []RefUpdate{{Ref: "refs/collab/x", New: o["two"], Old: ZeroOID}}); err == nil {
		t.Error("create over an existing ref succeeded")
	}
	if err := r.UpdateRefs(ctx, []RefUpdate{{Ref: "refs/collab/y", New: ZeroOID, Old: o["two"]}}); err != nil {
		t.Fatal(err)
	}
	refs, err := r.Refs(ctx, "refs/collab/")
	if err != nil || len(refs) != 1 || refs["refs/collab/x"] != o["root"] {
		t.Errorf("Refs = %v, %v", refs, err)
	}
}

// TestCleanEnv: which environment git sees is a security property. A
// variable a client could have smuggled into this process's environment
// (git's own config injection, a preloaded library, a redirected
// repository) never reaches git in Clean mode; Hook mode passes the
// environment through, as quarantined pushes need.
func TestCleanEnv(t *testing.T) {
	ctx := context.Background()
	r, _ := repo(t)
	hostile := map[string]string{
		"GIT_CONFIG_PARAMETERS": "'core.hostile'='yes'",
		"GIT_CONFIG_COUNT":      "1",
		"GIT_CONFIG_KEY_0":      "core.hostile2",
		"GIT_CONFIG_VALUE_0":    "yes",
		"LD_PRELOAD":            "/nonexistent/evil.so",
		"GIT_DIR":               "/nonexistent",
		"GIT_QUARANTINE_PATH":   "/nonexistent/q",
		"GIT_OBJECT_DIRECTORY":  "/nonexistent/objects",
		"COLLAB_ACCESS":         "admin demo.git 0",
	}
	for k, v := range hostile {
		t.Setenv(k, v)
	}
	// What git itself sees: an alias that runs env (git adds the alias to
	// GIT_CONFIG_PARAMETERS; the hostile value must not be there).
	seen := func(r Repo) string {
		out, err := r.Run(ctx, nil, "-c", "alias.showenv=!env", "showenv")
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	clean := seen(r)
	for k, v := range hostile {
		// git sets GIT_CONFIG_PARAMETERS and GIT_DIR for the alias itself.
		mine := k == "GIT_CONFIG_PARAMETERS" || k == "GIT_DIR"
		if strings.Contains(clean, k+"="+v) || (!mine && strings.Contains(clean, k+"=")) || (len(v) > 3 && strings.Contains(clean, v)) {
			t.Errorf("clean mode: git saw %s=%s:\n%s", k, v, clean)
		}
	}
	for _, want := range []string{"PATH=", "HOME="} {
		if !strings.Contains(clean, want) {
			t.Errorf("clean mode: git lacks %s:\n%s", want, clean)
		}
	}
	if out, err := r.Run(ctx, nil, "config", "core.hostile"); err == nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("clean mode: git config took the injected value: %q %v", out, err)
	}
	// The same variables in Hook mode do reach git: the test can fail.
	if h := seen(Repo{Dir: r.Dir, Mode: Hook}); !strings.Contains(h, "LD_PRELOAD=/nonexistent/evil.so") || !strings.Contains(h, "core.hostile") {
		t.Errorf("hook mode did not pass the environment through:\n%s", h)
	}
	// A hook's environment given (serve running a relayed hook): that one
	// reaches git, not this process's, and git runs where the hook ran.
	given := InHookEnv(r.Dir, []string{"PATH=" + os.Getenv("PATH"), "HOME=/given", "GIT_QUARANTINE_PATH=/given/q"})
	if h := seen(given); !strings.Contains(h, "GIT_QUARANTINE_PATH=/given/q") || strings.Contains(h, "LD_PRELOAD") {
		t.Errorf("InHookEnv: git saw:\n%s", h)
	}
	if out, err := given.Run(ctx, nil, "-c", "alias.where=!pwd", "where"); err != nil || strings.TrimSpace(string(out)) != r.Dir {
		t.Errorf("InHookEnv: git ran in %q (%v), want %s", out, err, r.Dir)
	}
	// Out of the quarantine: the same environment without the variables
	// that point git at the quarantined objects.
	for name, u := range map[string]Repo{"process": Repo{Dir: r.Dir, Mode: Hook}.Unquarantined(), "given": given.Unquarantined()} {
		h := seen(u)
		if strings.Contains(h, "GIT_QUARANTINE_PATH=") || strings.Contains(h, "GIT_OBJECT_DIRECTORY=") {
			t.Errorf("Unquarantined (%s environment): git saw:\n%s", name, h)
		}
		if keep := map[string]string{"process": "LD_PRELOAD=/nonexistent/evil.so", "given": "HOME=/given"}[name]; !strings.Contains(h, keep) {
			t.Errorf("Unquarantined (%s environment) lost %s:\n%s", name, keep, h)
		}
	}
	if u := r.Unquarantined(); strings.Join(u.Env(), " ") != strings.Join(r.Env(), " ") {
		t.Errorf("Unquarantined changed a clean Repo: %q", u.Env())
	}
	// Values collab sets itself are added on top.
	if w := seen(r.With("GIT_INDEX_FILE=/tmp/x")); !strings.Contains(w, "GIT_INDEX_FILE=/tmp/x") {
		t.Errorf("With: not passed:\n%s", w)
	}

	env := CleanEnv([]string{"PATH=", "HOME=/h", "LD_PRELOAD=x", "GIT_DIR=y", "junk"})
	if strings.Join(env, " ") != "HOME=/h PATH="+DefaultPath {
		t.Errorf("CleanEnv = %q", env)
	}
}

func TestReflog(t *testing.T) {
	ctx := context.Background()
	r, o := repo(t)
	if es, err := r.Reflog("main"); err != nil || len(es) != 0 {
		t.Fatalf("Reflog without logs = %v %v", es, err)
	}
	if _, err := r.Run(ctx, nil, "config", "core.logAllRefUpdates", "true"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_COMMITTER_NAME", "alice")
	t.Setenv("GIT_COMMITTER_EMAIL", "alice@collab")
	if err := (Repo{Dir: r.Dir, Mode: Hook}).UpdateRefs(ctx, []RefUpdate{{Ref: "refs/heads/main", New: o["root"], Old: o["two"]}}); err != nil {
		t.Fatal(err)
	}
	es, err := r.Reflog("main")
	if err != nil || len(es) != 1 {
		t.Fatalf("Reflog = %v %v", es, err)
	}
	if e := es[0]; e.Old != o["two"] || e.New != o["root"] || e.Name != "alice" || e.Email != "alice@collab" || e.Time.IsZero() {
		t.Errorf("Reflog[0] = %+v", e)
	}
	if _, err := r.Reflog("../../x"); err == nil {
		t.Error("Reflog took a path")
	}
}

// TestDetach: Detach returns while git still runs (here an alias that
// waits on a fifo the test writes only afterwards), and git runs in a
// session of its own, so the caller's connection is not kept open by it.
func TestDetach(t *testing.T) {
	r, _ := repo(t)
	dir := t.TempDir()
	fifo, out := filepath.Join(dir, "go"), filepath.Join(dir, "sid")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// Field 6 of /proc/PID/stat is the session id.
	alias := "alias.late=!read x < " + fifo + " && cut -d' ' -f6 /proc/$$/stat > " + out + ".tmp && mv " + out + ".tmp " + out
	if err := r.Detach("-c", alias, "late"); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // waits for git's reader
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString("go\n"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	deadline := time.Now().Add(time.Minute)
	var sid []byte
	for sid, err = os.ReadFile(out); err != nil; sid, err = os.ReadFile(out) {
		if time.Now().After(deadline) {
			t.Fatalf("git did not finish: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	own, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	// The command name (field 2) may hold spaces: count from its ')'.
	fields := strings.Fields(string(own[strings.LastIndexByte(string(own), ')')+1:]))
	if got := strings.TrimSpace(string(sid)); got == fields[3] {
		t.Fatalf("git ran in the caller's session %s", got)
	}
}

// A read beside the quarantine finds a pushed object before and after git
// moves it in, and starts after git removed the quarantine, where a git
// pointed into the quarantine no longer starts.
func TestBesideQuarantine(t *testing.T) {
	ctx := context.Background()
	r, _ := repo(t)
	objects := filepath.Join(r.Dir, "objects")
	q := filepath.Join(objects, "tmp_objdir-incoming-test")
	if err := os.MkdirAll(q, 0o755); err != nil {
		t.Fatal(err)
	}
	hook := InHookEnv(r.Dir, append(os.Environ(), "GIT_QUARANTINE_PATH="+q, "GIT_OBJECT_DIRECTORY="+q, "GIT_ALTERNATE_OBJECT_DIRECTORIES="+objects))
	out, err := hook.Run(ctx, strings.NewReader("pushed"), "hash-object", "-w", "--stdin")
	if err != nil {
		t.Fatal(err)
	}
	oid := strings.TrimSpace(string(out))
	has := func(g Repo) error {
		_, err := g.Run(ctx, nil, "cat-file", "-e", oid)
		return err
	}
	if err := has(r); err == nil {
		t.Fatal("the quarantined object is in the repository already")
	}
	beside := hook.BesideQuarantine()
	if err := has(beside); err != nil {
		t.Errorf("beside the quarantine, before the move: %v", err)
	}
	// What git does once pre-receive passed: the object moves in, the
	// quarantine goes.
	rel := filepath.Join(oid[:2], oid[2:])
	if err := os.MkdirAll(filepath.Join(objects, oid[:2]), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(q, rel), filepath.Join(objects, rel)); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(q); err != nil {
		t.Fatal(err)
	}
	if err := has(beside); err != nil {
		t.Errorf("beside the quarantine, after git removed it: %v", err)
	}
	if err := has(hook); err == nil {
		t.Error("a git pointed into the removed quarantine started: the test shows nothing")
	}
	if got := r.BesideQuarantine(); strings.Join(got.Env(), " ") != strings.Join(r.Env(), " ") {
		t.Errorf("BesideQuarantine changed a Repo outside a quarantine: %q", got.Env())
	}
}
