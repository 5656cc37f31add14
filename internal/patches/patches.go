// Package patches keeps patches (the refs/for flow's unit of review), their
// numbered revisions, the issues they fix and their merge records.
//
// Writers take the caller's transaction (store.Querier) so that a change and
// its event commit together; readers take any Querier.
package patches

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/collab-forge/collab/internal/events"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/issues"
	"github.com/collab-forge/collab/internal/store"
)

// State is a patch's state.
type State string

// States of a patch.
const (
	Open   State = "open"
	Merged State = "merged"
	Closed State = "closed"
)

// All is the state filter that lists patches in every state.
const All = "all"

// Revision is one pushed (or merge-pinned) version of a patch. Its diff is
// BaseCommit..Commit.
type Revision struct {
	Number     int        `json:"number"`
	Commit     string     `json:"commit"`
	BaseCommit string     `json:"base_commit"`
	Pusher     string     `json:"pusher"`
	CreatedAt  store.Time `json:"created_at"`
	// Message is what the push that made it said (Gerrit's m=), if anything.
	Message string `json:"message,omitempty"`
	// Parent is the patch whose revision is this one's parent commit, when
	// both came in one push of a stack.
	Parent string `json:"parent,omitempty"`
}

// Merge records where and by whom a patch was merged, and how: Strategy
// is the submit's (merge, ff-only, rebase, squash), or ByPush when the
// merge scan found the patch on a pushed branch; Submitted is true when
// the forge made the merge (patch submit).
type Merge struct {
	Branch string `json:"branch"`
	// Commit is the commit that brought the patch onto Branch (its own, a
	// rebased or squashed copy, or one naming it), BranchTip what the push
	// or submit moved Branch to (a submit's merge commit), where known.
	Commit    string     `json:"commit"`
	BranchTip string     `json:"branch_tip,omitempty"`
	By        string     `json:"by"`
	At        store.Time `json:"at"`
	Strategy  string     `json:"strategy"`
	Submitted bool       `json:"submitted"`
	// Content is ContentSame when the merged commit's content is that of
	// one of the patch's revisions (git patch-id --stable), else
	// ContentDiffers: a commit that only carries the patch's trailer.
	Content string `json:"content"`
}

// ByPush is the strategy of a merge the merge scan recorded; ByManual of
// one recorded by hand (patch merge).
const (
	ByPush   = "push"
	ByManual = "manual"
)

// What a merged commit's content is to the patch it is credited to.
const (
	ContentSame    = "same"
	ContentDiffers = "differs"
)

// Review is the contract's review object (reviews.go keeps its table).
// File and Line are null unless the review is an inline comment.
type Review struct {
	ID       string `json:"id"`
	Revision int    `json:"revision"`
	Author   string `json:"author"`
	events.Behalf
	Verdict   string     `json:"verdict"`
	Body      string     `json:"body"`
	File      *string    `json:"file"`
	Line      *int       `json:"line"`
	CreatedAt store.Time `json:"created_at"`
	// Side (SideOld or SideNew) and Thread (its first comment's id) are
	// an inline comment's, null otherwise; Resolved is its thread's.
	Side     *string `json:"side"`
	Thread   *string `json:"thread"`
	Resolved bool    `json:"resolved"`
	// Draft: only its author sees it, until patch publish.
	Draft bool `json:"draft,omitempty"`
	// Unresolved, in the answer to the write that posted it, are the
	// references of its body that stayed text.
	Unresolved []issues.Unresolved `json:"unresolved,omitempty"`
}

// Patch is the contract's patch object plus a few extra fields.
type Patch struct {
	ID          string     `json:"id"`
	Repo        string     `json:"repo"`
	Title       string     `json:"title"`
	Description string     `json:"description"`
	Topic       string     `json:"topic"`
	Draft       bool       `json:"draft"`
	State       State      `json:"state"`
	Author      string     `json:"author"`
	Base        string     `json:"base"`
	CreatedAt   store.Time `json:"created_at"`
	UpdatedAt   store.Time `json:"updated_at"`
	Revisions   []Revision `json:"revisions"`
	Reviews     []Review   `json:"reviews"`
	Issues      []string   `json:"issues"`
	Merge       *Merge     `json:"merge"`
	// Reviewers are the principals asked to review it, Hashtags its tags
	// (requests.go), both sorted.
	Reviewers []string `json:"reviewers"`
	Hashtags  []string `json:"hashtags"`
	// Titled: someone set the title or description (push option, patch
	// edit); until then they follow the latest revision's message.
	Titled bool `json:"-"`
	// Parents and Children are its neighbours in a stack (chain.go).
	Parents  []Related `json:"parents"`
	Children []Related `json:"children"`

	seq int64
}

