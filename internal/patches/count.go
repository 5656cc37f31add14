package patches

import (
	"context"
	"fmt"

	"github.com/collab-forge/collab/internal/store"
)

// Count is how many patches of repo are in state (open, merged, closed or
// all).
func Count(ctx context.Context, q store.Querier, repo, state string) (int, error) {
	if err := CheckState(state); err != nil {
		return 0, err
	}
	query, args := "SELECT count(*) FROM patches WHERE repo = ?", []any{repo}
	if state != "all" {
		query, args = query+" AND state = ?", append(args, state)
	}
	var n int
	if err := q.QueryRowContext(ctx, query, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count patches: %w", err)
	}
	return n, nil
}
