// Package events writes collab's outbox: every change records its event in
// the same transaction, and collab-web delivers them later.
package events

import (
	"context"
	"encoding/json"
	"fmt"
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
	LeaseRenewed   = "lease.renewed"
	LeaseReleased  = "lease.released"
	LeaseExpired   = "lease.expired"
	PatchCreated   = "patch.created"
	RevisionPushed = "revision.pushed"
	ReviewPosted   = "review.posted"
	MergeRecorded  = "merge.recorded"
)

// Kinds lists every event kind.
var Kinds = []string{
	IssueFiled, IssueCommented, IssueClosed, IssueReopened, IssueClaimed,
	LeaseRenewed, LeaseReleased, LeaseExpired,
	PatchCreated, RevisionPushed, ReviewPosted, MergeRecorded,
}

// Event is one outbox row, in the JSON shape webhooks deliver.
type Event struct {
	ID    int64           `json:"id"`
	Event string          `json:"event"`
	Repo  string          `json:"repo"`
	Actor string          `json:"actor"`
	At    string          `json:"at"`
	Data  json.RawMessage `json:"data"`
}

// Emit appends an event; call it with the transaction that makes the change.
func Emit(ctx context.Context, tx store.Querier, kind, repo, actor string, at time.Time, data any) (int64, error) {
	b, err := json.Marshal(data)
	if err != nil {
		return 0, fmt.Errorf("encode %s event: %w", kind, err)
	}
	res, err := tx.ExecContext(ctx,
		"INSERT INTO events(event, repo, actor, at, data) VALUES (?, ?, ?, ?, ?)",
		kind, repo, actor, store.FormatTime(at), string(b))
	if err != nil {
		return 0, fmt.Errorf("record %s event: %w", kind, err)
	}
	return res.LastInsertId()
}
