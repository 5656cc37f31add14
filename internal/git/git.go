// Package git is the one place collab runs stock git. Every call takes a
// context; user values never reach git as options (object ids are checked
// hex, refs come after "--" or on stdin).
//
// Which environment git sees is a security property, so it is explicit: a
// Repo runs git either with the hook's inherited environment (Hook: in
// pre-receive and proc-receive git set GIT_QUARANTINE_PATH,
// GIT_OBJECT_DIRECTORY and GIT_ALTERNATE_OBJECT_DIRECTORIES, without which
// the pushed objects are invisible), or with a clean one (Clean: PATH and
// HOME from this process, nothing else), so that nothing a client or a hook
// left in the environment (GIT_CONFIG_PARAMETERS, GIT_DIR, LD_PRELOAD…)
// reaches git. Variables collab sets itself for one command (a scratch
// index, say) are added with With.
package git

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ZeroOID is git's all-zero object id: a ref that does not exist.
const ZeroOID = "0000000000000000000000000000000000000000"

// DefaultPath is the PATH git gets when this process has none.
const DefaultPath = "/usr/local/bin:/usr/bin:/bin"

// Mode says which environment git runs with.
type Mode int

const (
	// Clean: only what git needs of this process's environment (CleanEnv).
	Clean Mode = iota
	// Hook: this process's whole environment, as git gave it to a hook
	// (the push's quarantined objects included).
	Hook
)

// Repo is a bare repository and the environment git runs with on it. The
// zero Mode is Clean.
type Repo struct {
	Dir  string
	Mode Mode
	// env is the hook's environment for Hook mode when it is not this
	// process's (InHookEnv: serve running a hook it relays).
	env []string
	// extra are variables collab sets itself for every command of this
	// Repo (With); they win over the environment.
	extra []string
}

// Open returns the repository at dir run with a clean environment.
func Open(dir string) Repo { return Repo{Dir: dir} }

// InHook returns the repository at dir run with the hook's environment.
func InHook(dir string) Repo { return Repo{Dir: dir, Mode: Hook} }

// InHookEnv returns the repository at dir run with env, the environment
// git gave a hook that another process runs (internal/relay).
func InHookEnv(dir string, env []string) Repo {
	return Repo{Dir: dir, Mode: Hook, env: append([]string{}, env...)}
}

// quarantineVars are what git sets for the hooks that run before the
// pushed objects move into the repository (pre-receive, proc-receive).
var quarantineVars = []string{"GIT_QUARANTINE_PATH", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES"}

// Unquarantined returns r without the push's quarantine: for a Hook-mode
// Repo, its environment without the variables that point git at the
// quarantined objects, as git gives post-receive once they moved in.
func (r Repo) Unquarantined() Repo {
	if r.Mode != Hook {
		return r
	}
	env := r.env
	if env == nil {
		env = os.Environ()
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(quarantineVars, k) {
			out = append(out, kv)
		}
	}
	r.env = out
	return r
}

// BesideQuarantine returns r, for a Hook-mode Repo in a push's quarantine,
// with the repository's own objects first and the quarantined ones as an
// alternate: it starts whether or not git has removed the quarantine yet,
// which a git pointed into the quarantine cannot, and finds the pushed
// objects before and after git moves them in. An object git moves between
// git's two lookups (the repository, then the quarantine) is not found:
// the command fails, it never answers wrongly. Outside a quarantine it is
// r.
func (r Repo) BesideQuarantine() Repo {
	if r.Mode != Hook {
		return r
	}
	env := r.Env()
	q := lastValue(env, "GIT_OBJECT_DIRECTORY")
	if q == "" || lastValue(env, "GIT_QUARANTINE_PATH") == "" {
		return r
	}
	return r.Unquarantined().With("GIT_ALTERNATE_OBJECT_DIRECTORIES=" + q)
}

// lastValue is the value of variable k in env, the last one set winning
// as in exec.Cmd.Env.
func lastValue(env []string, k string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], k+"="); ok {
			return v
		}
	}
	return ""
}

// With returns r with the variables kv ("NAME=value") added to every
// command's environment. Only collab's own values belong here.
func (r Repo) With(kv ...string) Repo {
	r.extra = append(append([]string(nil), r.extra...), kv...)
	return r
}

