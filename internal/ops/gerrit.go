package ops

import (
	"context"
	"strings"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/ids"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/review"
	"github.com/collab-forge/collab/internal/store"
)

// FindPatches is a Gerrit change query as collab answers it (gerrit query,
// which git-review -d and -l run): the patches of one repository, or the
// patch an id names, looked for in every repository the actor may read
// when no repository is given (git-review -d names none).
type FindPatches struct {
	// Repo is a repository name; "" searches every readable one (ID must
	// be set then).
	Repo string
	// State is open, merged or closed in any case; "" means every state.
	State string
	// ID, when set, is a patch id or a prefix of one.
	ID string
	// Limit is the most patches returned, 1 to 1000.
	Limit int
}

// FindPatches finds the patches in names, newest first within a
// repository. As on Gerrit, a repository the actor may not read (or that
// does not exist) matches nothing rather than failing the query. The
// views carry no submit status: a query reads only the database.
func (s *Service) FindPatches(ctx context.Context, who Actor, in FindPatches) ([]review.Listed, error) {
	state := strings.ToLower(in.State)
	if state == "" {
		state = patches.All
	}
	if err := patches.CheckState(state); err != nil {
		return nil, err
	}
	if err := checkLimit(in.Limit); err != nil {
		return nil, err
	}
	if in.ID != "" {
		if _, err := ids.CheckPrefix(in.ID); err != nil {
			return nil, err
		}
	} else if in.Repo == "" {
		return nil, fault.NewField(fault.Usage, FieldRepo, "name a repository or a patch id")
	}
	var keys []string
	if in.Repo != "" {
		sc, err := s.repo(ctx, who, in.Repo, access.Read)
		if fault.KindOf(err) == fault.NotFound {
			return []review.Listed{}, nil
		}
		if err != nil {
			return nil, err
		}
		keys = []string{sc.key}
	} else {
		rs, err := s.Repos(ctx, who)
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			keys = append(keys, r.Name)
		}
	}
	out, err := s.findPatches(ctx, keys, in.ID, state, in.Limit, patches.Resolve)
	// git-review -d turns its argument into a change by lstrip('/c'),
	// meant for URLs like /c/123: an id that starts with 'c' (one in
	// sixteen) reaches the query without its leading c's. Where nothing
	// matches, the ids that are c's and then the one sent are looked for.
	// A patch whose own id starts with the stripped form still wins: for
	// git-review's 8-digit prefix, a 1 in 16^7 chance per patch.
	if err == nil && len(out) == 0 && in.ID != "" && in.ID[0] != 'c' {
		out, err = s.findPatches(ctx, keys, in.ID, state, in.Limit, patches.ResolveStripped)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// findPatches is FindPatches' search of the repositories keys, for the
// patch id names (a prefix, found by resolve) or else every patch in
// state.
func (s *Service) findPatches(ctx context.Context, keys []string, id, state string, limit int,
	resolve func(context.Context, store.Querier, string, string) (string, error)) ([]review.Listed, error) {
	out := []review.Listed{}
	err := s.DB.Read(ctx, func(tx store.Tx) error {
		for _, key := range keys {
			if len(out) == limit {
				return nil
			}
			var found []patches.Patch
			if id == "" {
				list, err := patches.List(ctx, tx, key, state, limit-len(out), "")
				if err != nil {
					return err
				}
				found = list
			} else {
				full, err := resolve(ctx, tx, key, id)
				if fault.KindOf(err) == fault.NotFound {
					continue
				}
				if err != nil {
					return err
				}
				p, err := patches.Get(ctx, tx, key, full)
				if err != nil {
					return err
				}
				if state == patches.All || string(p.State) == state {
					found = []patches.Patch{p}
				}
			}
			for _, p := range found {
				out = append(out, s.view(p))
			}
		}
		return nil
	})
	return out, err
}
