// Package issues keeps issues and their comments.
//
// Writers take the caller's write transaction (store.Querier) so that a
// change and its event commit together; readers take any Querier. Change
// applies the rule of who may close, reopen or retitle (MayChange) and the
// lease fence; for the other writers access checks and fencing are the
// caller's (internal/verbs, the web API, the push hooks), made in the same
// transaction through leases.Fence and leases.LiveHolder.
package issues

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/collab-forge/collab/internal/events"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/ids"
	"github.com/collab-forge/collab/internal/leases"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/text"
)

// State is an issue's state.
type State string

// States of an issue.
const (
	Open   State = "open"
	Closed State = "closed"
)

// All is the state filter that lists issues in every state.
const All = "all"

// Limits on what a client may file.
const (
	MaxTitle = 512
	MaxBody  = text.MaxBody
)

// Issue is the contract's issue object.
type Issue struct {
	ID     string `json:"id"`
	Repo   string `json:"repo"`
	Title  string `json:"title"`
	Body   string `json:"body"`
	State  State  `json:"state"`
	Author string `json:"author"`
	events.Behalf
	CreatedAt store.Time    `json:"created_at"`
	UpdatedAt store.Time    `json:"updated_at"`
	ClosedAt  *store.Time   `json:"closed_at"`
	Labels    []string      `json:"labels"` // sorted, never nil
	Lease     *leases.Lease `json:"lease"`
	// Unresolved, in the answer to the write that filed it, are the
	// references of its body that stayed text.
	Unresolved []Unresolved `json:"unresolved,omitempty"`

	seq int64
}

// Comment is the contract's comment object.
type Comment struct {
	ID      string `json:"id"`
	Repo    string `json:"repo"`
	IssueID string `json:"issue_id"`
	Author  string `json:"author"`
	events.Behalf
	Body      string     `json:"body"`
	CreatedAt store.Time `json:"created_at"`
	// Unresolved, in the answer to the write that made it, are the
	// references of its body that stayed text.
	Unresolved []Unresolved `json:"unresolved,omitempty"`
}

// commentCols are the columns scanComment reads.
const commentCols = "id, author, on_behalf_of, via, body, created_at"

func scanComment(s scanner, c *Comment) error {
	return s.Scan(&c.ID, &c.Author, &c.OnBehalfOf, &c.Via, &c.Body, &c.CreatedAt)
}

// Detail is an issue as `issue show` and the API's GET print it: with its
// comments, linked patches and lease history.
type Detail struct {
	Issue
	Comments []Comment       `json:"comments"`
	Patches  []string        `json:"patches"`
	Tenures  []leases.Tenure `json:"tenures"`
	Refs     []Ref           `json:"refs"`
	// Links are the explicit links (issue link), from either side.
	Links []Link `json:"links"`
	// MentionedIn are the issues and patches whose text refers to this
	// one.
	MentionedIn []Mention `json:"mentioned_in"`
}

// Resolve returns the full id of the issue in repo that prefix names
// (fault.NotFound / fault.Usage with candidates otherwise).
func Resolve(ctx context.Context, q store.Querier, repo, prefix string) (string, error) {
	return store.Resolve(ctx, q, "issue", prefix,
		"SELECT id FROM issues WHERE repo = ? AND id >= ? AND id < ? ORDER BY id LIMIT 11", repo)
}

// ResolveOpen resolves prefix against the open issues of repo only: what a
// lease can be acquired on.
func ResolveOpen(ctx context.Context, q store.Querier, repo, prefix string) (string, error) {
	return store.Resolve(ctx, q, "open issue", prefix,
		"SELECT id FROM issues WHERE repo = ? AND state = 'open' AND id >= ? AND id < ? ORDER BY id LIMIT 11", repo)
}

// ResolveLeased resolves prefix against the lease rows of repo (free ones
// included), so that a lease on an issue closed since can be renewed.
func ResolveLeased(ctx context.Context, q store.Querier, repo, prefix string) (string, error) {
	return store.Resolve(ctx, q, "lease on issue", prefix,
		"SELECT issue_id FROM leases WHERE repo = ? AND issue_id >= ? AND issue_id < ? ORDER BY issue_id LIMIT 11", repo)
}