// cleanVars are what CleanEnv keeps: git finds its programs on PATH and the
// forge user's configuration (safe.directory, say) under HOME.
var cleanVars = []string{"PATH", "HOME"}

// CleanEnv returns what git needs of environ and nothing else: PATH
// (DefaultPath when unset or empty) and HOME.
func CleanEnv(environ []string) []string {
	env := make([]string, 0, len(cleanVars))
	path := DefaultPath
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		switch {
		case !ok:
		case k == "PATH":
			if v != "" {
				path = v
			}
		case k == "HOME":
			env = append(env, kv)
		}
	}
	return append(env, "PATH="+path)
}

// Env returns the environment git gets from r.
func (r Repo) Env() []string {
	var env []string
	switch {
	case r.Mode == Hook && r.env != nil:
		env = append([]string(nil), r.env...)
	case r.Mode == Hook:
		env = os.Environ()
	default:
		env = CleanEnv(os.Environ())
	}
	return append(env, r.extra...)
}

// Command returns git with args on r, its environment set by r's mode;
// the caller wires stdin/stdout and runs it. A cancelled context kills git
// and waits at most 5 s for its pipes.
func (r Repo) Command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "git", append([]string{"--git-dir=" + r.Dir}, args...)...)
	cmd.Env = r.Env()
	if r.env != nil {
		// Where git ran the hook, as for a hook's own commands: GIT_DIR
		// in its environment is relative to it.
		cmd.Dir = r.Dir
	}
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// Detach starts git with args on r in a session of its own, with no input
// or output, and leaves it running: work that nobody waits for.
func (r Repo) Detach(args ...string) error {
	cmd := r.Command(context.Background(), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return cmd.Process.Release()
}

// Init makes a bare repository at dir (with branch main), in a clean
// environment.
func Init(ctx context.Context, dir string) error {
	// --shared=0640: every file git writes there is 0640 (directories
	// 0750) whatever the umask; collab's repos.Configure keeps it so.
	cmd := exec.CommandContext(ctx, "git", "init", "--quiet", "--bare", "--initial-branch=main", "--shared=0640", "--", dir)
	cmd.Env = CleanEnv(os.Environ())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git init %s: %w: %s", dir, err, bytes.TrimSpace(out))
	}
	return nil
}

// Error is a failed git command with what it said on stderr.
type Error struct {
	Args   []string
	Code   int
	Stderr string
	Err    error
}

func (e *Error) Error() string {
	return fmt.Sprintf("git %s: %v: %s", strings.Join(e.Args, " "), e.Err, strings.TrimSpace(e.Stderr))
}

func (e *Error) Unwrap() error { return e.Err }

// Run runs git with args and stdin (may be nil) and returns its stdout.
func (r Repo) Run(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	cmd := r.Command(ctx, args...)
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		return out.Bytes(), failed(args, errb.String(), err)
	}
	return out.Bytes(), nil
}

// failed is the Error of git run with args that ended in err (from Run or
// Wait) after saying stderr.
func failed(args []string, stderr string, err error) *Error {
	code := -1
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	}
	return &Error{Args: args, Code: code, Stderr: stderr, Err: err}
}

