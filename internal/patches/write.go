package patches

import (
	"context"
	"fmt"
	"time"

	"github.com/collab-forge/collab/internal/events"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/issues"
	"github.com/collab-forge/collab/internal/store"
)

// New is what Create needs to make a patch.
type New struct {
	Repo        string
	ID          string
	Title       string
	Description string
	Topic       string
	Draft       bool
	Author      string
	Base        string // branch name without refs/heads/
	// Titled: Title or Description were given, not taken from the
	// commit message, which then no longer updates them.
	Titled bool
}

// Create records a new open patch and emits patch.created, inside tx.
func Create(ctx context.Context, tx store.Querier, n New, now time.Time) (Patch, error) {
	at := store.FormatTime(now)
	_, err := tx.ExecContext(ctx, `INSERT INTO patches(repo, id, title, description, topic, draft, state, author, base, created_at, updated_at, titled)
		VALUES (?, ?, ?, ?, ?, ?, 'open', ?, ?, ?, ?, ?)`,
		n.Repo, n.ID, n.Title, n.Description, n.Topic, n.Draft, n.Author, n.Base, at, at, n.Titled)
	if err != nil {
		return Patch{}, fmt.Errorf("create patch %s: %w", n.ID, err)
	}
	p := Patch{ID: n.ID, Repo: n.Repo, Title: n.Title, Description: n.Description, Topic: n.Topic, Draft: n.Draft,
		State: Open, Author: n.Author, Base: n.Base, CreatedAt: store.At(now), UpdatedAt: store.At(now),
		Revisions: []Revision{}, Reviews: []Review{}, Issues: []string{}}
	if _, err := events.Emit(ctx, tx, events.PatchCreated, n.Repo, n.Author, now, p); err != nil {
		return Patch{}, err
	}
	return p, nil
}

// Update is a change of a patch's descriptive fields; nil leaves a field.
type Update struct {
	Title       *string
	Description *string
	Topic       *string
	Draft       *bool
	Base        *string
	// FromCommit: Title and Description come from a new revision's commit
	// message, and apply only while nobody set them; otherwise setting
	// either marks the patch titled.
	FromCommit bool
}

// Edit applies u to the patch inside tx.
func Edit(ctx context.Context, tx store.Querier, repo, id string, u Update, now time.Time) error {
	set := "updated_at = ?"
	args := []any{store.FormatTime(now)}
	add := func(col string, v any) {
		set += ", " + col + " = ?"
		args = append(args, v)
	}
	if u.FromCommit {
		if u.Title != nil {
			set += ", title = CASE WHEN titled = 1 THEN title ELSE ? END"
			args = append(args, *u.Title)
		}
		if u.Description != nil {
			set += ", description = CASE WHEN titled = 1 THEN description ELSE ? END"
			args = append(args, *u.Description)
		}
	} else {
		if u.Title != nil {
			add("title", *u.Title)
		}
		if u.Description != nil {
			add("description", *u.Description)
		}
		if u.Title != nil || u.Description != nil {
			set += ", titled = 1"
		}
	}
	if u.Topic != nil {
		add("topic", *u.Topic)
	}
	if u.Draft != nil {
		add("draft", *u.Draft)
	}
	if u.Base != nil {
		add("base", *u.Base)
	}
	args = append(args, repo, id)
	if _, err := tx.ExecContext(ctx, "UPDATE patches SET "+set+" WHERE repo = ? AND id = ?", args...); err != nil {
		return fmt.Errorf("update patch %s: %w", id, err)
	}
	return nil
}

