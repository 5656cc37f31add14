package ops

import (
	"context"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/patches"
)

// RecordSubmitted records what a submit's move of branch from old to new
// merged, by e.Principal with strategy, exactly as the merge scan of a push
// would (Scan: a rebased or squashed result pinned as the last revision,
// Fixes: issues closed, their leases ended), and moves the branch's
// scanned tip. Moves the scan missed before old are made up first, as a
// push's post-receive does.
func (e *Push) RecordSubmitted(ctx context.Context, branch, old, new, strategy string) ([]Merged, error) {
	scanned, err := patches.BranchScans(ctx, e.DB.R(), e.Repo)
	if err != nil {
		return nil, err
	}
	from, has := scanned[branch]
	var segs []Segment
	if has && from != old {
		if segs, err = e.missed(ctx, branch, from, old); err != nil {
			return nil, err
		}
	}
	segs = append(segs, Segment{Old: old, New: new, By: e.Principal, Strategy: strategy, Submitted: true})
	return e.scanSegments(ctx, branch, segs, from, 0)
}

// MakeUp scans the moves of branch from `from` (its scanned tip) to tip
// that the merge scan missed, as the branch's reflog names them: each
// credited to its mover, a submit's as that submit (submit.ReflogStrategy). It does
// nothing when the reflog does not chain from `from` to tip; the caller's
// full scan then credits what is left to access.Unknown.
func (e *Push) MakeUp(ctx context.Context, branch, from, tip string) ([]Merged, error) {
	if from == "" || from == tip {
		return nil, nil
	}
	segs, err := e.missed(ctx, branch, from, tip)
	if err != nil || len(segs) == 0 || segs[0].By == access.Unknown && len(segs) == 1 {
		return nil, err
	}
	return e.scanSegments(ctx, branch, segs, from, 0)
}