// Head is the last revision, or the zero Revision when there is none.
func (p *Patch) Head() Revision {
	if len(p.Revisions) == 0 {
		return Revision{}
	}
	return p.Revisions[len(p.Revisions)-1]
}

// Resolve returns the full id of the patch in repo that prefix names
// (fault.NotFound, or fault.Usage listing candidates when ambiguous).
func Resolve(ctx context.Context, q store.Querier, repo, prefix string) (string, error) {
	return store.Resolve(ctx, q, "patch", prefix,
		"SELECT id FROM patches WHERE repo = ? AND id >= ? AND id < ? ORDER BY id LIMIT 11", repo)
}

// ResolveStripped is Resolve for a prefix sent without the id's leading
// c's, as git-review -d sends any argument (lstrip('/c'), meant for URLs
// like /c/123): the patch whose id is one or more c's and then prefix.
func ResolveStripped(ctx context.Context, q store.Querier, repo, prefix string) (string, error) {
	return store.Resolve(ctx, q, "patch", prefix,
		"SELECT id FROM patches WHERE repo = ? AND id >= 'c' AND id < 'd' AND ltrim(id, 'c') >= ? AND ltrim(id, 'c') < ? ORDER BY id LIMIT 11", repo)
}

const patchCols = `seq, id, repo, title, description, topic, draft, state, author, base,
	created_at, updated_at, merged_branch, merged_commit, merged_by, merged_at,
	COALESCE(merged_strategy, 'push'), merged_submitted, COALESCE(merged_content, 'same'), COALESCE(merged_tip, ''), titled`

type scanner interface{ Scan(dest ...any) error }

func scanPatch(s scanner) (Patch, error) {
	var p Patch
	var mb, mc, mby, mat sql.NullString
	var strategy, content, tip string
	var submitted bool
	// The typed fields scan as the strings they are, on database/sql's
	// fast path for *string; the forge wrote these columns itself.
	err := s.Scan(&p.seq, &p.ID, &p.Repo, &p.Title, &p.Description, &p.Topic, &p.Draft, (*string)(&p.State),
		&p.Author, &p.Base, (*string)(&p.CreatedAt), (*string)(&p.UpdatedAt), &mb, &mc, &mby, &mat, &strategy, &submitted, &content, &tip, &p.Titled)
	if err != nil {
		return Patch{}, err
	}
	if mc.Valid {
		p.Merge = &Merge{Branch: mb.String, Commit: mc.String, BranchTip: tip, By: mby.String, Strategy: strategy, Submitted: submitted, Content: content}
		at, err := store.NullTime(mat)
		if err != nil {
			return Patch{}, err
		}
		if at != nil {
			p.Merge.At = *at
		}
	}
	p.Revisions = []Revision{}
	p.Reviews = []Review{}
	p.Issues = []string{}
	p.Reviewers, p.Hashtags = []string{}, []string{}
	p.Parents, p.Children = []Related{}, []Related{}
	return p, nil
}

