package patches

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/collab-forge/collab/internal/events"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/issues"
	"github.com/collab-forge/collab/internal/store"
)

// This file keeps the reviews and patch_events tables: a patch's reviews
// and its history of state changes, which the Patch object carries.

// AddReview records r (its ID, revision, author, verdict, body and anchor
// already checked) on patch patchID inside tx, with the references in its
// body and its review.posted event; a draft (r.Draft) has neither until
// Publish. r.CreatedAt is set from now. An inline comment starts its own
// thread unless r.Thread names one.
func AddReview(ctx context.Context, tx store.Querier, repo, patchID string, r Review, now time.Time) (Review, error) {
	r, err := insertReview(ctx, tx, repo, patchID, r, now)
	if err != nil || r.Draft {
		return r, err
	}
	unresolved, err := issues.RecordRefs(ctx, tx, repo, "review", r.ID, r.Author, r.Body)
	if err != nil {
		return Review{}, err
	}
	if _, err := events.Emit(ctx, tx, events.ReviewPosted, repo, r.Author, now, map[string]any{
		"patch_id": patchID, "review": r,
	}); err != nil {
		return Review{}, err
	}
	r.Unresolved = unresolved
	return r, nil
}

func insertReview(ctx context.Context, tx store.Querier, repo, patchID string, r Review, now time.Time) (Review, error) {
	r.CreatedAt = store.At(now)
	var file, line, side, thread any
	if r.File != nil {
		file = *r.File
		if r.Side == nil {
			s := SideNew
			r.Side = &s
		}
		if r.Thread == nil {
			r.Thread = &r.ID
		}
		side, thread = *r.Side, *r.Thread
	}
	if r.Line != nil {
		line = *r.Line
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO reviews(repo, patch_id, id, revision, author, verdict, body, file, line, created_at, side, thread, draft, on_behalf_of, via)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		repo, patchID, r.ID, r.Revision, r.Author, r.Verdict, r.Body, file, line, r.CreatedAt, side, thread, r.Draft, r.OnBehalfOf, r.Via); err != nil {
		return Review{}, fmt.Errorf("record review of %s: %w", patchID, err)
	}
	if r.Draft {
		return r, nil
	}
	if _, err := tx.ExecContext(ctx, "UPDATE patches SET updated_at = ? WHERE repo = ? AND id = ?", r.CreatedAt, repo, patchID); err != nil {
		return Review{}, fmt.Errorf("record review of %s: %w", patchID, err)
	}
	return r, nil
}

// Publish posts author's drafts on the patch, with summary (a review
// without an anchor; nil for none) after them, as one review.posted
// event whose data carries the summary as "review" and the drafts as
// "comments". It returns what it posted; nothing (no drafts, no
// summary) is fault.Usage.
func Publish(ctx context.Context, tx store.Querier, repo, patchID, author string, summary *Review, now time.Time) ([]Review, error) {
	drafts, err := Drafts(ctx, tx, repo, patchID, author)
	if err != nil {
		return nil, err
	}
	if len(drafts) == 0 && summary == nil {
		return nil, fault.New(fault.Usage, "nothing to publish: you have no drafts on patch %s; give a verdict or --body", patchID)
	}
	at := store.At(now)
	if _, err := tx.ExecContext(ctx, `UPDATE reviews SET draft = 0, created_at = ? WHERE repo = ? AND patch_id = ? AND author = ? AND draft = 1`,
		at, repo, patchID, author); err != nil {
		return nil, fmt.Errorf("publish drafts on %s: %w", patchID, err)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE patches SET updated_at = ? WHERE repo = ? AND id = ?", at, repo, patchID); err != nil {
		return nil, fmt.Errorf("publish drafts on %s: %w", patchID, err)
	}
	posted := make([]Review, 0, len(drafts)+1)
	for _, d := range drafts {
		d.Draft, d.CreatedAt = false, at
		if d.Unresolved, err = issues.RecordRefs(ctx, tx, repo, "review", d.ID, author, d.Body); err != nil {
			return nil, err
		}
		posted = append(posted, d)
	}
	data := map[string]any{"patch_id": patchID, "review": nil, "comments": posted}
	if summary != nil {
		s, err := insertReview(ctx, tx, repo, patchID, *summary, now)
		if err != nil {
			return nil, err
		}
		if s.Unresolved, err = issues.RecordRefs(ctx, tx, repo, "review", s.ID, author, s.Body); err != nil {
			return nil, err
		}
		data["review"] = s
		data["comments"] = append([]Review{}, posted...)
		posted = append(posted, s)
	}
	if _, err := events.Emit(ctx, tx, events.ReviewPosted, repo, author, now, data); err != nil {
		return nil, err
	}
	return posted, nil
}

