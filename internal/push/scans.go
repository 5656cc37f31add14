package push

import (
	"context"
	"database/sql"
	"fmt"
	"time"

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

// ScannedBranches returns the branches of repo whose move PostReceive
// scans (sorted): those an open patch targets and those with scan
// progress, which it drops once none does. A push that moves none of
// them gives post-receive nothing to do.
func ScannedBranches(ctx context.Context, q store.Querier, repo string) ([]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT branch FROM branch_scans WHERE repo = ?
		UNION SELECT base FROM patches WHERE repo = ? AND state = 'open' ORDER BY 1`, repo, repo)
	if err != nil {
		return nil, fmt.Errorf("read the branches the merge scan follows: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var b string
		if err := rows.Scan(&b); err != nil {
			return nil, fmt.Errorf("read the branches the merge scan follows: %w", err)
		}
		out = append(out, b)
	}
	return out, rows.Err()
}
