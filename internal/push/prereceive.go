package push

import (
	"context"
	"strings"
	"time"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/collabref"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/pushlimit"
)

// Namespaces of refs the hooks treat specially.
const (
	ForPrefix   = "refs/for/"
	HeadsPrefix = "refs/heads/"
)

// PreReceive checks a whole push before any ref moves: the pusher's write
// access (unless e.WriteChecked), the push limits (pushlimit), the push
// options, no client write under refs/collab/, no refs/for deletes, and the
// branch rules (which always need e.DB). A refusal rejects every ref of the
// push; its message is one line for the pusher. The message and trailers
// of a refs/for tip are checked by proc-receive, which reads that commit
// anyway: one git process less per push, and the refusal names the ref it
// concerns.
func PreReceive(ctx context.Context, e *Env, updates []Update, rawOpts []string) error {
	start := time.Now()
	log := e.logger().With("PRINCIPAL", e.Principal, "REPO", e.Repo)
	err := preReceive(ctx, e, updates, rawOpts)
	outcome := "ok"
	if err != nil {
		outcome = "refused"
		if fault.KindOf(err) == fault.Internal {
			outcome = "error"
		}
	}
	if err != nil {
		log = log.With("error", err.Error())
	}
	for _, u := range updates {
		log.Info("pre-receive", "REF", u.Ref, "OLD_OID", u.Old, "NEW_OID", u.New, "OUTCOME", outcome, "DURATION_MS", ms(start))
	}
	return err
}

func preReceive(ctx context.Context, e *Env, updates []Update, rawOpts []string) error {
	if len(updates) == 0 {
		return nil
	}
	if !e.WriteChecked {
		if _, err := access.Require(ctx, e.DB.R(), e.Principal, e.Repo, access.Write); err != nil {
			return err
		}
	}
	lim, err := e.limits(ctx)
	if err != nil {
		return err
	}
	if err := lim.Check(pushlimit.Push{Refs: len(updates), ForRefs: countFor(updates), Options: rawOpts}); err != nil {
		return err
	}
	if _, err := ParseOptions(rawOpts); err != nil {
		return err
	}
	for _, u := range updates {
		switch {
		case strings.HasPrefix(u.Ref, collabref.Prefix):
			verb := "update"
			switch {
			case u.New == git.ZeroOID:
				verb = "delete"
			case u.Old == git.ZeroOID:
				verb = "create"
			}
			return fault.New(fault.Denied, "cannot %s %s: refs/collab/ is the forge's own record and only the forge writes it", verb, u.Ref)
		case strings.HasPrefix(u.Ref, ForPrefix):
			if u.New == git.ZeroOID {
				return fault.New(fault.Usage, "cannot delete %s: refs/for/ refs do not exist; close a patch with 'patch close'", u.Ref)
			}
			if _, err := BaseOf(u.Ref); err != nil {
				return err
			}
			if _, err := RefOptions(rawOpts, u.Ref); err != nil {
				return err
			}
		}
	}
	return enforceRules(ctx, e, updates)
}

// countFor is the number of refs/for refs among us.
func countFor(us []Update) int {
	n := 0
	for _, u := range us {
		if strings.HasPrefix(u.Ref, ForPrefix) {
			n++
		}
	}
	return n
}

// BaseOf returns the target branch of a refs/for/BASE ref; BASE may also
// be spelled refs/heads/BASE, and be followed by Gerrit's %options
// suffix, as Gerrit allows.
func BaseOf(ref string) (string, error) {
	bare, _ := SplitFor(ref)
	b := strings.TrimPrefix(strings.TrimPrefix(bare, ForPrefix), HeadsPrefix)
	if b == "" || strings.HasPrefix(b, "-") || !git.IsFullRef(HeadsPrefix+b) {
		return "", fault.New(fault.Usage, "bad target %s: push to refs/for/BRANCH", ref)
	}
	return b, nil
}
