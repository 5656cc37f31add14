package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/ids"
)

// Resolve turns a user-given id prefix into the one full id it names.
// query must select one text column of candidate ids and take the
// arguments args followed by the two bounds of the prefix range, e.g.
//
//	SELECT id FROM issues WHERE repo = ? AND id >= ? AND id < ? LIMIT 11
//
// what names the kind of thing ("issue") in messages. A prefix matching
// nothing is NotFound; one matching several is Usage, listing candidates.
func Resolve(ctx context.Context, q Querier, what, prefix, query string, args ...any) (string, error) {
	p, err := ids.CheckPrefix(prefix)
	if err != nil {
		return "", err
	}
	// Every hex id starting with p sorts in [p, p+"g"): 'g' follows 'f'.
	rows, err := q.QueryContext(ctx, query, append(args, p, p+"g")...)
	if err != nil {
		return "", fmt.Errorf("resolve %s %s: %w", what, p, err)
	}
	defer rows.Close()
	var found []string
	seen := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return "", fmt.Errorf("resolve %s %s: %w", what, p, err)
		}
		if !seen[id] {
			seen[id] = true
			found = append(found, id)
		}
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("resolve %s %s: %w", what, p, err)
	}
	// Ids run from 8 to 64 characters, so a full id may also prefix a
	// longer one; naming it exactly must still reach it.
	if seen[p] {
		return p, nil
	}
	switch len(found) {
	case 0:
		return "", fault.New(fault.NotFound, "no %s %s", what, p)
	case 1:
		return found[0], nil
	default:
		return "", fault.New(fault.Usage, "ambiguous %s id %s: candidates %s", what, p, strings.Join(found, " ")).
			With("candidates", found)
	}
}
