// Package leases implements work leases on issues: an atomic claim with a
// TTL, renewal, release, and a fencing token that rises with every tenure.
package leases

import (
	"context"
	"errors"
	"time"

	"github.com/collab-forge/collab/internal/store"
)

// TODO(issue 4): everything below is a placeholder with its final signature.

// Fence checks, inside the caller's write transaction, that token is the
// current tenure's token of a live lease on (repo, issueID) held by
// principal; otherwise it returns a fault.Conflict ("stale lease token",
// naming the live holder if any).
func Fence(ctx context.Context, tx store.Querier, repo, issueID, principal string, token int64, now time.Time) error {
	return errors.New("leases.Fence: not implemented yet")
}

// LiveHolder returns the holder of the live lease on (repo, issueID), or ""
// when it is free (never leased, released or expired).
func LiveHolder(ctx context.Context, q store.Querier, repo, issueID string, now time.Time) (string, error) {
	return "", nil
}

// EndByMerge ends a live lease on (repo, issueID) because a merge closed the
// issue: tenure reason "merged", event lease.released. No live lease: no-op.
func EndByMerge(ctx context.Context, tx store.Querier, repo, issueID, actor string, now time.Time) error {
	return nil
}
