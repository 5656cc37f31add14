package push

import (
	"context"
	"strings"

	"github.com/collab-forge/collab/internal/access"
)

// submitReflog starts the reflog message of a branch move made by patch
// submit: "collab submit STRATEGY PATCH".
const submitReflog = "collab submit "

// SubmitReflog is the reflog message of a submit's branch move. With the
// submitter as the move's committer identity (hookenv.Committer), a merge
// scan that makes the move up later (the submit died between moving the
// branch and recording the merge) credits it as the submit it was.
func SubmitReflog(strategy, patchID string) string {
	return submitReflog + strategy + " " + patchID
}

// SubmittedBy reports the strategy of a reflog message SubmitReflog wrote.
func SubmittedBy(msg string) (strategy string, ok bool) {
	rest, ok := strings.CutPrefix(msg, submitReflog)
	if !ok {
		return "", false
	}
	strategy, _, ok = strings.Cut(rest, " ")
	switch strategy {
	case "merge", "ff-only", "rebase", "squash":
		return strategy, ok
	}
	return "", false
}

// RecordSubmitted records what a submit's move of branch from old to new
// merged, by e.Principal with strategy, exactly as the merge scan of a push
// would (Scan: a rebased or squashed result pinned as the last revision,
// Fixes: issues closed, their leases ended), and moves the branch's
// scanned tip. Moves the scan missed before old are made up first, as a
// push's post-receive does.
func RecordSubmitted(ctx context.Context, e *Env, branch, old, new, strategy string) ([]Merged, error) {
	scanned, err := BranchScans(ctx, e.DB.R(), e.Repo)
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
// credited to its mover, a submit's as that submit (SubmittedBy). It does
// nothing when the reflog does not chain from `from` to tip; the caller's
// full scan then credits what is left to access.Unknown.
func MakeUp(ctx context.Context, e *Env, branch, from, tip string) ([]Merged, error) {
	if from == "" || from == tip {
		return nil, nil
	}
	segs, err := e.missed(ctx, branch, from, tip)
	if err != nil || len(segs) == 0 || segs[0].By == access.Unknown && len(segs) == 1 {
		return nil, err
	}
	return e.scanSegments(ctx, branch, segs, from, 0)
}
