package review

import (
	"context"
	"time"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/issues"
	"github.com/collab-forge/collab/internal/leases"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/store"
)

// MayComplete applies the fence of completion (CONTRACT.md "Fencing") to
// principal merging patch patchID by verb (submit, merge): a token (f,
// nil for none) must be the live tenure's of the issue it names, held by
// principal; and an open issue the patch links whose live lease someone
// else holds may only be completed by that holder or a repository admin
// (admin). A refusal is fault.Conflict naming the issue, the holder and
// the expiry. It returns the token by full issue id, for the record to
// check again (issues.CloseFenced): a takeover after this read is caught
// there.
func MayComplete(ctx context.Context, q store.Querier, repo, patchID, principal string, admin bool, f *Fence, verb string, now time.Time) (map[string]int64, error) {
	tokens := map[string]int64{}
	if f != nil {
		issue, err := f.Issue(ctx, q, repo, patchID)
		if err != nil {
			return nil, err
		}
		if err := leases.Fence(ctx, q, repo, issue, principal, f.Token(), now); err != nil {
			return nil, err
		}
		tokens[issue] = f.Token()
	}
	if admin {
		return tokens, nil
	}
	linked, err := patches.Issues(ctx, q, repo, patchID)
	if err != nil {
		return nil, err
	}
	for _, id := range linked {
		cur, ok, err := issues.Lookup(ctx, q, repo, id, now)
		if err != nil {
			return nil, err
		}
		l := cur.Lease
		if !ok || cur.State != issues.Open || l == nil || l.Holder == principal {
			continue
		}
		k := issues.Kept{IssueID: id, Holder: l.Holder, Token: l.Token, ExpiresAt: l.ExpiresAt}
		var exp any
		if l.ExpiresAt != nil {
			exp = *l.ExpiresAt
		}
		return nil, fault.New(fault.Conflict, "cannot %s patch %s: issue %s is %s; only the holder or a repository admin may complete it", verb, patchID, id, k.Why()).
			With("holder", l.Holder).With("expires_at", exp)
	}
	return tokens, nil
}
