// Package git runs stock git on a bare repository for collab's hooks and
// fsck. Every call takes a context; user values never reach git as options
// (object ids are checked hex, refs come after "--" or on stdin).
package git

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// ZeroOID is git's all-zero object id: a ref that does not exist.
const ZeroOID = "0000000000000000000000000000000000000000"

// Repo is a bare repository. Commands inherit the process environment, so
// that in pre-receive they see the push's quarantined objects.
type Repo struct {
	Dir string
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

func (r Repo) command(ctx context.Context, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "git", append([]string{"--git-dir=" + r.Dir}, args...)...)
}

// Run runs git with args and stdin (may be nil) and returns its stdout.
func (r Repo) Run(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	cmd := r.command(ctx, args...)
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

// exitCode is the exit code of a failed git command, or -1.
func exitCode(err error) int {
	var ge *Error
	if errors.As(err, &ge) {
		return ge.Code
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
	if exitCode(err) == 1 {
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
	if exitCode(err) == 1 {
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
	if exitCode(err) == 1 {
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
	if exitCode(err) == 1 || exitCode(err) == 128 {
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
	cmd := r.command(ctx, "log", "-z", scanFmt, "--stdin")
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
		return &Error{Args: []string{"log", "--stdin"}, Code: exitCode(err), Stderr: errb.String(), Err: err}
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
