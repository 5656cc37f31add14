package leases

import (
	"context"
	"fmt"

	"github.com/collab-forge/collab/internal/store"
)

// Restored is a lease tenure as another forge's export recorded it.
type Restored struct {
	Token              int64
	Holder, AcquiredAt string
	ExpiresAt, EndedAt *string
	EndReason          *string
}

// Restore writes an issue's tenures back with their original tokens and
// times (collab-hook import), and its lease row: the high-water mark of
// the tokens, held by the last tenure if that one never ended. Emits no
// event.
func Restore(ctx context.Context, tx store.Querier, repo, issueID string, ts []Restored) error {
	if len(ts) == 0 {
		return nil
	}
	last := ts[0]
	for _, t := range ts {
		if _, err := tx.ExecContext(ctx, `INSERT INTO tenures(repo, issue_id, token, holder, acquired_at, expires_at, ended_at, end_reason)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, repo, issueID, t.Token, t.Holder, t.AcquiredAt, t.ExpiresAt, t.EndedAt, t.EndReason); err != nil {
			return fmt.Errorf("restore tenure %d of %s: %w", t.Token, issueID, err)
		}
		if t.Token > last.Token {
			last = t
		}
	}
	var holder, ttlMS any
	if last.EndedAt == nil {
		holder = last.Holder
		if last.ExpiresAt != nil {
			a, err1 := store.ParseTime(last.AcquiredAt)
			e, err2 := store.ParseTime(*last.ExpiresAt)
			if err1 == nil && err2 == nil {
				ttlMS = e.Sub(a).Milliseconds()
			}
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO leases(repo, issue_id, holder, token, acquired_at, expires_at, ttl_ms)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, repo, issueID, holder, last.Token, last.AcquiredAt, last.ExpiresAt, ttlMS); err != nil {
		return fmt.Errorf("restore the lease of %s: %w", issueID, err)
	}
	return nil
}
