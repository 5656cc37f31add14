package patches

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/collab-forge/collab/internal/store"
)

// The merge scan's progress (table branch_scans): how far it has read
// each branch that open patches target.

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

// StartScans gives branch a starting point for the merge scan, inside tx,
// unless it has one: tip is a commit of the branch (a new revision's merge
// base), so nothing that reaches the branch later can be missed.
func StartScans(ctx context.Context, tx store.Querier, repo, branch, tip string, now time.Time) error {
	_, err := tx.ExecContext(ctx, "INSERT INTO branch_scans(repo, branch, tip, scanned_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
		repo, branch, tip, store.FormatTime(now))
	if err != nil {
		return fmt.Errorf("start merge scan progress of %s: %w", branch, err)
	}
	return nil
}

// RecordScanned records done as branch's scanned tip, inside tx, where the
// recorded one still is from (or there is none): of two scans racing, the
// one that started from an older tip does not move it back.
func RecordScanned(ctx context.Context, tx store.Querier, repo, branch, from, done string, now time.Time) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO branch_scans(repo, branch, tip, scanned_at) VALUES (?, ?, ?, ?)
		ON CONFLICT(repo, branch) DO UPDATE SET tip = excluded.tip, scanned_at = excluded.scanned_at WHERE branch_scans.tip = ?`,
		repo, branch, done, store.FormatTime(now), from)
	if err != nil {
		return fmt.Errorf("record merge scan progress of %s: %w", branch, err)
	}
	return nil
}

// ForgetScans drops branch's scan progress, inside tx, unless an open
// patch targets it.
func ForgetScans(ctx context.Context, tx store.Querier, repo, branch string) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM branch_scans WHERE repo = ? AND branch = ?
		AND NOT EXISTS (SELECT 1 FROM patches WHERE repo = ? AND base = ? AND state = 'open')`, repo, branch, repo, branch)
	if err != nil {
		return fmt.Errorf("drop merge scan progress of %s: %w", branch, err)
	}
	return nil
}

// DropScans drops branch's scan progress, inside tx.
func DropScans(ctx context.Context, tx store.Querier, repo, branch string) error {
	_, err := tx.ExecContext(ctx, "DELETE FROM branch_scans WHERE repo = ? AND branch = ?", repo, branch)
	if err != nil {
		return fmt.Errorf("drop merge scan progress of %s: %w", branch, err)
	}
	return nil
}

// Followed is a branch the merge scan follows: its scan progress (Tip,
// "" for none) and the open patches that target it (IDs, sorted).
type Followed struct {
	Branch string
	Tip    string
	IDs    []string
}

// ReadFollowed reads the branches of repo the merge scan follows, sorted
// by name: those with scan progress and those an open patch targets.
// mark is the newest revision's rowid, read first, so that a revision
// added while the rest is read shows as a change, never as none.
func ReadFollowed(ctx context.Context, q store.Querier, repo string) (mark int64, out []Followed, err error) {
	if err := q.QueryRowContext(ctx, "SELECT COALESCE(MAX(rowid), 0) FROM revisions").Scan(&mark); err != nil {
		return 0, nil, fmt.Errorf("read the branches the merge scan follows: %w", err)
	}
	rows, err := q.QueryContext(ctx, `SELECT branch, tip, NULL FROM branch_scans WHERE repo = ?
		UNION ALL SELECT base, NULL, id FROM patches WHERE repo = ? AND state = 'open' ORDER BY 1, 3`, repo, repo)
	if err != nil {
		return mark, nil, fmt.Errorf("read the branches the merge scan follows: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var b string
		var tip, id sql.NullString
		if err := rows.Scan(&b, &tip, &id); err != nil {
			return mark, nil, fmt.Errorf("read the branches the merge scan follows: %w", err)
		}
		if n := len(out); n == 0 || out[n-1].Branch != b {
			out = append(out, Followed{Branch: b})
		}
		last := &out[len(out)-1]
		if tip.Valid {
			last.Tip = tip.String
		}
		if id.Valid {
			last.IDs = append(last.IDs, id.String)
		}
	}
	return mark, out, rows.Err()
}

// OpenBasesByRepo returns, per repository, the branches open patches target.
func OpenBasesByRepo(ctx context.Context, q store.Querier) (map[string][]string, error) {
	rows, err := q.QueryContext(ctx, "SELECT DISTINCT repo, base FROM patches WHERE state = 'open' ORDER BY repo, base")
	if err != nil {
		return nil, fmt.Errorf("read open patch bases: %w", err)
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var repo, base string
		if err := rows.Scan(&repo, &base); err != nil {
			return nil, fmt.Errorf("read open patch bases: %w", err)
		}
		out[repo] = append(out[repo], base)
	}
	return out, rows.Err()
}

// RecentlyRevised returns, per repository, the patches with a revision
// recorded since t.
func RecentlyRevised(ctx context.Context, q store.Querier, t time.Time) (map[string][]string, error) {
	rows, err := q.QueryContext(ctx, "SELECT DISTINCT repo, patch_id FROM revisions WHERE created_at >= ? ORDER BY repo, patch_id", store.FormatTime(t))
	if err != nil {
		return nil, fmt.Errorf("read recent revisions: %w", err)
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var repo, id string
		if err := rows.Scan(&repo, &id); err != nil {
			return nil, fmt.Errorf("read recent revisions: %w", err)
		}
		out[repo] = append(out[repo], id)
	}
	return out, rows.Err()
}
