package ops

import (
	"context"
	"time"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/branches"
	"github.com/collab-forge/collab/internal/pushcheck"
)

// PreReceive checks a whole push before any ref moves: the pusher's write
// access (unless e.WriteChecked), then pushcheck.Check with the push
// limits and branch rules of the hand-off, or else of the database. A
// refusal rejects every ref of the push; its message is one line for the
// pusher.
func (e *Push) PreReceive(ctx context.Context, updates []Update, rawOpts []string) error {
	start := time.Now()
	issue, err := preReceive(ctx, e, updates, rawOpts)
	log := e.logger()
	if issue != "" {
		// journalctl ISSUE=… finds the pushes refused for it.
		log = log.With("ISSUE", issue)
	}
	if err == nil && e.Passed != nil {
		log = log.With(e.Passed(updates)...)
	}
	pushcheck.Log(log, e.Principal, e.Repo, updates, err, start)
	return err
}

// preReceive decides; issue is the issue a refusal was about, if any.
func preReceive(ctx context.Context, e *Push, updates []Update, rawOpts []string) (issue string, err error) {
	if len(updates) == 0 {
		return "", nil
	}
	if !e.WriteChecked {
		if _, err := access.Require(ctx, e.DB.R(), e.Principal, e.Repo, access.Write); err != nil {
			return "", err
		}
	}
	lim, err := e.limits(ctx)
	if err != nil {
		return "", err
	}
	err = pushcheck.Check(ctx, pushcheck.Push{
		Principal: e.Principal, Repo: e.Repo, Updates: updates, Options: rawOpts,
		Limits: lim, Git: e.Git,
		Rules: func(ctx context.Context) (map[string]pushcheck.Rule, error) {
			if e.Rules != nil {
				return e.Rules, nil
			}
			list, err := branches.List(ctx, e.DB.R(), e.Repo)
			return branches.PushRules(list), err
		},
		Admin: func(ctx context.Context) (bool, error) {
			if e.Level != access.None {
				return e.Level >= access.Admin, nil
			}
			lvl, err := access.Of(ctx, e.DB.R(), e.Principal, e.Repo)
			return lvl >= access.Admin, err
		},
	})
	if err != nil {
		return "", err
	}
	// A token is checked on every push (CONTRACT.md "Fencing"), refs/for
	// ones by proc-receive inside the transaction that records them.
	return e.fenceTokens(ctx, updates, rawOpts)
}
