// Package events writes collab's outbox: every change records its event in
// the same transaction, and collab-web delivers them later.
package events

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/collab-forge/collab/internal/store"
)

// The event kinds of the contract.
const (
	IssueFiled     = "issue.filed"
	IssueCommented = "issue.commented"
	IssueClosed    = "issue.closed"
	IssueReopened  = "issue.reopened"
	IssueClaimed   = "issue.claimed"
	IssueLabeled   = "issue.labeled"
	LeaseRenewed   = "lease.renewed"
	LeaseReleased  = "lease.released"
	LeaseExpired   = "lease.expired"
	PatchCreated   = "patch.created"
	// PatchEdited and IssueEdited are the edits of patch edit, ready, wip
	// and reviewers, and of issue edit (CONTRACT.md's verb table).
	PatchEdited    = "patch.edited"
	IssueEdited    = "issue.edited"
	RevisionPushed = "revision.pushed"
	ReviewPosted   = "review.posted"
	// ReviewResolved is patch resolve's: an inline thread resolved or
	// reopened.
	ReviewResolved = "review.resolved"
	MergeRecorded  = "merge.recorded"
	// The review gate's (CONTRACT.md "Protected branches, submit and checks").
	CheckUpdated      = "check.updated"
	BranchProtected   = "branch.protected"
	BranchUnprotected = "branch.unprotected"
)

// Kinds lists every event kind.
var Kinds = []string{
	IssueFiled, IssueCommented, IssueClosed, IssueReopened, IssueClaimed, IssueLabeled,
	LeaseRenewed, LeaseReleased, LeaseExpired,
	PatchCreated, RevisionPushed, ReviewPosted, MergeRecorded,
	CheckUpdated, BranchProtected, BranchUnprotected,
	PatchEdited, IssueEdited, ReviewResolved,
}

// Event is one outbox row, in the JSON shape webhooks deliver.
type Event struct {
	ID    int64  `json:"id"`
	Event string `json:"event"`
	Repo  string `json:"repo"`
	Actor string `json:"actor"`
	Behalf
	At   string          `json:"at"`
	Data json.RawMessage `json:"data"`
}

// Behalf is whom an actor acted for (CONTRACT.md "Writes may carry
// --on-behalf-of"), kept beside the actor on every record a write makes:
// both nil for the actor's own writes.
type Behalf struct {
	OnBehalfOf *string `json:"on_behalf_of"`
	Via        *string `json:"via"`
}

// For is the Behalf of a write for person via via ("" for each: none).
func For(person, via string) Behalf {
	var b Behalf
	if person != "" {
		b.OnBehalfOf = &person
		if via != "" {
			b.Via = &via
		}
	}
	return b
}

// Set reports whether the write was made on someone's behalf.
func (b Behalf) Set() bool { return b.OnBehalfOf != nil }

// Byline names who wrote a record that actor made: "alex via triage
// (DM)" for triage acting for alex on a request that came by DM, else
// actor alone.
func (b Behalf) Byline(actor string) string {
	if b.OnBehalfOf == nil {
		return actor
	}
	s := *b.OnBehalfOf + " via " + actor
	if b.Via != nil {
		s += " (" + *b.Via + ")"
	}
	return s
}

// Mark is the newest event's id, 0 for none: Attribute stamps the events
// after it.
func Mark(ctx context.Context, tx store.Querier) (int64, error) {
	var id int64
	if err := tx.QueryRowContext(ctx, "SELECT COALESCE(MAX(id), 0) FROM events").Scan(&id); err != nil {
		return 0, fmt.Errorf("read the newest event: %w", err)
	}
	return id, nil
}

// Attribute records b on the events after mark. Called inside the write
// transaction that emitted them, after Mark at its start: the writer holds
// the database alone, so every event after mark is the write's own.
func Attribute(ctx context.Context, tx store.Querier, mark int64, b Behalf) error {
	if _, err := tx.ExecContext(ctx, "UPDATE events SET on_behalf_of = ?, via = ? WHERE id > ?", b.OnBehalfOf, b.Via, mark); err != nil {
		return fmt.Errorf("record on whose behalf: %w", err)
	}
	return nil
}

// Emit appends an event; call it with the transaction that makes the change.
func Emit(ctx context.Context, tx store.Querier, kind, repo, actor string, at time.Time, data any) (int64, error) {
	b, err := json.Marshal(data)
	if err != nil {
		return 0, fmt.Errorf("encode %s event: %w", kind, err)
	}
	var id int64
	if err := tx.QueryRowContext(ctx,
		"INSERT INTO events(event, repo, actor, at, data) VALUES (?, ?, ?, ?, ?) RETURNING id",
		kind, repo, actor, store.FormatTime(at), string(b)).Scan(&id); err != nil {
		return 0, fmt.Errorf("record %s event: %w", kind, err)
	}
	return id, nil
}

// List returns up to limit events after id after, oldest first, of the
// repositories in repos (an empty list gives none).
func List(ctx context.Context, q store.Querier, after int64, repos []string, limit int) ([]Event, error) {
	out := []Event{}
	if len(repos) == 0 {
		return out, nil
	}
	args := make([]any, 0, len(repos)+2)
	args = append(args, after)
	for _, r := range repos {
		args = append(args, r)
	}
	args = append(args, limit)
	marks := strings.Repeat(",?", len(repos))[1:]
	rows, err := q.QueryContext(ctx, `SELECT id, event, repo, actor, on_behalf_of, via, at, data FROM events
		WHERE id > ? AND repo IN (`+marks+`) ORDER BY id LIMIT ?`, args...)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var e Event
		var data string
		if err := rows.Scan(&e.ID, &e.Event, &e.Repo, &e.Actor, &e.OnBehalfOf, &e.Via, &e.At, &data); err != nil {
			return nil, fmt.Errorf("list events: %w", err)
		}
		e.Data = json.RawMessage(data)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	return out, nil
}
