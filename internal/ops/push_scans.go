package ops

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/collab-forge/collab/internal/hookenv"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/store"
)

// Following is what serve hands pre-receive about the branches of a
// repository whose move PostReceive scans (hookenv.ScannedEnv): those an
// open patch targets and those with scan progress, which it drops once
// none does. A push that moves none of them, or moves them only by
// commits that name none of their open patches (hookenv.Unmerged), gives
// post-receive nothing to do.
type Following struct {
	Branches []hookenv.Followed
	// Mark is the newest revision's rowid when they were read: a patch
	// made or revised since then moves it.
	Mark int64
}

// ReadFollowing reads Following for repo, its branches sorted by name.
func ReadFollowing(ctx context.Context, q store.Querier, repo string) (Following, error) {
	mark, bs, err := patches.ReadFollowed(ctx, q, repo)
	f := Following{Mark: mark}
	for _, b := range bs {
		f.Branches = append(f.Branches, hookenv.Followed{Branch: b.Branch, Tip: b.Tip, IDs: b.IDs})
	}
	return f, err
}

// followed returns branch's entry in f (zero where it has none).
func (f Following) followed(branch string) hookenv.Followed {
	i, ok := slices.BinarySearchFunc(f.Branches, branch, func(b hookenv.Followed, name string) int { return strings.Compare(b.Branch, name) })
	if !ok {
		return hookenv.Followed{}
	}
	return f.Branches[i]
}

// Skips are the moves of followed branches that the pre-receive of the
// push serve runs found unmerged (hookenv.Unmerged) against Following as
// serve read it, and for which it shut the post-receive gate. Record,
// once git is done, records them as scanned, as post-receive would have.
type Skips struct {
	following Following
	mu        sync.Mutex
	moves     []Update
}

// NewSkips returns the Skips of a push that git runs with f handed off.
func NewSkips(f Following) *Skips { return &Skips{following: f} }

// Add notes moves pre-receive found unmerged (relay.Unmerged).
func (s *Skips) Add(moves []Update) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.moves = append(s.moves, moves...)
}

// Record records each move Add noted as its branch's scanned tip, where
// it still starts where the last scan ended (or drops the progress of a
// branch no open patch targets, as PostReceive does), in one transaction
// after git is done, when its ref has moved. Where a patch was made or
// revised, or one targeting the branch opened or closed, since serve read
// Following, it records nothing: the next push's post-receive then scans
// the move against the patches as they are (it starts where the last scan
// ended). It logs what it did, and a failure, after which the same
// happens.
func (s *Skips) Record(ctx context.Context, e *Push) {
	s.mu.Lock()
	moves := s.moves
	s.mu.Unlock()
	if len(moves) == 0 {
		return
	}
	start := time.Now()
	ctx = store.WithWaitBudget(ctx)
	changed := false
	err := e.DB.Write(ctx, func(tx store.Tx) error {
		cur, err := ReadFollowing(ctx, tx, e.Repo)
		if err != nil {
			return err
		}
		if changed = s.changed(cur, moves); changed {
			return nil
		}
		now := e.Now()
		for _, u := range moves {
			branch := strings.TrimPrefix(u.Ref, HeadsPrefix)
			if len(cur.followed(branch).IDs) == 0 {
				err = patches.DropScans(ctx, tx, e.Repo, branch)
			} else {
				err = patches.RecordScanned(ctx, tx, e.Repo, branch, u.Old, u.New, now)
			}
			if err != nil {
				return fmt.Errorf("record merge scan progress of %s: %w", branch, err)
			}
		}
		return nil
	})
	for _, u := range moves {
		log := e.logger().With("PRINCIPAL", e.Principal, "REPO", e.Repo, "REF", u.Ref, "OLD_OID", u.Old, "NEW_OID", u.New, "WALK", "pre-receive", "DURATION_MS", ms(start))
		switch {
		case err != nil:
			log.Error("merge scan", "OUTCOME", "error", "error", err.Error())
		case changed:
			log.Info("merge scan", "OUTCOME", "deferred", "reason", "patches changed during the push")
		default:
			log.Info("merge scan", "OUTCOME", "none")
		}
	}
	// As a hook that wrote does (hookrun.Run): the serial part of a push.
	if u := store.LockUseOf(ctx); u.Writes > 0 {
		e.logger().Info("merge scan lock", append([]any{"PRINCIPAL", e.Principal, "REPO", e.Repo, "OUTCOME", "wrote", "DURATION_MS", ms(start)}, u.Attrs()...)...)
	}
}

// changed reports whether cur differs from what serve handed off in a
// way that could make one of moves merge a patch: a revision added
// anywhere, or the open patches of a moved branch.
func (s *Skips) changed(cur Following, moves []Update) bool {
	if cur.Mark != s.following.Mark {
		return true
	}
	for _, u := range moves {
		branch := strings.TrimPrefix(u.Ref, HeadsPrefix)
		if !slices.Equal(s.following.followed(branch).IDs, cur.followed(branch).IDs) {
			return true
		}
	}
	return false
}