// AddRevision records commit as the patch's next revision and emits
// revision.pushed, inside tx. Numbers are gap-free because the number is
// taken in the same (serialised) write transaction as the insert. A commit
// that already is one of the patch's revisions is not added again: the
// existing revision comes back with added=false.
func AddRevision(ctx context.Context, tx store.Querier, repo, id, commit, baseCommit, pusher string, now time.Time) (rev Revision, added bool, err error) {
	var n int
	var r Revision
	err = tx.QueryRowContext(ctx, `SELECT number, commit_oid, base_commit, pusher, created_at, message FROM revisions
		WHERE repo = ? AND patch_id = ? AND commit_oid = ?`, repo, id, commit).
		Scan(&r.Number, &r.Commit, &r.BaseCommit, &r.Pusher, &r.CreatedAt, &r.Message)
	if err == nil {
		return r, false, nil
	}
	if err := tx.QueryRowContext(ctx, "SELECT COALESCE(MAX(number), 0) FROM revisions WHERE repo = ? AND patch_id = ?", repo, id).Scan(&n); err != nil {
		return Revision{}, false, fmt.Errorf("number revision of %s: %w", id, err)
	}
	r, err = insertRevision(ctx, tx, repo, id, n+1, Revision{Commit: commit, BaseCommit: baseCommit, Pusher: pusher}, now)
	return r, err == nil, err
}

// AddRevisionOf is AddRevision for a caller that has just read the patch's
// revisions (Revisions or RevisionsFor, in tx): the revision of r.Commit
// among revs, else r as a new one numbered after the last of them, without
// reading them again. A new one carries r's message (Gerrit's m=) and
// parent patch, in its row and in its revision.pushed; an existing one is
// returned as it is.
func AddRevisionOf(ctx context.Context, tx store.Querier, repo, id string, revs []Revision, r Revision, now time.Time) (rev Revision, added bool, err error) {
	n := 0
	for _, r := range revs {
		n = max(n, r.Number)
	}
	// The last revision of the commit: a base move (NewRevisionOf) may
	// have made it more than one.
	for i := len(revs) - 1; i >= 0; i-- {
		if revs[i].Commit == r.Commit {
			return revs[i], false, nil
		}
	}
	rev, err = insertRevision(ctx, tx, repo, id, n+1, r, now)
	return rev, err == nil, err
}

// NewRevisionOf records commit as a new revision numbered after the last
// of revs (read as for AddRevisionOf) even when it already is one: a move
// of the patch to another base makes a new revision there, so that the
// votes given on the old base, which belong to its revisions, no longer
// count.
func NewRevisionOf(ctx context.Context, tx store.Querier, repo, id string, revs []Revision, r Revision, now time.Time) (Revision, error) {
	n := 0
	for _, r := range revs {
		n = max(n, r.Number)
	}
	return insertRevision(ctx, tx, repo, id, n+1, r, now)
}