// ResolveIssueOrLease resolves prefix against the issues and the lease rows
// of repo together: what a release is resolved against.
func ResolveIssueOrLease(ctx context.Context, q store.Querier, repo, prefix string) (string, error) {
	return store.Resolve(ctx, q, "issue", prefix, `SELECT id FROM (
		SELECT id FROM issues WHERE repo = ?1 UNION SELECT issue_id FROM leases WHERE repo = ?1
	) AS u WHERE id >= ?2 AND id < ?3 ORDER BY id LIMIT 11`, repo)
}

// CheckTitle refuses an empty, multi-line or oversized title, or one that
// is not UTF-8 or holds a control character (text.CheckLine: a title is
// printed inside other lines), and returns it trimmed.
func CheckTitle(title string) (string, error) {
	t := strings.TrimSpace(title)
	switch {
	case t == "":
		return "", fault.New(fault.Usage, "empty title")
	case len(t) > MaxTitle:
		return "", fault.New(fault.Usage, "title too long: %d bytes, at most %d", len(t), MaxTitle)
	case strings.ContainsAny(t, "\r\n"):
		return "", fault.New(fault.Usage, "title must be one line")
	}
	return t, text.CheckLine("title", t, MaxTitle)
}

// CheckBody refuses an oversized or non-UTF-8 body, or one holding a NUL.
func CheckBody(body string) error {
	return text.Check("body", body, MaxBody)
}

// New files an issue (event issue.filed) and records the references in its
// body.
func New(ctx context.Context, tx store.Querier, repo, author, title, body string, now time.Time) (Issue, error) {
	return NewFor(ctx, tx, repo, author, events.Behalf{}, title, body, now)
}

// NewFor is New for an author who files the issue on behalf of someone
// (b; the zero Behalf: its own).
func NewFor(ctx context.Context, tx store.Querier, repo, author string, b events.Behalf, title, body string, now time.Time) (Issue, error) {
	title, err := CheckTitle(title)
	if err != nil {
		return Issue{}, err
	}
	if err := CheckBody(body); err != nil {
		return Issue{}, err
	}
	ts := store.FormatTime(now)
	is := Issue{ID: ids.New(), Repo: repo, Title: title, Body: body, State: Open, Author: author, Behalf: b, CreatedAt: store.At(now), UpdatedAt: store.At(now), Labels: []string{}}
	if _, err := tx.ExecContext(ctx, `INSERT INTO issues(repo, id, title, body, state, author, created_at, updated_at, on_behalf_of, via)
		VALUES (?, ?, ?, ?, 'open', ?, ?, ?, ?, ?)`, repo, is.ID, title, body, author, ts, ts, b.OnBehalfOf, b.Via); err != nil {
		return Issue{}, fmt.Errorf("file issue: %w", err)
	}
	unresolved, err := RecordRefs(ctx, tx, repo, "issue", is.ID, author, body)
	if err != nil {
		return Issue{}, err
	}
	if _, err := events.Emit(ctx, tx, events.IssueFiled, repo, author, now, is); err != nil {
		return Issue{}, err
	}
	is.Unresolved = unresolved
	return is, nil
}

const issueCols = "i.seq, i.id, i.repo, i.title, i.body, i.state, i.author, i.on_behalf_of, i.via, i.created_at, i.updated_at, i.closed_at, " +
	"l.holder, l.token, l.acquired_at, l.expires_at, " + labelsCol

// liveJoin joins the live lease of each issue; its one argument is now.
const liveJoin = ` LEFT JOIN leases l ON l.repo = i.repo AND l.issue_id = i.id AND l.holder IS NOT NULL
	AND (l.expires_at IS NULL OR l.expires_at > ?)`

type scanner interface{ Scan(dest ...any) error }

