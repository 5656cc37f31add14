package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// updateRefArgs run one update-ref transaction read from stdin. A ref
// lock left by a git whose caller was killed (it finishes on its own) is
// waited for rather than failed on: git's default is 100 ms.
func updateRefArgs() []string {
	return []string{"-c", "core.filesRefLockTimeout=2000", "update-ref", "--stdin"}
}

// refUpdateLines is updates as update-ref --stdin lines, or an error
// (and nothing) when a ref name would break the line format.
func refUpdateLines(updates []RefUpdate) ([]byte, error) {
	var b bytes.Buffer
	for _, u := range updates {
		if strings.ContainsAny(u.Ref, "\n\x00 ") {
			return nil, fmt.Errorf("update-ref: bad ref name %q", u.Ref)
		}
		switch {
		case u.New == ZeroOID && u.Old == "":
			fmt.Fprintf(&b, "delete %s\n", u.Ref)
		case u.New == ZeroOID:
			fmt.Fprintf(&b, "delete %s %s\n", u.Ref, u.Old)
		case u.Old == "":
			fmt.Fprintf(&b, "update %s %s\n", u.Ref, u.New)
		default:
			fmt.Fprintf(&b, "update %s %s %s\n", u.Ref, u.New, u.Old)
		}
	}
	return b.Bytes(), nil
}

// RefUpdater is a git update-ref --stdin started before its updates are
// known, so that git's start (a millisecond or two) overlaps the caller's
// own work instead of following it. Commit hands it the updates; Abort,
// always deferred, ends it with nothing written.
//
// Starting early changes no ordering: git 2.39's update-ref --stdin only
// queues plain update and delete lines as it reads them, and reads, locks
// and checks the refs (and packed-refs) in its commit at EOF. Until
// Commit closes stdin it holds no lock and has read no ref, so a caller
// that takes its own lock before Commit orders this update after every
// update made under that lock, however early git started.
type RefUpdater struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr bytes.Buffer
	args   []string
	done   bool
}

// StartRefUpdate starts git update-ref --stdin on r, with the environment
// and directory r.Run would give it; ctx ending kills it.
func (r Repo) StartRefUpdate(ctx context.Context) (*RefUpdater, error) {
	u := &RefUpdater{args: updateRefArgs()}
	u.cmd = r.Command(ctx, u.args...)
	u.cmd.Stderr = &u.stderr
	stdin, err := u.cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("git update-ref: %w", err)
	}
	u.stdin = stdin
	if err := u.cmd.Start(); err != nil {
		return nil, fmt.Errorf("git update-ref: %w", err)
	}
	return u, nil
}

// Commit applies updates in one atomic transaction, as UpdateRefs does,
// and waits for git. A bad ref name is refused before git reads anything.
// Commit may be called once.
func (u *RefUpdater) Commit(updates []RefUpdate) error {
	if u.done {
		return errors.New("update-ref: already finished")
	}
	in, err := refUpdateLines(updates)
	if err != nil {
		u.Abort()
		return err
	}
	_, werr := u.stdin.Write(in)
	return u.finish(werr)
}

// Abort ends git with nothing written (update-ref --stdin commits an
// empty transaction on empty input) and waits for it. It does nothing
// after Commit or another Abort.
func (u *RefUpdater) Abort() {
	if !u.done {
		_ = u.finish(nil)
	}
}

// finish closes git's stdin and waits for it; git's failure, with what it
// said, wins over a failed write (git exited, so the pipe broke).
func (u *RefUpdater) finish(werr error) error {
	u.done = true
	cerr := u.stdin.Close()
	if err := u.cmd.Wait(); err != nil {
		return failed(u.args, u.stderr.String(), err)
	}
	switch {
	case werr != nil:
		return fmt.Errorf("git update-ref: write: %w", werr)
	case cerr != nil:
		return fmt.Errorf("git update-ref: close: %w", cerr)
	}
	return nil
}
