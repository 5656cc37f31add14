package patches

import (
	"context"
	"fmt"

	"github.com/collab-forge/collab/internal/issues"
	"github.com/collab-forge/collab/internal/store"
)

// Restored is a patch as another forge's export recorded it, to be
// written back with its original id, authors and times (collab-hook
// import). Times are the canonical text the export wrote.
type Restored struct {
	ID, Title, Description, Topic, State, Author, Base string
	Draft                                              bool
	CreatedAt, UpdatedAt                               string
	// Merge is nil unless it was merged.
	Merge *RestoredMerge
	// Issues are the issues it links (fixes).
	Issues    []string
	Revisions []RestoredRevision
	Reviews   []RestoredReview
	States    []RestoredState
}

// RestoredMerge is a Restored patch's merge record.
type RestoredMerge struct{ Branch, Commit, By, At string }

// RestoredRevision is a revision of a Restored patch.
type RestoredRevision struct {
	Number                         int64
	Commit, BaseCommit, Pusher, At string
	Message                        string
}

// RestoredReview is a posted review of a Restored patch; an inline one
// has File (and maybe Line) and starts its own thread on the new side, as
// the export does not carry threads.
type RestoredReview struct {
	ID, Author, Verdict, Body, CreatedAt string
	Revision                             int64
	File                                 *string
	Line                                 *int64
	OnBehalfOf, Via                      *string
}

// RestoredState is a close, reopen or merge of a Restored patch.
type RestoredState struct{ Kind, Actor, At string }

// Restore writes p into repo inside the caller's transaction, with its
// revisions, reviews, state changes and issue links. Its title is kept as
// given (titled), since no commit message is there to follow. It emits no
// event; an id already taken fails the insert, and the transaction.
func Restore(ctx context.Context, tx store.Querier, repo string, p Restored) error {
	var mb, mc, mby, mat any
	if m := p.Merge; m != nil {
		mb, mc, mby, mat = m.Branch, m.Commit, m.By, m.At
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO patches(repo, id, title, description, topic, draft, state, author, base, created_at, updated_at,
			merged_branch, merged_commit, merged_by, merged_at, titled)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)`,
		repo, p.ID, p.Title, p.Description, p.Topic, p.Draft, p.State, p.Author, p.Base, p.CreatedAt, p.UpdatedAt, mb, mc, mby, mat); err != nil {
		return fmt.Errorf("restore patch %s: %w", p.ID, err)
	}
	for _, v := range p.Revisions {
		if _, err := tx.ExecContext(ctx, `INSERT INTO revisions(repo, patch_id, number, commit_oid, base_commit, pusher, created_at, message)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, repo, p.ID, v.Number, v.Commit, v.BaseCommit, v.Pusher, v.At, v.Message); err != nil {
			return fmt.Errorf("restore revision %d of %s: %w", v.Number, p.ID, err)
		}
	}
	for _, r := range p.Reviews {
		var side, thread any
		if r.File != nil {
			side, thread = SideNew, r.ID
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO reviews(repo, patch_id, id, revision, author, verdict, body, file, line, created_at, side, thread, on_behalf_of, via)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			repo, p.ID, r.ID, r.Revision, r.Author, r.Verdict, r.Body, r.File, r.Line, r.CreatedAt, side, thread, r.OnBehalfOf, r.Via); err != nil {
			return fmt.Errorf("restore review %s of %s: %w", r.ID, p.ID, err)
		}
		if _, err := issues.RecordRefs(ctx, tx, repo, "review", r.ID, r.Author, r.Body); err != nil {
			return err
		}
	}
	for _, s := range p.States {
		if _, err := tx.ExecContext(ctx, "INSERT INTO patch_events(repo, patch_id, kind, actor, at) VALUES (?, ?, ?, ?, ?)",
			repo, p.ID, s.Kind, s.Actor, s.At); err != nil {
			return fmt.Errorf("restore a state change of %s: %w", p.ID, err)
		}
	}
	for _, id := range p.Issues {
		if _, err := tx.ExecContext(ctx, "INSERT INTO patch_issues(repo, patch_id, issue_id) VALUES (?, ?, ?) ON CONFLICT DO NOTHING", repo, p.ID, id); err != nil {
			return fmt.Errorf("restore the issue links of %s: %w", p.ID, err)
		}
	}
	return nil
}