// Lookup returns the patch row without revisions, reviews or issues, or
// ok=false when repo has no patch id. It is the cheap check the hooks use.
func Lookup(ctx context.Context, q store.Querier, repo, id string) (p Patch, ok bool, err error) {
	p, err = scanPatch(q.QueryRowContext(ctx, "SELECT "+patchCols+" FROM patches WHERE repo = ? AND id = ?", repo, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Patch{}, false, nil
	}
	if err != nil {
		return Patch{}, false, fmt.Errorf("read patch %s: %w", id, err)
	}
	return p, true, nil
}

// Get returns the patch with its revisions, reviews, linked issues and
// merge record; a missing one is fault.NotFound.
func Get(ctx context.Context, q store.Querier, repo, id string) (Patch, error) {
	p, ok, err := Lookup(ctx, q, repo, id)
	if err != nil {
		return Patch{}, err
	}
	if !ok {
		return Patch{}, fault.New(fault.NotFound, "no patch %s", id)
	}
	if p.Revisions, err = Revisions(ctx, q, repo, id); err != nil {
		return Patch{}, err
	}
	if p.Issues, err = Issues(ctx, q, repo, id); err != nil {
		return Patch{}, err
	}
	if p.Reviews, err = Reviews(ctx, q, repo, id); err != nil {
		return Patch{}, err
	}
	if err := fillRequests(ctx, q, repo, []*Patch{&p}); err != nil {
		return Patch{}, err
	}
	if err := fillRelations(ctx, q, &p); err != nil {
		return Patch{}, err
	}
	return p, nil
}

// List returns the patches of repo in state (open, merged, closed, or all;
// "" means open), newest first, at most limit (<= 0: 50), starting after
// the patch id after (a full id or prefix; "" starts at the newest).
// Each carries its revisions, reviews and linked issues.
func List(ctx context.Context, q store.Querier, repo, state string, limit int, after string) ([]Patch, error) {
	return ListFiltered(ctx, q, repo, state, limit, after, Filter{})
}

// Filter narrows a list of patches beyond their state.
type Filter struct {
	// Reviewer keeps the patches that ask this principal to review them.
	Reviewer string
	// Author keeps this principal's patches.
	Author string
}

// ListFiltered is List with the patches f keeps.
func ListFiltered(ctx context.Context, q store.Querier, repo, state string, limit int, after string, f Filter) ([]Patch, error) {
	if state == "" {
		state = string(Open)
	}
	switch State(state) {
	case Open, Merged, Closed, All:
	default:
		return nil, fault.New(fault.Usage, "bad state %q: want open, merged, closed or all", state)
	}
	if limit <= 0 {
		limit = 50
	}
	where := "repo = ?"
	args := []any{repo}
	if state != All {
		where += " AND state = ?"
		args = append(args, state)
	}
	if f.Reviewer != "" {
		where += " AND id IN (SELECT patch_id FROM patch_reviewers WHERE repo = ? AND name = ?)"
		args = append(args, repo, f.Reviewer)
	}
	if f.Author != "" {
		where += " AND author = ?"
		args = append(args, f.Author)
	}
	if after != "" {
		id, err := Resolve(ctx, q, repo, after)
		if err != nil {
			return nil, err
		}
		where += " AND seq < (SELECT seq FROM patches WHERE repo = ? AND id = ?)"
		args = append(args, repo, id)
	}
	args = append(args, limit)
	page := "FROM patches WHERE " + where + " ORDER BY seq DESC LIMIT ?"
	rows, err := q.QueryContext(ctx, "SELECT "+patchCols+" "+page, args...)
	if err != nil {
		return nil, fmt.Errorf("list patches: %w", err)
	}
	out := []Patch{}
	for rows.Next() {
		p, err := scanPatch(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("list patches: %w", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return nil, fmt.Errorf("list patches: %w", err)
	}
	rows.Close()
	if len(out) == 0 {
		return out, nil
	}
	// The page's revisions, issues and reviews in one query each (the page's ids
	// selected again inside it), not two queries per patch.
	byID := make(map[string]*Patch, len(out))
	for i := range out {
		byID[out[i].ID] = &out[i]
	}
	inPage := "WHERE repo = ? AND patch_id IN (SELECT id " + page + ")"
	pageArgs := append([]any{repo}, args...)
	err = store.Each(ctx, q, "SELECT patch_id, "+revisionCols+" FROM revisions "+inPage+" ORDER BY patch_id, number", pageArgs,
		func(rows *sql.Rows) error {
			var id string
			var r Revision
			if err := rows.Scan(&id, &r.Number, &r.Commit, &r.BaseCommit, &r.Pusher, &r.CreatedAt, &r.Message, &r.Parent); err != nil {
				return err
			}
			if p := byID[id]; p != nil {
				p.Revisions = append(p.Revisions, r)
			}
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("list patches: revisions: %w", err)
	}
	err = store.Each(ctx, q, "SELECT patch_id, issue_id FROM patch_issues "+inPage+" ORDER BY patch_id, issue_id", pageArgs,
		func(rows *sql.Rows) error {
			var id, issue string
			if err := rows.Scan(&id, &issue); err != nil {
				return err
			}
			if p := byID[id]; p != nil {
				p.Issues = append(p.Issues, issue)
			}
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("list patches: issues: %w", err)
	}
	err = store.Each(ctx, q, "SELECT patch_id, "+reviewCols+" FROM reviews "+inPage+" AND draft = 0 ORDER BY seq", pageArgs,
		func(rows *sql.Rows) error {
			var id string
			r, err := scanReview(rows, &id)
			if err != nil {
				return err
			}
			if p := byID[id]; p != nil {
				p.Reviews = append(p.Reviews, r)
			}
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("list patches: reviews: %w", err)
	}
	page2 := make([]*Patch, len(out))
	for i := range out {
		page2[i] = &out[i]
	}
	if err := fillRequests(ctx, q, repo, page2); err != nil {
		return nil, fmt.Errorf("list patches: %w", err)
	}
	if err := fillRelationsPage(ctx, q, repo, page2); err != nil {
		return nil, fmt.Errorf("list patches: %w", err)
	}
	return out, nil
}

// revisionCols are the columns scanRevision reads, in its order.
const revisionCols = "number, commit_oid, base_commit, pusher, created_at, message, parent_patch"

func scanRevision(rows *sql.Rows) (Revision, error) {
	var r Revision
	err := rows.Scan(&r.Number, &r.Commit, &r.BaseCommit, &r.Pusher, &r.CreatedAt, &r.Message, &r.Parent)
	return r, err
}

// revisions reads the revisions query selects (revisionCols) with args.
func revisions(ctx context.Context, q store.Querier, id, query string, args ...any) ([]Revision, error) {
	out := []Revision{}
	err := store.Each(ctx, q, query, args, func(rows *sql.Rows) error {
		r, err := scanRevision(rows)
		if err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read revisions of %s: %w", id, err)
	}
	return out, nil
}

// Revisions returns the revisions of a patch in order, 1 first.
func Revisions(ctx context.Context, q store.Querier, repo, id string) ([]Revision, error) {
	return revisions(ctx, q, id, "SELECT "+revisionCols+" FROM revisions WHERE repo = ? AND patch_id = ? ORDER BY number", repo, id)
}

// RevisionsFor returns, in order, only the patch's last revision and the
// one of commit, where there is one: all that AddRevisionOf and a push
// need (Revisions reads every one, and they grow with each push).
func RevisionsFor(ctx context.Context, q store.Querier, repo, id, commit string) ([]Revision, error) {
	return revisions(ctx, q, id, `SELECT `+revisionCols+`
		FROM revisions WHERE repo = ?1 AND patch_id = ?2 AND commit_oid = ?3
		UNION
		SELECT `+revisionCols+`
		FROM revisions WHERE repo = ?1 AND patch_id = ?2
		AND number = (SELECT MAX(number) FROM revisions WHERE repo = ?1 AND patch_id = ?2)
		ORDER BY number`, repo, id, commit)
}

// Issues returns the ids of the issues a patch links (fixes), sorted.
func Issues(ctx context.Context, q store.Querier, repo, id string) ([]string, error) {
	rows, err := q.QueryContext(ctx,
		"SELECT issue_id FROM patch_issues WHERE repo = ? AND patch_id = ? ORDER BY issue_id", repo, id)
	if err != nil {
		return nil, fmt.Errorf("read issues of patch %s: %w", id, err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, fmt.Errorf("read issues of patch %s: %w", id, err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// CheckState validates a state filter word: open, merged, closed or all,
// in any case.
func CheckState(s string) error {
	switch State(strings.ToLower(s)) {
	case Open, Merged, Closed, All:
		return nil
	}
	return fault.New(fault.Usage, "bad state %q: want open, merged, closed or all", s)
}

// ByCommit returns the ids of the patches that have commit oid as a
// revision, the most recently created first.
func ByCommit(ctx context.Context, q store.Querier, repo, oid string) ([]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT r.patch_id FROM revisions r
		JOIN patches p ON p.repo = r.repo AND p.id = r.patch_id
		WHERE r.repo = ? AND r.commit_oid = ? ORDER BY p.seq DESC`, repo, oid)
	if err != nil {
		return nil, fmt.Errorf("find patches of commit %s: %w", oid, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, fmt.Errorf("find patches of commit %s: %w", oid, err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