// ExitCode is the exit code of a failed git command, or -1.
func ExitCode(err error) int {
	var ge *Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// IsOID reports whether s is a full lowercase hex object id (SHA-1, or
// SHA-256 for repositories that use it).
func IsOID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// ResolveRef returns the commit a full ref name points to, or ok=false when
// the ref does not exist.
func (r Repo) ResolveRef(ctx context.Context, ref string) (oid string, ok bool, err error) {
	out, err := r.Run(ctx, nil, "rev-parse", "--verify", "--quiet", "--end-of-options", ref+"^{commit}")
	if ExitCode(err) == 1 {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return strings.TrimSpace(string(out)), true, nil
}

// SymbolicRef returns the ref that ref, a full ref name, finally points
// to when it is a symbolic ref (even one whose target does not exist yet),
// or ok=false when it is an ordinary ref or none. receive-pack updates and
// deletes a symref's target under the symref's own name, so whoever
// decides about a ref by its name must ask this first.
func (r Repo) SymbolicRef(ctx context.Context, ref string) (target string, ok bool, err error) {
	if !IsFullRef(ref) {
		return "", false, fmt.Errorf("symbolic-ref %q: not a full ref name", ref)
	}
	out, err := r.Run(ctx, nil, "symbolic-ref", "--quiet", ref)
	if ExitCode(err) == 1 {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return strings.TrimSpace(string(out)), true, nil
}

// MergeBase returns the best common ancestor of a and b (object ids), or
// ok=false when they share no history.
func (r Repo) MergeBase(ctx context.Context, a, b string) (base string, ok bool, err error) {
	if !IsOID(a) || !IsOID(b) {
		return "", false, fmt.Errorf("merge-base %q %q: not object ids", a, b)
	}
	out, err := r.Run(ctx, nil, "merge-base", a, b)
	if ExitCode(err) == 1 {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return strings.TrimSpace(string(out)), true, nil
}

// IsAncestor reports whether commit a is an ancestor of (or equal to) b.
func (r Repo) IsAncestor(ctx context.Context, a, b string) (bool, error) {
	if !IsOID(a) || !IsOID(b) {
		return false, fmt.Errorf("is-ancestor %q %q: not object ids", a, b)
	}
	_, err := r.Run(ctx, nil, "merge-base", "--is-ancestor", a, b)
	if ExitCode(err) == 1 {
		return false, nil
	}
	return err == nil, err
}

// HasObject reports whether the object oid exists.
func (r Repo) HasObject(ctx context.Context, oid string) (bool, error) {
	if !IsOID(oid) {
		return false, fmt.Errorf("cat-file %q: not an object id", oid)
	}
	_, err := r.Run(ctx, nil, "cat-file", "-e", oid)
	if ExitCode(err) == 1 || ExitCode(err) == 128 {
		return false, nil
	}
	return err == nil, err
}

// RefUpdate is one line of an update-ref transaction. Old "" means "do not
// check"; ZeroOID as Old means "must not exist"; New ZeroOID deletes.
type RefUpdate struct {
	Ref, New, Old string
}

// UpdateRefs applies all updates in one atomic update-ref transaction.
func (r Repo) UpdateRefs(ctx context.Context, updates []RefUpdate) error {
	if len(updates) == 0 {
		return nil
	}
	in, err := refUpdateLines(updates)
	if err != nil {
		return err
	}
	_, err = r.Run(ctx, bytes.NewReader(in), updateRefArgs()...)
	return err
}

// Refs returns the refs under the given prefixes (e.g. "refs/heads/") and
// the objects they point to.
func (r Repo) Refs(ctx context.Context, prefixes ...string) (map[string]string, error) {
	out, err := r.Run(ctx, nil, append([]string{"for-each-ref", "--format=%(objectname) %(refname)", "--"}, prefixes...)...)
	if err != nil {
		return nil, err
	}
	refs := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		oid, ref, ok := strings.Cut(line, " ")
		if ok {
			refs[ref] = oid
		}
	}
	return refs, nil
}

// CountRefs is how many refs there are under the given prefixes (each
// ending in "/"), read from the files git keeps them in (packed-refs and
// the loose refs) without starting git, which costs more than the reading
// for a repository of ordinary size; git's own listing where it keeps
// them otherwise (reftable).
func (r Repo) CountRefs(ctx context.Context, prefixes ...string) (int, error) {
	if _, err := os.Stat(filepath.Join(r.Dir, "reftable")); errors.Is(err, os.ErrNotExist) {
		if n, err := countRefFiles(r.Dir, prefixes); err == nil {
			return n, nil
		}
	}
	out, err := r.Run(ctx, nil, append([]string{"for-each-ref", "--format=.", "--"}, prefixes...)...)
	if err != nil {
		return 0, err
	}
	return bytes.Count(out, []byte{'\n'}), nil
}

// countRefFiles counts the refs under prefixes in gitDir's packed-refs
// and loose ref files, each name once.
func countRefFiles(gitDir string, prefixes []string) (int, error) {
	seen := map[string]bool{}
	under := func(name string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
		return false
	}
	packed, err := os.ReadFile(filepath.Join(gitDir, "packed-refs"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, err
	}
	for _, line := range bytes.Split(packed, []byte{'\n'}) {
		if len(line) == 0 || line[0] == '#' || line[0] == '^' {
			continue
		}
		if _, name, ok := bytes.Cut(line, []byte{' '}); ok && under(string(name)) {
			seen[string(name)] = true
		}
	}
	for _, p := range prefixes {
		base := filepath.Join(gitDir, filepath.FromSlash(strings.TrimSuffix(p, "/")))
		err := filepath.WalkDir(base, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, os.ErrNotExist) {
					return nil
				}
				return err
			}
			if d.Type().IsRegular() && !strings.HasSuffix(path, ".lock") {
				rel, err := filepath.Rel(gitDir, path)
				if err != nil {
					return err
				}
				seen[filepath.ToSlash(rel)] = true
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	return len(seen), nil
}

// Commit is what the hooks need of a commit.
type Commit struct {
	OID     string
	Parents []string
	// Patch, Fixes and ChangeID are the values of the Patch:, Fixes: and
	// (Gerrit's) Change-Id: trailers of the message's last paragraph (git
	// interpret-trailers' rules).
	Patch    []string
	Fixes    []string
	ChangeID []string
	// Message is the raw message (re-encoded to UTF-8 when the commit
	// declares another encoding); only filled by Commits.
	Message []byte
}

const (
	trailerFmt = "%(trailers:key=Patch,valueonly,unfold,separator=%x1f)%x00%(trailers:key=Fixes,valueonly,unfold,separator=%x1f)" +
		"%x00%(trailers:key=Change-Id,valueonly,unfold,separator=%x1f)"
	scanFmt = "--format=%H%x00%P%x00" + trailerFmt
	fullFmt = scanFmt + "%x00%B"
)

// Commits returns the given commits (object ids) with their messages, in
// the order asked.
func (r Repo) Commits(ctx context.Context, oids ...string) ([]Commit, error) {
	for _, o := range oids {
		if !IsOID(o) {
			return nil, fmt.Errorf("log %q: not an object id", o)
		}
	}
	out, err := r.Run(ctx, nil, append([]string{"log", "-z", "--no-walk=unsorted", fullFmt, "--end-of-options"}, oids...)...)
	if err != nil {
		return nil, err
	}
	var cs []Commit
	err = parse(bytes.NewReader(out), true, func(c Commit) error {
		cs = append(cs, c)
		return nil
	})
	return cs, err
}

// Pushed is what proc-receive needs to know of a pushed tip against the
// branch it targets, from one git process.
type Pushed struct {
	// Tip is the pushed commit, with its message.
	Tip Commit
	// New are the commits the tip brings that the branch lacks (TIP ^BRANCH),
	// newest first; empty when the tip is already on the branch.
	New map[string]bool
	// Commits are the new commits by object id, with their parents and
	// trailers; only those that carry an identity trailer (Patch: or
	// Change-Id:) and the tip keep their message: a stack's patches are
	// made from them.
	Commits map[string]Commit
	// Boundary are the excluded parents of New: the branch commits the new
	// ones were made on. Exactly one is the merge base; more (a topic that
	// merged the branch in) leave the choice to MergeBase.
	Boundary []string
	// Truncated: the walk stopped at the limit; New and Boundary are partial.
	Truncated bool
}

// PushedRange walks TIP ^BRANCHREF with its boundary (git log --boundary),
// reading at most limit new commits: in the common case (a few commits on
// some commit of the branch) that gives the tip's message, what is new and
// the merge base at once, where git log --no-walk plus git merge-base took
// two processes. ok is false when branchRef does not exist.
func (r Repo) PushedRange(ctx context.Context, tip, branchRef string, limit int) (p Pushed, ok bool, err error) {
	if !IsOID(tip) || !IsFullRef(branchRef) {
		return Pushed{}, false, fmt.Errorf("log %q %q: not an object id and a full ref", tip, branchRef)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := r.Command(ctx, "log", "-z", "--boundary", "--format=%m"+fullFmt[len("--format="):], "--end-of-options", tip, "^"+branchRef, "--")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return Pushed{}, false, fmt.Errorf("git log: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return Pushed{}, false, fmt.Errorf("git log: %w", err)
	}
	p.New = map[string]bool{}
	p.Commits = map[string]Commit{}
	errStop := errors.New("limit")
	perr := parseMarked(stdout, func(mark byte, c Commit) error {
		if mark == '-' {
			p.Boundary = append(p.Boundary, c.OID)
			return nil
		}
		if c.OID == tip {
			p.Tip = c
		}
		if len(p.New) >= limit {
			p.Truncated = true
			return errStop
		}
		p.New[c.OID] = true
		if len(c.Patch) == 0 && len(c.ChangeID) == 0 && c.OID != tip {
			c.Message = nil
		}
		p.Commits[c.OID] = c
		return nil
	})
	if errors.Is(perr, errStop) {
		cancel()
		_ = cmd.Wait()
		perr = nil
	} else if werr := cmd.Wait(); werr != nil {
		if strings.Contains(errb.String(), "bad revision '^"+branchRef+"'") {
			return Pushed{}, false, nil
		}
		return Pushed{}, false, &Error{Args: []string{"log", "--boundary"}, Code: ExitCode(werr), Stderr: errb.String(), Err: werr}
	}
	if perr != nil {
		return Pushed{}, false, perr
	}
	if p.Tip.OID == "" {
		// The tip is on the branch: nothing new. Its message is still wanted.
		cs, err := r.Commits(ctx, tip)
		if err != nil || len(cs) != 1 {
			return Pushed{}, false, fmt.Errorf("read commit %s: %w", tip, err)
		}
		p.Tip = cs[0]
	}
	return p, true, nil
}

// IsFullRef reports whether s looks like a full ref name git cannot take
// for anything else: refs/…, none of the characters of revision syntax.
func IsFullRef(s string) bool {
	return strings.HasPrefix(s, "refs/") && !strings.ContainsAny(s, " ~^:?*[\\\x00\n\t") &&
		!strings.Contains(s, "..") && !strings.Contains(s, "@{") && !strings.HasSuffix(s, "/") && !strings.HasSuffix(s, ".lock")
}

// MergeBaseRef is MergeBase of commit a and the commit ref (a full ref
// name) points to.
func (r Repo) MergeBaseRef(ctx context.Context, a, ref string) (base string, ok bool, err error) {
	if !IsOID(a) || !IsFullRef(ref) {
		return "", false, fmt.Errorf("merge-base %q %q: not an object id and a full ref", a, ref)
	}
	out, err := r.Run(ctx, nil, "merge-base", "--end-of-options", a, ref)
	if ExitCode(err) == 1 {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return strings.TrimSpace(string(out)), true, nil
}

// CommitTimes returns the committer time of each of oids (commits).
func (r Repo) CommitTimes(ctx context.Context, oids ...string) (map[string]time.Time, error) {
	for _, o := range oids {
		if !IsOID(o) {
			return nil, fmt.Errorf("log %q: not an object id", o)
		}
	}
	out := map[string]time.Time{}
	if len(oids) == 0 {
		return out, nil
	}
	b, err := r.Run(ctx, nil, append([]string{"log", "--no-walk=unsorted", "--format=%H %ct", "--end-of-options"}, oids...)...)
	if err != nil {
		return nil, err
	}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		oid, t, _ := strings.Cut(l, " ")
		if sec, err := strconv.ParseInt(t, 10, 64); err == nil && IsOID(oid) {
			out[oid] = time.Unix(sec, 0)
		}
	}
	return out, nil
}

// Unreached reports whether commit oid holds history that none of known
// (commits) reaches: work that would be lost with the refs naming it.
func (r Repo) Unreached(ctx context.Context, oid string, known []string) (bool, error) {
	if !IsOID(oid) {
		return false, fmt.Errorf("rev-list %q: not an object id", oid)
	}
	var in strings.Builder
	in.WriteString(oid + "\n")
	for _, k := range known {
		if IsOID(k) {
			in.WriteString("^" + k + "\n")
		}
	}
	out, err := r.Run(ctx, strings.NewReader(in.String()), "rev-list", "-n", "1", "--stdin")
	if err != nil {
		return false, err
	}
	return len(bytes.TrimSpace(out)) > 0, nil
}

// DefaultBranch is the branch HEAD names (without refs/heads/), or "main".
func (r Repo) DefaultBranch(ctx context.Context) string {
	out, err := r.Run(ctx, nil, "symbolic-ref", "--quiet", "HEAD")
	if b, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "refs/heads/"); err == nil && ok && b != "" {
		return b
	}
	return "main"
}

// ReflogEntry is one line of a ref's reflog: the ref moved from Old to New,
// by the committer identity git had (Name, Email) at Time.
type ReflogEntry struct {
	Old, New    string
	Name, Email string
	Time        time.Time
	// Message is what the mover said (update-ref -m; "push" for a push).
	Message string
}

// Reflog returns the reflog of branch (without refs/heads/), oldest
// first, or nothing when there is none. It reads the file git appends to
// (logs/refs/heads/BRANCH) rather than starting git: a line is
// "OLD NEW NAME <EMAIL> UNIX TZ\tMESSAGE".
func (r Repo) Reflog(branch string) ([]ReflogEntry, error) {
	ref := "refs/heads/" + branch
	if !IsFullRef(ref) {
		return nil, fmt.Errorf("reflog %q: bad branch name", branch)
	}
	b, err := os.ReadFile(r.Dir + "/logs/" + ref)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read reflog of %s: %w", branch, err)
	}
	var out []ReflogEntry
	for _, line := range strings.Split(string(b), "\n") {
		head, msg, _ := strings.Cut(line, "\t")
		if len(head) < 83 || !IsOID(head[:40]) || !IsOID(head[41:81]) {
			continue
		}
		e := ReflogEntry{Old: head[:40], New: head[41:81], Message: msg}
		ident := head[82:]
		lt, gt := strings.LastIndexByte(ident, '<'), strings.LastIndexByte(ident, '>')
		if lt < 0 || gt < lt {
			continue
		}
		e.Name, e.Email = strings.TrimSpace(ident[:lt]), ident[lt+1:gt]
		if f := strings.Fields(ident[gt+1:]); len(f) >= 1 {
			if sec, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				e.Time = time.Unix(sec, 0)
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// Walk streams the commits that `git log --stdin` selects from revs (one
// revision per line, "^OID" to exclude), newest first, without their
// messages. fn may stop the walk by returning an error.
func (r Repo) Walk(ctx context.Context, revs []string, fn func(Commit) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := r.Command(ctx, "log", "-z", scanFmt, "--stdin")
	cmd.Stdin = strings.NewReader(strings.Join(revs, "\n") + "\n")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("git log: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("git log: %w", err)
	}
	perr := parse(stdout, false, fn)
	if perr != nil {
		cancel()
		_ = cmd.Wait()
		return perr
	}
	if err := cmd.Wait(); err != nil {
		return &Error{Args: []string{"log", "--stdin"}, Code: ExitCode(err), Stderr: errb.String(), Err: err}
	}
	return nil
}

// parse reads NUL-terminated fields: OID, parents, Patch, Fixes and
// Change-Id trailers and, when full, the message (the NUL of -z ends the
// last one).
func parse(r io.Reader, full bool, fn func(Commit) error) error {
	return parseRecords(r, full, false, func(_ byte, c Commit) error { return fn(c) })
}

// parseMarked is parse for records that start with git's %m mark ('>' for
// a commit of the walk, '-' for a boundary commit), always full.
func parseMarked(r io.Reader, fn func(mark byte, c Commit) error) error {
	return parseRecords(r, true, true, fn)
}

func parseRecords(r io.Reader, full, marked bool, fn func(mark byte, c Commit) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	n := 5
	if full {
		n = 6
	}
	field := func() ([]byte, error) {
		b, err := br.ReadBytes(0)
		if err != nil {
			return nil, err
		}
		return b[:len(b)-1], nil
	}
	for {
		var fs [6][]byte
		for i := 0; i < n; i++ {
			b, err := field()
			if err != nil {
				if i == 0 && errors.Is(err, io.EOF) && len(b) == 0 {
					return nil
				}
				return fmt.Errorf("git log: truncated output: %w", err)
			}
			fs[i] = b
		}
		var mark byte
		if marked {
			if len(fs[0]) == 0 {
				return fmt.Errorf("git log: record without a mark")
			}
			mark, fs[0] = fs[0][0], fs[0][1:]
		}
		oid := string(fs[0])
		if !IsOID(oid) {
			return fmt.Errorf("git log: unexpected record %q", clip(oid))
		}
		c := Commit{OID: oid, Parents: strings.Fields(string(fs[1])), Patch: values(fs[2]), Fixes: values(fs[3]), ChangeID: values(fs[4])}
		if full {
			c.Message = fs[5]
		}
		if err := fn(mark, c); err != nil {
			return err
		}
	}
}

func values(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	var out []string
	for _, v := range strings.Split(string(b), "\x1f") {
		out = append(out, strings.TrimSpace(v))
	}
	return out
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// CheckConnectivity fails when an object that a ref reaches is missing
// (git fsck --connectivity-only): what a copy of a repository made beside a
// running git gc must be checked for.
func (r Repo) CheckConnectivity(ctx context.Context) error {
	_, err := r.Run(ctx, nil, "fsck", "--connectivity-only", "--no-dangling", "--no-progress", "--no-reflogs")
	return err
}

// HTTPBackendPath is git's http-backend program in git's exec path: run
// directly, a request saves the start of git's wrapper that `git
// http-backend` pays (a push makes two requests), as a CGI server that
// names the program does.
func HTTPBackendPath(ctx context.Context) (string, error) {
	cmd := exec.CommandContext(ctx, "git", "--exec-path")
	cmd.Env = CleanEnv(os.Environ())
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git --exec-path: %w", err)
	}
	p := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
		return "", fmt.Errorf("no git-http-backend in git's exec path %s", filepath.Dir(p))
	}
	return p, nil
}

// HTTPBackend returns stock git's smart HTTP server, `git http-backend`,
// a CGI program, to be run on a request's body and output by the caller.
// env is its whole environment: the caller builds it (the CGI variables it
// decided, the hooks' hand-off), since nothing of a client's request may
// reach git but what http-backend needs.
// path is the program itself (HTTPBackendPath), or "" for git's wrapper
// to find it.
func HTTPBackend(ctx context.Context, path string, env []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "git", "http-backend")
	if path != "" {
		cmd = exec.CommandContext(ctx, path)
	}
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// refsSettle is how old the newest change a RefsStamp covers must be: a
// directory's time is kept at the kernel's coarse clock, so two changes in
// one tick show as one.
const refsSettle = time.Second

// RefsStamp is a fingerprint of the branches and tags of the repository
// at gitDir, read from the file system without starting git: HEAD,
// packed-refs and the times of the directories under refs/heads/ and
// refs/tags/ (creating, moving or deleting a loose ref renames or removes
// a file in its directory). Two equal stamps mean the same branches and
// tags at the same objects; ok is false
// where it cannot tell (reftable, or a change within the last second).
func RefsStamp(gitDir string, now time.Time) (stamp string, ok bool) {
	if _, err := os.Stat(filepath.Join(gitDir, "reftable")); !errors.Is(err, os.ErrNotExist) {
		return "", false
	}
	var b strings.Builder
	newest := time.Time{}
	note := func(name string, fi fs.FileInfo) {
		if fi.ModTime().After(newest) {
			newest = fi.ModTime()
		}
		fmt.Fprintf(&b, "%s %d %d;", name, fi.ModTime().UnixNano(), fi.Size())
	}
	head, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return "", false
	}
	b.Write(head)
	for _, f := range []string{"HEAD", "packed-refs"} {
		fi, err := os.Stat(filepath.Join(gitDir, f))
		switch {
		case errors.Is(err, os.ErrNotExist):
			b.WriteString(f + " none;")
		case err != nil:
			return "", false
		default:
			note(f, fi)
		}
	}
	for _, dir := range []string{"heads", "tags"} {
		err = filepath.WalkDir(filepath.Join(gitDir, "refs", dir), func(path string, d fs.DirEntry, err error) error {
			if errors.Is(err, os.ErrNotExist) && path == filepath.Join(gitDir, "refs", dir) {
				b.WriteString(dir + " none;")
				return nil
			}
			if err != nil {
				return err
			}
			if !d.IsDir() {
				return nil
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			note(path, fi)
			return nil
		})
		if err != nil {
			return "", false
		}
	}
	if now.Sub(newest) < refsSettle {
		return "", false
	}
	return b.String(), true
}
