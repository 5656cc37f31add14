package ops

import (
	"context"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/branches"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/hookdir"
	"github.com/collab-forge/collab/internal/hookenv"
	"github.com/collab-forge/collab/internal/pushlimit"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/store"
)

// GitSession is what a git transport needs to serve one clone, fetch or
// push: the repository checked for who, and for a push the hand-off its
// hooks get, read beside the check exactly as serve reads it for SSH, so
// pre-receive decides an HTTP push as it decides an SSH one.
type GitSession struct {
	Repo string // the repository's key
	Dir  string // its directory
	// Handoff is the hooks' hand-off for a push (zero for a read).
	Handoff hookenv.Handoff
	// InputSize bounds the pack of a push (receive.maxInputSize); 0: none.
	InputSize int64
}

// Git checks that who may read repository name (push: write) and, for a
// push, reads the push limits and branch rules the hooks decide with. An
// unreadable repository is NotFound exactly like a missing one; a
// readable one who may not write to is Denied.
func (s *Service) Git(ctx context.Context, who Actor, name string, push bool) (GitSession, error) {
	need := access.Read
	if push {
		need = access.Write
	}
	sc, err := s.repo(ctx, who, name, need)
	if err != nil {
		return GitSession{}, err
	}
	dir, err := s.repoDir(sc.key)
	if err != nil {
		return GitSession{}, err
	}
	g := GitSession{Repo: sc.key, Dir: dir}
	if !push {
		return g, nil
	}
	// git would unpack the push before any hook could refuse it.
	if err := store.ReadOnlyNow(s.Root.DBPath()); err != nil {
		return GitSession{}, err
	}
	settings, err := store.ReadSettings(ctx, s.DB.R())
	if err != nil {
		return GitSession{}, fault.Wrap(err, "forge database unavailable")
	}
	lim := pushlimit.Of(settings)
	rules, err := branches.List(ctx, s.DB.R(), sc.key)
	if err != nil {
		return GitSession{}, fault.Wrap(err, "forge database unavailable")
	}
	if len(rules) > 0 {
		// git http-backend runs the repository's own hooks, and skips a
		// pre-receive it cannot run: the gate fails closed (as serve's,
		// which reads the commands; here the whole push is refused).
		if why, _ := hookdir.GateDown(dir); why != "" {
			return GitSession{}, fault.New(fault.Denied, "the gate of %s cannot run (%s) and it has protected branches: pushes are refused until the operator runs collab-hook fsck", reponame.Display(sc.key), why)
		}
	}
	g.InputSize = lim.InputSize
	g.Handoff = hookenv.Handoff{Principal: who.Principal, Root: s.Root.Dir, URL: s.URL,
		Checked: hookenv.Check{Level: sc.lvl, Repo: sc.key, At: s.now()},
		Limits:  &lim, Rules: branches.PushRules(rules)}
	return g, nil
}