// insertRevision records r (its commit, base, pusher, message and parent)
// as revision number of patch id, touches the patch and emits
// revision.pushed, inside tx.
func insertRevision(ctx context.Context, tx store.Querier, repo, id string, number int, r Revision, now time.Time) (Revision, error) {
	r.Number, r.CreatedAt = number, store.At(now)
	_, err := tx.ExecContext(ctx, `INSERT INTO revisions(repo, patch_id, number, commit_oid, base_commit, pusher, created_at, message, parent_patch)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, repo, id, r.Number, r.Commit, r.BaseCommit, r.Pusher, r.CreatedAt, r.Message, r.Parent)
	if err != nil {
		return Revision{}, fmt.Errorf("record revision %d of %s: %w", r.Number, id, err)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE patches SET updated_at = ? WHERE repo = ? AND id = ?", r.CreatedAt, repo, id); err != nil {
		return Revision{}, fmt.Errorf("touch patch %s: %w", id, err)
	}
	data := map[string]any{"patch_id": id, "revision": r}
	if _, err := events.Emit(ctx, tx, events.RevisionPushed, repo, r.Pusher, now, data); err != nil {
		return Revision{}, err
	}
	return r, nil
}

// LinkIssue records that the patch fixes issueID (a full id); linking twice
// is a no-op. It reports whether the link is new.
func LinkIssue(ctx context.Context, tx store.Querier, repo, patchID, issueID string) (bool, error) {
	res, err := tx.ExecContext(ctx, "INSERT INTO patch_issues(repo, patch_id, issue_id) VALUES (?, ?, ?) ON CONFLICT DO NOTHING", repo, patchID, issueID)
	if err != nil {
		return false, fmt.Errorf("link issue %s to patch %s: %w", issueID, patchID, err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// RecordMerge marks an open patch merged into branch at commit by the
// pusher by, as the merge scan found it (strategy ByPush): RecordMergeAs.
func RecordMerge(ctx context.Context, tx store.Querier, repo, patchID, branch, commit, by string, now time.Time) (merged bool, err error) {
	return RecordMergeAs(ctx, tx, repo, patchID, Merge{Branch: branch, Commit: commit, By: by, Strategy: ByPush}, now)
}

// RecordMergeAs marks an open patch merged as m says (its At is now; an
// empty Strategy is ByPush), emits merge.recorded and closes every issue
// the patch links (issues.CloseByMerge, which also ends a live lease on
// it), all inside tx. A patch that is no longer open is left alone
// (merged=false), so re-running the merge scan is idempotent. Merges
// that complete someone's work go through RecordMergeFenced.
func RecordMergeAs(ctx context.Context, tx store.Querier, repo, patchID string, m Merge, now time.Time) (merged bool, err error) {
	r, err := recordMerge(ctx, tx, repo, patchID, m, nil, now, func(iss string) (bool, *issues.Kept, error) {
		return true, nil, issues.CloseByMerge(ctx, tx, repo, iss, m.By, m.Commit, now)
	})
	return r.Merged, err
}

// Completion is how a merge completes the work of the issues it fixes:
// fenced by issues.CloseFenced with Closer (whose By and Commit are the
// merge's), closing the issues the patch links, or only Own where
// OwnOnly (a merge whose content differs from every revision of the
// patch closes only what its own commits' Fixes: name).
type Completion struct {
	Closer  issues.Closer
	OwnOnly bool
	Own     []string
}

// Recorded is what RecordMergeFenced did: whether it recorded the merge,
// the issues it closed and those a lease kept open.
type Recorded struct {
	Merged bool
	Closed []string
	Kept   []issues.Kept
}

// RecordMergeFenced is RecordMergeAs for a merge that completes work:
// each issue it would close is closed by issues.CloseFenced, so a merge
// never ends a tenure it was not allowed to end.
func RecordMergeFenced(ctx context.Context, tx store.Querier, repo, patchID string, m Merge, c Completion, now time.Time) (Recorded, error) {
	c.Closer.By, c.Closer.Commit = m.By, m.Commit
	var own []string
	if c.OwnOnly {
		own = append([]string{}, c.Own...)
	}
	return recordMerge(ctx, tx, repo, patchID, m, own, now, func(iss string) (bool, *issues.Kept, error) {
		return issues.CloseFenced(ctx, tx, repo, iss, c.Closer, now)
	})
}

// recordMerge marks the patch merged and closes, by close, the issues it
// links (own instead, when not nil).
func recordMerge(ctx context.Context, tx store.Querier, repo, patchID string, m Merge, own []string, now time.Time,
	close func(iss string) (bool, *issues.Kept, error)) (Recorded, error) {
	at := store.FormatTime(now)
	m.At = store.At(now)
	if m.Strategy == "" {
		m.Strategy = ByPush
	}
	if m.Content == "" {
		m.Content = ContentSame
	}
	res, err := tx.ExecContext(ctx, `UPDATE patches SET state = 'merged', merged_branch = ?, merged_commit = ?, merged_by = ?, merged_at = ?,
		merged_strategy = ?, merged_submitted = ?, merged_content = ?, merged_tip = NULLIF(?, ''), updated_at = ?
		WHERE repo = ? AND id = ? AND state = 'open'`, m.Branch, m.Commit, m.By, at, m.Strategy, m.Submitted, m.Content, m.BranchTip, at, repo, patchID)
	if err != nil {
		return Recorded{}, fmt.Errorf("record merge of %s: %w", patchID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return Recorded{}, err
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO patch_events(repo, patch_id, kind, actor, at) VALUES (?, ?, 'merged', ?, ?)",
		repo, patchID, m.By, at); err != nil {
		return Recorded{}, fmt.Errorf("record merge of %s: %w", patchID, err)
	}
	data := map[string]any{"patch_id": patchID, "merge": m, "strategy": m.Strategy, "by": m.By, "submitted": m.Submitted, "content": m.Content}
	if _, err := events.Emit(ctx, tx, events.MergeRecorded, repo, m.By, now, data); err != nil {
		return Recorded{}, err
	}
	linked := own
	if linked == nil {
		if linked, err = Issues(ctx, tx, repo, patchID); err != nil {
			return Recorded{}, err
		}
	}
	out := Recorded{Merged: true}
	for _, iss := range linked {
		closed, kept, err := close(iss)
		if err != nil {
			return Recorded{}, fmt.Errorf("close issue %s fixed by %s: %w", iss, patchID, err)
		}
		if closed {
			out.Closed = append(out.Closed, iss)
		}
		if kept != nil {
			out.Kept = append(out.Kept, *kept)
		}
	}
	return out, nil
}

// SetState closes (state "closed") or reopens (state "open") a patch,
// inside tx. A merged patch stays merged (fault.Conflict); asking for the
// state it already has is a no-op that reports changed=false.
func SetState(ctx context.Context, tx store.Querier, repo, id string, state State, actor string, now time.Time) (changed bool, err error) {
	if state != Open && state != Closed {
		return false, fault.New(fault.Usage, "bad patch state %q: want open or closed", state)
	}
	p, ok, err := Lookup(ctx, tx, repo, id)
	if err != nil {
		return false, err
	}
	if !ok {
		return false, fault.New(fault.NotFound, "no patch %s", id)
	}
	if p.State == Merged {
		return false, fault.New(fault.Conflict, "patch %s is merged", id)
	}
	if p.State == state {
		return false, nil
	}
	at := store.FormatTime(now)
	if _, err := tx.ExecContext(ctx, "UPDATE patches SET state = ?, updated_at = ? WHERE repo = ? AND id = ?", state, at, repo, id); err != nil {
		return false, fmt.Errorf("set state of patch %s: %w", id, err)
	}
	kind := "closed"
	if state == Open {
		kind = "reopened"
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO patch_events(repo, patch_id, kind, actor, at) VALUES (?, ?, ?, ?, ?)",
		repo, id, kind, actor, at); err != nil {
		return false, fmt.Errorf("set state of patch %s: %w", id, err)
	}
	return true, nil
}

// OpenBases returns the branches that open patches of repo target, so a
// branch push that no open patch cares about can skip the merge scan.
func OpenBases(ctx context.Context, q store.Querier, repo string) (map[string]bool, error) {
	rows, err := q.QueryContext(ctx, "SELECT DISTINCT base FROM patches WHERE repo = ? AND state = 'open'", repo)
	if err != nil {
		return nil, fmt.Errorf("read open patch bases: %w", err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var b string
		if err := rows.Scan(&b); err != nil {
			return nil, fmt.Errorf("read open patch bases: %w", err)
		}
		out[b] = true
	}
	return out, rows.Err()
}

// Pinned is a pinned revision commit of an open patch.
type Pinned struct {
	PatchID string
	Number  int
}

// OpenTargeting returns the ids of the open patches of repo that target
// base, and their pinned revisions by commit.
func OpenTargeting(ctx context.Context, q store.Querier, repo, base string) (ids map[string]bool, pinned map[string][]Pinned, err error) {
	rows, err := q.QueryContext(ctx, `SELECT p.id, r.number, r.commit_oid FROM patches p
		LEFT JOIN revisions r ON r.repo = p.repo AND r.patch_id = p.id
		WHERE p.repo = ? AND p.base = ? AND p.state = 'open'`, repo, base)
	if err != nil {
		return nil, nil, fmt.Errorf("read open patches on %s: %w", base, err)
	}
	defer rows.Close()
	ids = map[string]bool{}
	pinned = map[string][]Pinned{}
	for rows.Next() {
		var id string
		var n *int
		var c *string
		if err := rows.Scan(&id, &n, &c); err != nil {
			return nil, nil, fmt.Errorf("read open patches on %s: %w", base, err)
		}
		ids[id] = true
		if n != nil && c != nil {
			pinned[*c] = append(pinned[*c], Pinned{PatchID: id, Number: *n})
		}
	}
	return ids, pinned, rows.Err()
}
