package leases

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/labels"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/store"
)

// The work queue (`lease acquire --next`): of the open issues of a
// repository that carry every given label, have no live lease and are
// blocked by no open issue, the oldest (lowest issues.seq) is handed out.
// Whoever asks inside a write transaction gets the pick and the lease
// together, so agents asking at once each get a different issue and
// nobody is refused.

// freeCond is true of an issue i with no live lease at the query's ?2:
// never leased, released, or expired (expiry is a filter here as
// everywhere). One probe of the leases primary key per candidate.
const freeCond = ` AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.repo = i.repo AND l.issue_id = i.id
	AND l.holder IS NOT NULL AND (l.expires_at IS NULL OR l.expires_at > ?2))`

// unblockedCond is true of an issue i that no open issue blocks (issue
// link --kind blocks): one probe of issue_links_by_dst per candidate.
const unblockedCond = ` AND NOT EXISTS (SELECT 1 FROM issue_links k JOIN issues b ON b.repo = k.repo AND b.id = k.issue_id
	WHERE k.dst_repo = i.repo AND k.dst_id = i.id AND k.kind = 'blocks' AND b.state = 'open')`

// nextQuery is the one query of Next for n labels (already a set). With
// no label it walks issues_by_state (repo, 'open', seq) oldest first;
// with labels it walks the first label's open entries in issue_labels_open
// (repo, label, seq) and probes the primary key for each other label.
// Either way it stops at the first free candidate, so its cost is the
// leased (or under-labelled) issues it passes, not the repository.
func nextQuery(n int) string {
	if n == 0 {
		return `SELECT i.id FROM issues i WHERE i.repo = ?1 AND i.state = 'open'` + freeCond + unblockedCond + ` ORDER BY i.seq LIMIT 1`
	}
	var b strings.Builder
	// CROSS JOIN keeps issue_labels outermost in SQLite (PostgreSQL takes
	// no ON after it: the join's condition is in WHERE); the literal
	// open = 1 lets the planner use the partial index.
	b.WriteString(`SELECT i.id FROM issue_labels m CROSS JOIN issues i
	WHERE i.seq = m.seq AND m.repo = ?1 AND m.label = ?3 AND m.open = 1 AND i.state = 'open'`)
	for k := 1; k < n; k++ {
		fmt.Fprintf(&b, ` AND EXISTS (SELECT 1 FROM issue_labels x WHERE x.repo = ?1 AND x.label = ?%d AND x.seq = m.seq)`, k+3)
	}
	b.WriteString(freeCond)
	b.WriteString(unblockedCond)
	b.WriteString(` ORDER BY m.seq LIMIT 1`)
	return b.String()
}

// Next returns the id of the oldest open issue of repo that carries every
// label of ls and has no live lease at now, or "" when there is none. ls
// must be a set (labels.Set).
func Next(ctx context.Context, q store.Querier, repo string, ls []string, now time.Time) (string, error) {
	args := []any{repo, store.FormatTime(now)}
	for _, l := range ls {
		args = append(args, l)
	}
	var id string
	err := q.QueryRowContext(ctx, nextQuery(len(ls)), args...).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("find the next issue to claim: %w", err)
	}
	return id, nil
}

// NothingToClaim is the refusal of a work queue with nothing left in it
// (fault.NotFound: exit 4, HTTP 404).
func NothingToClaim(repo string, ls []string) error {
	with := ""
	if len(ls) > 0 {
		with = " labelled " + strings.Join(ls, ", ")
	}
	return fault.New(fault.NotFound, "nothing to claim: no open issue%s without a live lease in %s", with, reponame.Display(repo))
}

// AcquireNext claims, inside the caller's write transaction, the issue
// that Next picks for holder, exactly as Acquire claims a named one: a new
// tenure with the token above the row's high-water mark, an expired
// tenure it takes over recorded as expired (event lease.expired), and the
// event issue.claimed. The lease names the issue (IssueID). With nothing
// left it is NothingToClaim, and nothing is written. ls is checked with
// labels.Set.
func AcquireNext(ctx context.Context, tx store.Querier, repo, holder string, ls []string, ttl time.Duration, now time.Time) (Lease, error) {
	return acquireNext(ctx, tx, repo, holder, ls, ttl, nil, now)
}

// acquireNext is AcquireNext whose new tenure records req (nil: none).
func acquireNext(ctx context.Context, tx store.Querier, repo, holder string, ls []string, ttl time.Duration, req *request, now time.Time) (Lease, error) {
	if err := CheckTTL(ttl); err != nil {
		return Lease{}, err
	}
	ls, err := labels.Set(ls)
	if err != nil {
		return Lease{}, err
	}
	id, err := Next(ctx, tx, repo, ls, now)
	if err != nil {
		return Lease{}, err
	}
	if id == "" {
		return Lease{}, NothingToClaim(repo, ls)
	}
	return acquire(ctx, tx, repo, id, holder, ttl, false, req, now)
}
