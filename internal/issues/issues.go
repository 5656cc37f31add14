// Package issues keeps issues and their comments.
package issues

import (
	"context"
	"time"

	"github.com/collab-forge/collab/internal/store"
)

// TODO(issue 4): everything below is a placeholder with its final signature.

// Resolve returns the full id of the issue in repo that prefix names
// (fault.NotFound / fault.Usage with candidates otherwise).
func Resolve(ctx context.Context, q store.Querier, repo, prefix string) (string, error) {
	return store.Resolve(ctx, q, "issue", prefix,
		"SELECT id FROM issues WHERE repo = ? AND id >= ? AND id < ? LIMIT 11", repo)
}

// CloseByMerge closes an open issue because a merged commit says
// "Fixes: ID", whoever pushed: event issue.closed, and a live lease on it
// ends (leases.EndByMerge). A closed or missing issue is a no-op.
func CloseByMerge(ctx context.Context, tx store.Querier, repo, issueID, actor, commit string, now time.Time) error {
	return nil
}
