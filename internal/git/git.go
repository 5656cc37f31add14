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
	"os"
	"os/exec"
	"strings"
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
	// extra are variables collab sets itself for every command of this
	// Repo (With); they win over the environment.
	extra []string
}

// Open returns the repository at dir run with a clean environment.
func Open(dir string) Repo { return Repo{Dir: dir} }

// InHook returns the repository at dir run with the hook's environment.
func InHook(dir string) Repo { return Repo{Dir: dir, Mode: Hook} }

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
	if r.Mode == Hook {
		env = os.Environ()
	} else {
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
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// Init makes a bare repository at dir (with branch main), in a clean
// environment.
func Init(ctx context.Context, dir string) error {
	cmd := exec.CommandContext(ctx, "git", "init", "--quiet", "--bare", "--initial-branch=main", "--", dir)
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
		code := -1
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		return out.Bytes(), &Error{Args: args, Code: code, Stderr: errb.String(), Err: err}
	}
	return out.Bytes(), nil
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
	var b bytes.Buffer
	for _, u := range updates {
		if strings.ContainsAny(u.Ref, "\n\x00 ") {
			return fmt.Errorf("update-ref: bad ref name %q", u.Ref)
		}
		if u.New == ZeroOID {
			fmt.Fprintf(&b, "delete %s %s\n", u.Ref, u.Old)
		} else if u.Old == "" {
			fmt.Fprintf(&b, "update %s %s\n", u.Ref, u.New)
		} else {
			fmt.Fprintf(&b, "update %s %s %s\n", u.Ref, u.New, u.Old)
		}
	}
	_, err := r.Run(ctx, &b, "update-ref", "--stdin")
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

// Commit is what the hooks need of a commit.
type Commit struct {
	OID     string
	Parents []string
	// Patch and Fixes are the values of the Patch: and Fixes: trailers of
	// the message's last paragraph (git interpret-trailers' rules).
	Patch []string
	Fixes []string
	// Message is the raw message (re-encoded to UTF-8 when the commit
	// declares another encoding); only filled by Commits.
	Message []byte
}

const (
	trailerFmt = "%(trailers:key=Patch,valueonly,unfold,separator=%x1f)%x00%(trailers:key=Fixes,valueonly,unfold,separator=%x1f)"
	scanFmt    = "--format=%H%x00%P%x00" + trailerFmt
	fullFmt    = scanFmt + "%x00%B"
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

// TipAndRef returns commit oid with its message and the commit ref points
// to, in one git process; ok is false when ref does not exist.
func (r Repo) TipAndRef(ctx context.Context, oid, ref string) (tip Commit, refOID string, ok bool, err error) {
	if !IsOID(oid) || !strings.HasPrefix(ref, "refs/") {
		return Commit{}, "", false, fmt.Errorf("log %q %q: not an object id and a full ref", oid, ref)
	}
	// --ignore-missing drops a missing ref; --no-walk=unsorted drops a ref
	// that points at oid itself, so one record is ambiguous: ask again.
	out, err := r.Run(ctx, nil, "log", "-z", "--no-walk=unsorted", "--ignore-missing", fullFmt, "--end-of-options", oid, ref, "--")
	if err != nil {
		return Commit{}, "", false, err
	}
	var cs []Commit
	if err := parse(bytes.NewReader(out), true, func(c Commit) error { cs = append(cs, c); return nil }); err != nil {
		return Commit{}, "", false, err
	}
	switch {
	case len(cs) == 2 && cs[0].OID == oid:
		return cs[0], cs[1].OID, true, nil
	case len(cs) == 1 && cs[0].OID == oid:
		refOID, ok, err = r.ResolveRef(ctx, ref)
		return cs[0], refOID, ok, err
	}
	return Commit{}, "", false, fmt.Errorf("log %s %s: unexpected output", oid, ref)
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

// parse reads NUL-terminated fields: OID, parents, Patch trailers, Fixes
// trailers and, when full, the message (the NUL of -z ends the last one).
func parse(r io.Reader, full bool, fn func(Commit) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	n := 4
	if full {
		n = 5
	}
	field := func() ([]byte, error) {
		b, err := br.ReadBytes(0)
		if err != nil {
			return nil, err
		}
		return b[:len(b)-1], nil
	}
	for {
		var fs [5][]byte
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
		oid := string(fs[0])
		if !IsOID(oid) {
			return fmt.Errorf("git log: unexpected record %q", clip(oid))
		}
		c := Commit{OID: oid, Parents: strings.Fields(string(fs[1])), Patch: values(fs[2]), Fixes: values(fs[3])}
		if full {
			c.Message = fs[4]
		}
		if err := fn(c); err != nil {
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