// Comment returns the posted review id of patchID, or one of viewer's
// drafts there (fault.NotFound otherwise: another patch's comment, or
// someone else's draft, is not there).
func Comment(ctx context.Context, q store.Querier, repo, patchID, id, viewer string) (Review, error) {
	var out []Review
	err := store.Each(ctx, q, "SELECT "+reviewCols+" FROM reviews WHERE repo = ? AND patch_id = ? AND id = ? AND (draft = 0 OR author = ?)",
		[]any{repo, patchID, id, viewer}, func(rows *sql.Rows) error {
			r, err := scanReview(rows)
			out = append(out, r)
			return err
		})
	if err != nil {
		return Review{}, fmt.Errorf("read comment %s: %w", id, err)
	}
	if len(out) == 0 {
		return Review{}, fault.New(fault.NotFound, "no comment %s on patch %s", id, patchID)
	}
	return out[0], nil
}

// ResolveComment returns the full id of the comment on patchID that
// prefix names (posted, or viewer's draft).
func ResolveComment(ctx context.Context, q store.Querier, repo, patchID, prefix, viewer string) (string, error) {
	return store.Resolve(ctx, q, "comment", prefix,
		"SELECT id FROM reviews WHERE repo = ? AND patch_id = ? AND (draft = 0 OR author = ?) AND id >= ? AND id < ? ORDER BY id LIMIT 11", repo, patchID, viewer)
}

// SetResolved marks inline thread (its first comment's id) of patchID
// resolved or not, by who, with its review.resolved event. It reports
// whether anything changed.
func SetResolved(ctx context.Context, tx store.Querier, repo, patchID, thread string, resolved bool, by string, now time.Time) (bool, error) {
	var byCol any
	if resolved {
		byCol = by
	}
	res, err := tx.ExecContext(ctx, `UPDATE reviews SET resolved = ?, resolved_by = ?
		WHERE repo = ? AND patch_id = ? AND id = ? AND thread = id AND draft = 0 AND resolved != ?`,
		resolved, byCol, repo, patchID, thread, resolved)
	if err != nil {
		return false, fmt.Errorf("resolve thread %s: %w", thread, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, "UPDATE patches SET updated_at = ? WHERE repo = ? AND id = ?", store.FormatTime(now), repo, patchID); err != nil {
		return false, fmt.Errorf("resolve thread %s: %w", thread, err)
	}
	_, err = events.Emit(ctx, tx, events.ReviewResolved, repo, by, now, map[string]any{
		"patch_id": patchID, "thread": thread, "resolved": resolved,
	})
	return err == nil, err
}

// Sides of an inline comment: the revision's file, or its base's.
const (
	SideNew = "new"
	SideOld = "old"
)

// reviewCols are the columns scanReview reads; resolved is the thread's,
// kept on its first comment.
const reviewCols = `id, revision, author, on_behalf_of, via, verdict, body, file, line, created_at, side, thread,
	COALESCE((SELECT t.resolved FROM reviews t WHERE t.id = reviews.thread), 0), draft`

// scanReview reads reviewCols, after the columns lead (if any) scans into.
func scanReview(rows *sql.Rows, lead ...any) (Review, error) {
	var r Review
	var file, side, thread sql.NullString
	var line sql.NullInt64
	if err := rows.Scan(append(lead, &r.ID, &r.Revision, &r.Author, &r.OnBehalfOf, &r.Via, &r.Verdict, &r.Body, &file, &line, &r.CreatedAt,
		&side, &thread, &r.Resolved, &r.Draft)...); err != nil {
		return Review{}, err
	}
	if file.Valid {
		r.File = &file.String
	}
	if line.Valid {
		n := int(line.Int64)
		r.Line = &n
	}
	if side.Valid {
		r.Side = &side.String
	}
	if thread.Valid {
		r.Thread = &thread.String
	}
	return r, nil
}

// Reviews returns the posted reviews of a patch, oldest first (drafts
// are their authors' alone: Drafts).
func Reviews(ctx context.Context, q store.Querier, repo, id string) ([]Review, error) {
	return readReviews(ctx, q, id, "SELECT "+reviewCols+" FROM reviews WHERE repo = ? AND patch_id = ? AND draft = 0 ORDER BY seq", repo, id)
}

// Drafts returns author's drafts on a patch, oldest first.
func Drafts(ctx context.Context, q store.Querier, repo, id, author string) ([]Review, error) {
	return readReviews(ctx, q, id, "SELECT "+reviewCols+" FROM reviews WHERE repo = ? AND patch_id = ? AND author = ? AND draft = 1 ORDER BY seq", repo, id, author)
}

func readReviews(ctx context.Context, q store.Querier, id, query string, args ...any) ([]Review, error) {
	out := []Review{}
	err := store.Each(ctx, q, query, args,
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
