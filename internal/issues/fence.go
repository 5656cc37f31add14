package issues

import (
	"context"
	"fmt"
	"time"

	"github.com/collab-forge/collab/internal/leases"
	"github.com/collab-forge/collab/internal/store"
)

// Closer is a merge that completes work: it closes the issues it fixes,
// fenced like every other completion (CONTRACT.md "Fencing").
type Closer struct {
	// By is who merged: the pusher, the submitter or the recorder.
	By     string
	Commit string
	// What names the merge in the timeline of an issue it did not close,
	// e.g. "the merge of patch P into main as C by alice".
	What string
	// Admin reports whether By is an admin of the repository; it is asked
	// only for an issue someone else holds. nil: not an admin.
	Admin func() (bool, error)
	// Tokens are the lease tokens the merge carried, by full issue id: a
	// merge carrying a token that is not the live tenure's closes nothing.
	Tokens map[string]int64
}

// Kept is an issue a merge would have closed but for a live lease.
type Kept struct {
	IssueID   string
	Holder    string
	Token     int64
	ExpiresAt *store.Time
}

// Why is the reason, as the pusher and the timeline read it.
func (k Kept) Why() string {
	until := "with no expiry"
	if k.ExpiresAt != nil {
		until = "until " + k.ExpiresAt.String()
	}
	return "leased by " + k.Holder + " " + until
}

// CloseFenced closes an open issue a merge fixes, as CloseByMerge does,
// unless a live lease on it says the merge may not end its tenure: held
// by someone other than c.By who is no admin, or c carries a token for it
// that is not the live tenure's. Then the issue stays open, the tenure
// goes on, and a comment by c.By records which merge would have closed it
// and why it did not (kept says the same to the caller). This is the check
// made where the record is written, so a takeover between a push's
// pre-receive and its post-receive is seen here. A closed or missing
// issue is a no-op.
func CloseFenced(ctx context.Context, tx store.Querier, repo, issueID string, c Closer, now time.Time) (closed bool, kept *Kept, err error) {
	cur, ok, err := Lookup(ctx, tx, repo, issueID, now)
	if err != nil || !ok || cur.State != Open {
		return false, nil, err
	}
	if l := cur.Lease; l != nil {
		allowed := l.Holder == c.By
		if tok, ok := c.Tokens[issueID]; ok {
			allowed = allowed && tok == l.Token
		} else if !allowed && c.Admin != nil {
			if allowed, err = c.Admin(); err != nil {
				return false, nil, err
			}
		}
		if !allowed {
			k := &Kept{IssueID: issueID, Holder: l.Holder, Token: l.Token, ExpiresAt: l.ExpiresAt}
			body := fmt.Sprintf("Not closed by %s: %s.", c.What, k.Why())
			if _, err := AddComment(ctx, tx, repo, issueID, c.By, body, now); err != nil {
				return false, nil, fmt.Errorf("record why issue %s stays open: %w", issueID, err)
			}
			return false, k, nil
		}
	}
	_, changed, err := setState(ctx, tx, repo, issueID, Closed, c.By, c.Commit, now)
	if err != nil || !changed {
		return false, nil, err
	}
	return true, nil, leases.EndByMerge(ctx, tx, repo, issueID, c.By, now)
}
