package push

import (
	"context"
	"strings"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/branches"
	"github.com/collab-forge/collab/internal/git"
)

// TouchesBranches reports whether any update creates, moves or deletes a
// branch: such a push must read the repository's branch rules, whatever
// serve already checked (hook.go opens the database for it).
func TouchesBranches(us []Update) bool {
	for _, u := range us {
		if strings.HasPrefix(u.Ref, HeadsPrefix) {
			return true
		}
	}
	return false
}

// enforceRules refuses a push that makes a move branch rules forbid
// (branches.Decide); a repository without rules costs one query.
func enforceRules(ctx context.Context, e *Env, updates []Update) error {
	if !TouchesBranches(updates) {
		return nil
	}
	rules, err := branches.List(ctx, e.DB.R(), e.Repo)
	if err != nil || len(rules) == 0 {
		return err
	}
	byBranch := make(map[string]branches.Rule, len(rules))
	for _, r := range rules {
		byBranch[r.Branch] = r
	}
	admin := -1 // unknown until a rule needs it
	for _, u := range updates {
		if !strings.HasPrefix(u.Ref, HeadsPrefix) {
			continue
		}
		// A symbolic ref among the branches (an operator's alias, say
		// master for main) is updated and deleted through: the rule of
		// the branch it names decides. git hands the hook the alias's
		// name with its target's old value.
		ref := u.Ref
		if target, sym, err := e.Git.SymbolicRef(ctx, u.Ref); err != nil {
			return err
		} else if sym {
			ref = target
		}
		b, ok := strings.CutPrefix(ref, HeadsPrefix)
		if !ok {
			continue
		}
		r, ok := byBranch[b]
		if !ok {
			continue
		}
		move := branches.FastForward
		switch {
		case u.New == git.ZeroOID:
			move = branches.Remove
		case u.Old == git.ZeroOID:
			move = branches.Create
		default:
			ff, err := e.Git.IsAncestor(ctx, u.Old, u.New)
			if err != nil {
				return err
			}
			if !ff {
				move = branches.Rewind
			}
		}
		if admin < 0 {
			lvl, err := access.Of(ctx, e.DB.R(), e.Principal, e.Repo)
			if err != nil {
				return err
			}
			admin = 0
			if lvl >= access.Admin {
				admin = 1
			}
		}
		if err := branches.Decide(r, move, admin == 1); err != nil {
			return err
		}
	}
	return nil
}