func scanIssue(s scanner) (Issue, error) {
	var is Issue
	var closed, holder, acq, exp sql.NullString
	var token sql.NullInt64
	var ls sql.NullString
	// The typed fields scan as the strings they are, on database/sql's
	// fast path for *string (a list reads thousands); the forge wrote these
	// columns itself, times in the canonical form.
	if err := s.Scan(&is.seq, &is.ID, &is.Repo, &is.Title, &is.Body, (*string)(&is.State), &is.Author, &is.OnBehalfOf, &is.Via,
		(*string)(&is.CreatedAt), (*string)(&is.UpdatedAt), &closed, &holder, &token, &acq, &exp, &ls); err != nil {
		return Issue{}, err
	}
	is.Labels = splitLabels(ls.String)
	if closed.Valid {
		is.ClosedAt = (*store.Time)(&closed.String)
	}
	if holder.Valid {
		l, err := leases.Scanned(is.Repo, is.ID, holder.String, token.Int64, acq.String, exp)
		if err != nil {
			return Issue{}, err
		}
		is.Lease = &l
	}
	return is, nil
}

// Lookup returns the issue with its live lease, or ok=false when repo has
// no issue id.
func Lookup(ctx context.Context, q store.Querier, repo, id string, now time.Time) (is Issue, ok bool, err error) {
	is, err = scanIssue(q.QueryRowContext(ctx, "SELECT "+issueCols+" FROM issues i"+liveJoin+" WHERE i.repo = ? AND i.id = ?",
		store.FormatTime(now), repo, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Issue{}, false, nil
	}
	if err != nil {
		return Issue{}, false, fmt.Errorf("read issue %s: %w", id, err)
	}
	return is, true, nil
}

// Get returns the issue with its comments, live lease, lease history,
// linked patches and references; a missing one is fault.NotFound.
func Get(ctx context.Context, q store.Querier, repo, id string, now time.Time) (Detail, error) {
	d, err := GetHead(ctx, q, repo, id, now)
	if err != nil {
		return Detail{}, err
	}
	if d.Comments, err = Comments(ctx, q, repo, id); err != nil {
		return Detail{}, err
	}
	return d, nil
}

// GetHead is Get without the comments (Comments is nil): for a reader
// that pages through them (CommentPage).
func GetHead(ctx context.Context, q store.Querier, repo, id string, now time.Time) (Detail, error) {
	is, ok, err := Lookup(ctx, q, repo, id, now)
	if err != nil {
		return Detail{}, err
	}
	if !ok {
		return Detail{}, fault.New(fault.NotFound, "no issue %s", id)
	}
	d := Detail{Issue: is}
	if d.Tenures, err = leases.Tenures(ctx, q, repo, id, now); err != nil {
		return Detail{}, err
	}
	if d.Patches, err = linkedPatches(ctx, q, repo, id); err != nil {
		return Detail{}, err
	}
	if d.Refs, err = refsOf(ctx, q, repo, id); err != nil {
		return Detail{}, err
	}
	if d.Links, err = Links(ctx, q, repo, id); err != nil {
		return Detail{}, err
	}
	if d.MentionedIn, err = Mentions(ctx, q, repo, id); err != nil {
		return Detail{}, err
	}
	return d, nil
}

// linkedPatches returns the ids of the patches that fix the issue, oldest
// first. (Read here rather than through internal/patches, which the push
// path that calls CloseByMerge may import.)
func linkedPatches(ctx context.Context, q store.Querier, repo, id string) ([]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT pi.patch_id FROM patch_issues pi
		LEFT JOIN patches p ON p.repo = pi.repo AND p.id = pi.patch_id
		WHERE pi.repo = ? AND pi.issue_id = ? ORDER BY p.seq, pi.patch_id`, repo, id)
	if err != nil {
		return nil, fmt.Errorf("read patches of issue %s: %w", id, err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, fmt.Errorf("read patches of issue %s: %w", id, err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// Comments returns the comments of an issue, oldest first.
func Comments(ctx context.Context, q store.Querier, repo, id string) ([]Comment, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+commentCols+` FROM comments
		WHERE repo = ? AND issue_id = ? ORDER BY seq`, repo, id)
	if err != nil {
		return nil, fmt.Errorf("read comments of %s: %w", id, err)
	}
	defer rows.Close()
	out := []Comment{}
	for rows.Next() {
		c := Comment{Repo: repo, IssueID: id}
		if err := scanComment(rows, &c); err != nil {
			return nil, fmt.Errorf("read comments of %s: %w", id, err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// List returns the issues of repo in state (open, closed or all; "" means
// open), newest first, at most limit (<= 0: 50; capped at 1000), starting
// after the issue after (a full id or prefix; "" starts at the newest).
// Each carries its live lease; comments are left out.
func List(ctx context.Context, q store.Querier, repo, state string, limit int, after string, now time.Time) ([]Issue, error) {
	state, limit, err := pageOf(state, limit)
	if err != nil {
		return nil, err
	}
	where := "i.repo = ?"
	args := []any{store.FormatTime(now), repo}
	if state != All {
		where += " AND i.state = ?"
		args = append(args, state)
	}
	cond, aargs, err := afterCond(ctx, q, repo, after, "i.seq")
	if err != nil {
		return nil, err
	}
	args = append(append(args, aargs...), limit)
	out, err := selectIssues(ctx, q, "SELECT "+issueCols+" FROM issues i"+liveJoin+" WHERE "+where+cond+" ORDER BY i.seq DESC LIMIT ?", args)
	if err != nil {
		return nil, fmt.Errorf("list issues: %w", err)
	}
	return out, nil
}

// pageOf checks a list's state filter ("" is open) and bounds its limit
// (<= 0: 50; at most 1000).
func pageOf(state string, limit int) (string, int, error) {
	if state == "" {
		state = string(Open)
	}
	if err := CheckState(state); err != nil {
		return "", 0, err
	}
	if limit <= 0 {
		limit = 50
	}
	return state, min(limit, 1000), nil
}

// afterCond is the condition on seqCol, with its arguments, that starts a
// page after the issue after (a full id or prefix); none for "".
func afterCond(ctx context.Context, q store.Querier, repo, after, seqCol string) (string, []any, error) {
	if after == "" {
		return "", nil, nil
	}
	id, err := Resolve(ctx, q, repo, after)
	if err != nil {
		return "", nil, err
	}
	return " AND " + seqCol + " < (SELECT seq FROM issues WHERE repo = ? AND id = ?)", []any{repo, id}, nil
}

// selectIssues runs query, which selects issueCols, and reads its issues
// ([] when none).
func selectIssues(ctx context.Context, q store.Querier, query string, args []any) ([]Issue, error) {
	out := []Issue{}
	err := store.Each(ctx, q, query, args, func(rows *sql.Rows) error {
		is, err := scanIssue(rows)
		if err != nil {
			return err
		}
		out = append(out, is)
		return nil
	})
	return out, err
}

// CheckState validates a state filter word: open, closed or all.
func CheckState(s string) error {
	switch s {
	case string(Open), string(Closed), All:
		return nil
	}
	return fault.New(fault.Usage, "bad state %q: want open, closed or all", s)
}

// AddComment adds a comment to an existing issue (event issue.commented)
// and records the references in its body. Fencing is the caller's.
func AddComment(ctx context.Context, tx store.Querier, repo, issueID, author, body string, now time.Time) (Comment, error) {
	return AddCommentFor(ctx, tx, repo, issueID, author, events.Behalf{}, body, now)
}

// AddCommentFor is AddComment for an author who writes on behalf of
// someone (b; the zero Behalf: its own).
func AddCommentFor(ctx context.Context, tx store.Querier, repo, issueID, author string, b events.Behalf, body string, now time.Time) (Comment, error) {
	if strings.TrimSpace(body) == "" {
		return Comment{}, fault.New(fault.Usage, "empty comment")
	}
	if err := CheckBody(body); err != nil {
		return Comment{}, err
	}
	ts := store.FormatTime(now)
	c := Comment{ID: ids.New(), Repo: repo, IssueID: issueID, Author: author, Behalf: b, Body: body, CreatedAt: store.At(now)}
	res, err := tx.ExecContext(ctx, `INSERT INTO comments(repo, issue_id, id, author, body, created_at, on_behalf_of, via)
		SELECT repo, id, ?, ?, ?, ?, ?, ? FROM issues WHERE repo = ? AND id = ?`, c.ID, author, body, ts, b.OnBehalfOf, b.Via, repo, issueID)
	if err != nil {
		return Comment{}, fmt.Errorf("add comment: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return Comment{}, fmt.Errorf("add comment: %w", err)
	} else if n == 0 {
		return Comment{}, fault.New(fault.NotFound, "no issue %s", issueID)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE issues SET updated_at = ? WHERE repo = ? AND id = ?", ts, repo, issueID); err != nil {
		return Comment{}, fmt.Errorf("add comment: %w", err)
	}
	unresolved, err := RecordRefs(ctx, tx, repo, "comment", c.ID, author, body)
	if err != nil {
		return Comment{}, err
	}
	if _, err := events.Emit(ctx, tx, events.IssueCommented, repo, author, now, c); err != nil {
		return Comment{}, err
	}
	c.Unresolved = unresolved
	return c, nil
}

// SetState closes or reopens an issue for actor (event issue.closed or
// issue.reopened) and returns it with changed=false, and no event, when it
// was in that state already. Access and lease checks are the caller's.
func SetState(ctx context.Context, tx store.Querier, repo, issueID string, state State, actor string, now time.Time) (is Issue, changed bool, err error) {
	return setState(ctx, tx, repo, issueID, state, actor, "", now)
}

// stateEvent is the data of issue.closed/issue.reopened: the issue, and for
// a close by a merge the commit that said "Fixes:".
type stateEvent struct {
	Issue
	Commit string `json:"commit,omitempty"`
}

func setState(ctx context.Context, tx store.Querier, repo, issueID string, state State, actor, commit string, now time.Time) (is Issue, changed bool, err error) {
	var kind string
	var closedAt any
	ts := store.FormatTime(now)
	switch state {
	case Closed:
		kind, closedAt = events.IssueClosed, ts
	case Open:
		kind = events.IssueReopened
	default:
		return Issue{}, false, fault.New(fault.Usage, "bad state %q: want open or closed", state)
	}
	res, err := tx.ExecContext(ctx, `UPDATE issues SET state = ?, closed_at = ?, updated_at = ?
		WHERE repo = ? AND id = ? AND state != ?`, state, closedAt, ts, repo, issueID, state)
	if err != nil {
		return Issue{}, false, fmt.Errorf("set state of issue %s: %w", issueID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return Issue{}, false, fmt.Errorf("set state of issue %s: %w", issueID, err)
	}
	is, ok, err := Lookup(ctx, tx, repo, issueID, now)
	if err != nil {
		return Issue{}, false, err
	}
	if !ok {
		return Issue{}, false, fault.New(fault.NotFound, "no issue %s", issueID)
	}
	if n == 0 {
		return is, false, nil
	}
	if _, err := events.Emit(ctx, tx, kind, repo, actor, now, stateEvent{is, commit}); err != nil {
		return Issue{}, false, err
	}
	return is, true, nil
}

// CloseByMerge closes an open issue because a merged commit says
// "Fixes: ID", whoever pushed: event issue.closed, and a live lease on it
// ends (leases.EndByMerge). A closed or missing issue is a no-op.
func CloseByMerge(ctx context.Context, tx store.Querier, repo, issueID, actor, commit string, now time.Time) error {
	_, changed, err := setState(ctx, tx, repo, issueID, Closed, actor, commit, now)
	if err != nil {
		if fault.KindOf(err) == fault.NotFound {
			return nil
		}
		return err
	}
	if !changed {
		return nil
	}
	return leases.EndByMerge(ctx, tx, repo, issueID, actor, now)
}
