package issues

import (
	"context"
	"fmt"

	"github.com/collab-forge/collab/internal/store"
)

// Restored is an issue as another forge's export recorded it, to be
// written back with its original id, author and times (collab-hook
// import). Times are the canonical text the export wrote.
type Restored struct {
	ID, Title, Body, State, Author string
	CreatedAt, UpdatedAt           string
	ClosedAt                       *string
	Labels                         []string
	Comments                       []RestoredComment
	// OnBehalfOf and Via: whom Author filed it for (nil: its own).
	OnBehalfOf, Via *string
}

// RestoredComment is a comment of a Restored issue.
type RestoredComment struct {
	ID, Author, Body, CreatedAt string
	OnBehalfOf, Via             *string
}

// Restore writes r into repo inside the caller's transaction, with its
// labels and comments in their order, and records the references of its
// bodies (resolved for their authors, as when they were written). It
// emits no event: an import replays history, it does not make it. An id
// already taken (the issue here, or a comment's anywhere) fails the
// insert, and the caller's transaction with it.
func Restore(ctx context.Context, tx store.Querier, repo string, r Restored) error {
	res, err := tx.ExecContext(ctx, `INSERT INTO issues(repo, id, title, body, state, author, created_at, updated_at, closed_at, on_behalf_of, via)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, repo, r.ID, r.Title, r.Body, r.State, r.Author, r.CreatedAt, r.UpdatedAt, r.ClosedAt, r.OnBehalfOf, r.Via)
	if err != nil {
		return fmt.Errorf("restore issue %s: %w", r.ID, err)
	}
	seq, err := res.LastInsertId()
	if err != nil {
		return fmt.Errorf("restore issue %s: %w", r.ID, err)
	}
	for _, l := range r.Labels {
		if _, err := tx.ExecContext(ctx, "INSERT INTO issue_labels(repo, label, seq, open) VALUES (?, ?, ?, ?)",
			repo, l, seq, r.State == string(Open)); err != nil {
			return fmt.Errorf("restore label %s of issue %s: %w", l, r.ID, err)
		}
	}
	if _, err := RecordRefs(ctx, tx, repo, "issue", r.ID, r.Author, r.Body); err != nil {
		return err
	}
	for _, c := range r.Comments {
		if _, err := tx.ExecContext(ctx, `INSERT INTO comments(repo, issue_id, id, author, body, created_at, on_behalf_of, via) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			repo, r.ID, c.ID, c.Author, c.Body, c.CreatedAt, c.OnBehalfOf, c.Via); err != nil {
			return fmt.Errorf("restore comment %s of issue %s: %w", c.ID, r.ID, err)
		}
		if _, err := RecordRefs(ctx, tx, repo, "comment", c.ID, c.Author, c.Body); err != nil {
			return err
		}
	}
	return nil
}
