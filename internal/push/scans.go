package push

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/collab-forge/collab/internal/hookenv"
	"github.com/collab-forge/collab/internal/store"
)

// BranchScans returns, per branch of repo, the tip whose history the
// merge scan last completed (table branch_scans). A branch has a row from
// the first revision of a patch that targets it until a push finds no open
// patch targeting it any more.
func BranchScans(ctx context.Context, q store.Querier, repo string) (map[string]string, error) {
	rows, err := q.QueryContext(ctx, "SELECT branch, tip FROM branch_scans WHERE repo = ?", repo)
	if err != nil {
		return nil, fmt.Errorf("read merge scan progress: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var b, tip string
		if err := rows.Scan(&b, &tip); err != nil {
			return nil, fmt.Errorf("read merge scan progress: %w", err)
		}
		out[b] = tip
	}
	return out, rows.Err()
}

// startScans gives branch a starting point for the merge scan, inside tx,
// unless it has one: tip is a commit of the branch (a new revision's merge
// base), so nothing that reaches the branch later can be missed.
func startScans(ctx context.Context, tx store.Querier, repo, branch, tip string, now time.Time) error {
	_, err := tx.ExecContext(ctx, "INSERT OR IGNORE INTO branch_scans(repo, branch, tip, scanned_at) VALUES (?, ?, ?, ?)",
		repo, branch, tip, store.FormatTime(now))
	if err != nil {
		return fmt.Errorf("start merge scan progress of %s: %w", branch, err)
	}
	return nil
}

// recordScanned records done as branch's scanned tip, inside tx, where the
// recorded one still is from (or there is none): of two scans racing, the
// one that started from an older tip does not move it back.
func recordScanned(ctx context.Context, tx store.Querier, repo, branch, from, done string, now time.Time) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO branch_scans(repo, branch, tip, scanned_at) VALUES (?, ?, ?, ?)
		ON CONFLICT(repo, branch) DO UPDATE SET tip = excluded.tip, scanned_at = excluded.scanned_at WHERE branch_scans.tip = ?`,
		repo, branch, done, store.FormatTime(now), from)
	if err != nil {
		return fmt.Errorf("record merge scan progress of %s: %w", branch, err)
	}
	return nil
}

// forgetScans drops branch's scan progress: no open patch targets it.
func forgetScans(ctx context.Context, db *store.DB, repo, branch string) error {
	return db.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM branch_scans WHERE repo = ? AND branch = ?
			AND NOT EXISTS (SELECT 1 FROM patches WHERE repo = ? AND base = ? AND state = 'open')`, repo, branch, repo, branch)
		if err != nil {
			return fmt.Errorf("drop merge scan progress of %s: %w", branch, err)
		}
		return nil
	})
}

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
	var f Following
	// The mark first: a revision added while the rest is read makes
	// Skips.Record see a change, never miss one.
	if err := q.QueryRowContext(ctx, "SELECT COALESCE(MAX(rowid), 0) FROM revisions").Scan(&f.Mark); err != nil {
		return f, fmt.Errorf("read the branches the merge scan follows: %w", err)
	}
	rows, err := q.QueryContext(ctx, `SELECT branch, tip, NULL FROM branch_scans WHERE repo = ?
		UNION ALL SELECT base, NULL, id FROM patches WHERE repo = ? AND state = 'open' ORDER BY 1, 3`, repo, repo)
	if err != nil {
		return f, fmt.Errorf("read the branches the merge scan follows: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var b string
		var tip, id sql.NullString
		if err := rows.Scan(&b, &tip, &id); err != nil {
			return f, fmt.Errorf("read the branches the merge scan follows: %w", err)
		}
		if n := len(f.Branches); n == 0 || f.Branches[n-1].Branch != b {
			f.Branches = append(f.Branches, hookenv.Followed{Branch: b})
		}
		last := &f.Branches[len(f.Branches)-1]
		if tip.Valid {
			last.Tip = tip.String
		}
		if id.Valid {
			last.IDs = append(last.IDs, id.String)
		}
	}
	return f, rows.Err()
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
func (s *Skips) Record(ctx context.Context, e *Env) {
	s.mu.Lock()
	moves := s.moves
	s.mu.Unlock()
	if len(moves) == 0 {
		return
	}
	start := time.Now()
	ctx = store.WithWaitBudget(ctx)
	changed := false
	err := e.DB.Write(ctx, func(tx *sql.Tx) error {
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
				_, err = tx.ExecContext(ctx, `DELETE FROM branch_scans WHERE repo = ? AND branch = ?`, e.Repo, branch)
			} else {
				err = recordScanned(ctx, tx, e.Repo, branch, u.Old, u.New, now)
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
