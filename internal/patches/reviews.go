package patches

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/collab-forge/collab/internal/events"
	"github.com/collab-forge/collab/internal/issues"
	"github.com/collab-forge/collab/internal/store"
)

// This file keeps the reviews and patch_events tables: a patch's reviews
// and its history of state changes, which the Patch object carries.

// AddReview records r (its ID, revision, author, verdict, body and anchor
// already checked) on patch patchID inside tx, with the references in its
// body and its review.posted event. r.CreatedAt is set from now.
func AddReview(ctx context.Context, tx store.Querier, repo, patchID string, r Review, now time.Time) (Review, error) {
	r.CreatedAt = store.At(now)
	var file, line any
	if r.File != nil {
		file = *r.File
	}
	if r.Line != nil {
		line = *r.Line
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO reviews(repo, patch_id, id, revision, author, verdict, body, file, line, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		repo, patchID, r.ID, r.Revision, r.Author, r.Verdict, r.Body, file, line, r.CreatedAt); err != nil {
		return Review{}, fmt.Errorf("record review of %s: %w", patchID, err)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE patches SET updated_at = ? WHERE repo = ? AND id = ?", r.CreatedAt, repo, patchID); err != nil {
		return Review{}, fmt.Errorf("record review of %s: %w", patchID, err)
	}
	if err := issues.RecordRefs(ctx, tx, repo, "review", r.ID, r.Body); err != nil {
		return Review{}, err
	}
	if _, err := events.Emit(ctx, tx, events.ReviewPosted, repo, r.Author, now, map[string]any{
		"patch_id": patchID, "review": r,
	}); err != nil {
		return Review{}, err
	}
	return r, nil
}

const reviewCols = "id, revision, author, verdict, body, file, line, created_at"

// scanReview reads reviewCols, after the columns lead (if any) scans into.
func scanReview(rows *sql.Rows, lead ...any) (Review, error) {
	var r Review
	var file sql.NullString
	var line sql.NullInt64
	if err := rows.Scan(append(lead, &r.ID, &r.Revision, &r.Author, &r.Verdict, &r.Body, &file, &line, &r.CreatedAt)...); err != nil {
		return Review{}, err
	}
	if file.Valid {
		r.File = &file.String
	}
	if line.Valid {
		n := int(line.Int64)
		r.Line = &n
	}
	return r, nil
}

// Reviews returns the reviews of a patch, oldest first.
func Reviews(ctx context.Context, q store.Querier, repo, id string) ([]Review, error) {
	out := []Review{}
	err := store.Each(ctx, q, "SELECT "+reviewCols+" FROM reviews WHERE repo = ? AND patch_id = ? ORDER BY seq", []any{repo, id},
		func(rows *sql.Rows) error {
			r, err := scanReview(rows)
			if err != nil {
				return err
			}
			out = append(out, r)
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("read reviews of %s: %w", id, err)
	}
	return out, nil
}

// Event is one state change in a patch's history (patch_events): closed,
// reopened or merged, by whom and when.
type Event struct {
	Kind  string
	Actor string
	At    store.Time
}

// History returns a patch's state changes, oldest first.
func History(ctx context.Context, q store.Querier, repo, id string) ([]Event, error) {
	var out []Event
	err := store.Each(ctx, q, "SELECT kind, actor, at FROM patch_events WHERE repo = ? AND patch_id = ? ORDER BY seq", []any{repo, id},
		func(rows *sql.Rows) error {
			var e Event
			if err := rows.Scan(&e.Kind, &e.Actor, &e.At); err != nil {
				return err
			}
			out = append(out, e)
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("read history of patch %s: %w", id, err)
	}
	return out, nil
}
