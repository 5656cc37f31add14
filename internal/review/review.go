// Package review keeps the code review of patches: reviews with a verdict,
// inline comments anchored to the revision they were written on, the
// review summary, the timeline, and the manual close, reopen and merge.
//
// Writers check access and fencing and emit their event inside one
// db.Write transaction; readers take any store.Querier.
package review

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/events"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/ids"
	"github.com/collab-forge/collab/internal/issues"
	"github.com/collab-forge/collab/internal/leases"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/text"
)

// Verdicts of a review.
const (
	Approve        = "approve"
	RequestChanges = "request-changes"
	Comment        = "comment"
)

// MaxBody bounds a review's body.
const MaxBody = text.MaxBody

// Input is a review to post.
type Input struct {
	Repo    string // repository key
	PatchID string // full patch id
	Author  string
	Verdict string // Approve, RequestChanges or Comment
	Body    string
	// Revision is the revision reviewed; 0 means the latest.
	Revision int
	// File and Line anchor an inline comment ("" and 0: none; a File
	// without a Line is a comment on the whole file).
	File string
	Line int
	// LeaseToken fences the review: "N" when the patch links exactly one
	// issue, else "ISSUE:N"; "" means unfenced.
	LeaseToken string
	// Words names these fields in refusals the way the caller takes them.
	Words Words
}

// Words says how refusals name Input's fields: as the verbs' flags
// (Flags, the zero value) or as the HTTP API's JSON fields and header
// (Fields, which the patch page's form shares).
type Words int

const (
	Flags Words = iota
	Fields
)

// field names the body, file or line.
func (w Words) field(name string) string {
	if w == Fields {
		return `"` + name + `"`
	}
	return "--" + name
}

// token is how a lease token is given, up to its value.
func (w Words) token() string {
	if w == Fields {
		return "X-Lease-Token: "
	}
	return "--lease-token "
}

// Need is the access level a verdict needs: a vote needs write, a comment
// only read.
func Need(verdict string) access.Level {
	if verdict == Comment {
		return access.Read
	}
	return access.Write
}

// CheckVerdict validates a verdict word.
func CheckVerdict(v string) error {
	switch v {
	case Approve, RequestChanges, Comment:
		return nil
	}
	return fault.New(fault.Usage, "bad verdict %q: want approve, request-changes or comment", v)
}

// Post records a review in one transaction with its review.posted event,
// after checking the principal's access, the revision, the inline anchor
// (against that revision's tree in repoDir) and the lease token.
func Post(ctx context.Context, db *store.DB, repoDir string, in Input, now time.Time) (patches.Review, error) {
	if err := CheckVerdict(in.Verdict); err != nil {
		return patches.Review{}, err
	}
	body := strings.TrimRight(in.Body, "\r\n\t ")
	if err := text.Check("body", body, MaxBody); err != nil {
		return patches.Review{}, err
	}
	if strings.TrimSpace(body) == "" && (in.Verdict == Comment || in.File != "") {
		return patches.Review{}, fault.New(fault.Usage, "a comment needs a body (%s)", in.Words.field("body"))
	}
	if in.Line != 0 && in.File == "" {
		return patches.Review{}, fault.New(fault.Usage, "%s needs %s", in.Words.field("line"), in.Words.field("file"))
	}
	if in.Line < 0 {
		return patches.Review{}, fault.New(fault.Usage, "bad line %d: lines are numbered from 1", in.Line)
	}
	if in.Revision < 0 {
		return patches.Review{}, fault.New(fault.Usage, "bad revision %d: revisions are numbered from 1", in.Revision)
	}
	fence, err := parseLeaseToken(in.LeaseToken)
	if err != nil {
		return patches.Review{}, err
	}
	// Revisions never change once pinned, so the anchor can be checked
	// against git before the write transaction.
	rev, err := revision(ctx, db.R(), in.Repo, in.PatchID, in.Revision)
	if err != nil {
		return patches.Review{}, err
	}
	var file *string
	var line *int
	if in.File != "" {
		p, err := CheckAnchor(ctx, repoDir, rev, in.File, in.Line)
		if err != nil {
			return patches.Review{}, err
		}
		file = &p
		if in.Line > 0 {
			l := in.Line
			line = &l
		}
	}
	r := patches.Review{
		ID: ids.New(), Revision: rev.Number, Author: in.Author, Verdict: in.Verdict,
		Body: body, File: file, Line: line, CreatedAt: store.FormatTime(now),
	}
	err = db.Write(ctx, func(tx *sql.Tx) error {
		if _, err := access.Require(ctx, tx, in.Author, in.Repo, Need(in.Verdict)); err != nil {
			return err
		}
		p, ok, err := patches.Lookup(ctx, tx, in.Repo, in.PatchID)
		if err != nil {
			return err
		}
		if !ok {
			return fault.New(fault.NotFound, "no patch %s", in.PatchID)
		}
		if in.Verdict != Comment && p.State != patches.Open {
			return fault.New(fault.Conflict, "patch %s is %s: only comments are taken now", in.PatchID, p.State)
		}
		if fence != nil {
			issueID, err := fence.issue(ctx, tx, in.Repo, in.PatchID, in.Words)
			if err != nil {
				return err
			}
			if err := leases.Fence(ctx, tx, in.Repo, issueID, in.Author, fence.token, now); err != nil {
				return err
			}
		}
		var fileArg, lineArg any
		if file != nil {
			fileArg = *file
		}
		if line != nil {
			lineArg = *line
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO reviews(repo, patch_id, id, revision, author, verdict, body, file, line, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			in.Repo, in.PatchID, r.ID, r.Revision, r.Author, r.Verdict, r.Body, fileArg, lineArg, r.CreatedAt); err != nil {
			return fmt.Errorf("record review of %s: %w", in.PatchID, err)
		}
		if _, err := tx.ExecContext(ctx, "UPDATE patches SET updated_at = ? WHERE repo = ? AND id = ?", r.CreatedAt, in.Repo, in.PatchID); err != nil {
			return fmt.Errorf("record review of %s: %w", in.PatchID, err)
		}
		if err := issues.RecordRefs(ctx, tx, in.Repo, "review", r.ID, r.Body); err != nil {
			return err
		}
		_, err = events.Emit(ctx, tx, events.ReviewPosted, in.Repo, in.Author, now, map[string]any{
			"patch_id": in.PatchID, "review": r,
		})
		return err
	})
	if err != nil {
		return patches.Review{}, err
	}
	return r, nil
}

// revision returns revision n of a patch, or its latest when n is 0.
func revision(ctx context.Context, q store.Querier, repo, patchID string, n int) (patches.Revision, error) {
	if n > 0 {
		return patches.RevisionN(ctx, q, repo, patchID, n)
	}
	revs, err := patches.Revisions(ctx, q, repo, patchID)
	if err != nil {
		return patches.Revision{}, err
	}
	if len(revs) == 0 {
		return patches.Revision{}, fault.New(fault.NotFound, "patch %s has no revisions", patchID)
	}
	return revs[len(revs)-1], nil
}

// leaseFence is a parsed --lease-token: an issue prefix (empty for the
// plain form) and the token.
type leaseFence struct {
	issuePrefix string
	token       int64
}

// parseLeaseToken reads "N" or "ISSUE:N" ("" gives nil).
func parseLeaseToken(s string) (*leaseFence, error) {
	if s == "" {
		return nil, nil
	}
	issue, tok, named := strings.Cut(s, ":")
	if !named {
		tok, issue = issue, ""
	}
	n, err := strconv.ParseInt(tok, 10, 64)
	if err != nil || n <= 0 {
		return nil, fault.New(fault.Usage, "bad lease token %q: want N or ISSUE:N with N a positive integer", text.Clip(s))
	}
	if named {
		if _, err := ids.CheckPrefix(issue); err != nil {
			return nil, fault.New(fault.Usage, "bad lease token %q: want N or ISSUE:N with ISSUE an issue id", text.Clip(s))
		}
	}
	return &leaseFence{issuePrefix: issue, token: n}, nil
}

// issue names the issue the token is for, as -o lease= does on a push:
// the plain form needs a patch linking exactly one issue.
func (f *leaseFence) issue(ctx context.Context, q store.Querier, repo, patchID string, w Words) (string, error) {
	if f.issuePrefix != "" {
		return issues.Resolve(ctx, q, repo, f.issuePrefix)
	}
	linked, err := patches.Issues(ctx, q, repo, patchID)
	if err != nil {
		return "", err
	}
	switch len(linked) {
	case 1:
		return linked[0], nil
	case 0:
		return "", fault.New(fault.Usage, "lease token %d names no issue: patch %s links none; give %sISSUE:%d", f.token, patchID, w.token(), f.token)
	default:
		return "", fault.New(fault.Usage, "lease token %d is ambiguous: patch %s links %d issues; give %sISSUE:%d", f.token, patchID, len(linked), w.token(), f.token)
	}
}

// SetState closes (patches.Closed) or reopens (patches.Open) a patch for
// actor, who needs write access. changed is false when it already was.
func SetState(ctx context.Context, db *store.DB, repo, patchID, state, actor string, now time.Time) (changed bool, err error) {
	err = db.Write(ctx, func(tx *sql.Tx) error {
		if _, err := access.Require(ctx, tx, actor, repo, access.Write); err != nil {
			return err
		}
		changed, err = patches.SetState(ctx, tx, repo, patchID, state, actor, now)
		return err
	})
	return changed, err
}

// Merge records by hand that patch patchID was merged as commit (a full or
// abbreviated oid), which must be reachable from the patch's target
// branch in repoDir: the fallback for a merge the scan did not see. It
// returns the merge record; recorded is false when the patch already was
// merged as that very commit (a repeated call is a no-op).
func Merge(ctx context.Context, db *store.DB, repoDir, repo, patchID, commit, actor string, now time.Time) (m patches.Merge, recorded bool, err error) {
	if _, err := access.Require(ctx, db.R(), actor, repo, access.Write); err != nil {
		return patches.Merge{}, false, err
	}
	p, ok, err := patches.Lookup(ctx, db.R(), repo, patchID)
	if err != nil {
		return patches.Merge{}, false, err
	}
	if !ok {
		return patches.Merge{}, false, fault.New(fault.NotFound, "no patch %s", patchID)
	}
	oid, err := resolveCommit(ctx, repoDir, commit)
	if err != nil {
		return patches.Merge{}, false, err
	}
	if err := reachable(ctx, repoDir, oid, p.Base); err != nil {
		return patches.Merge{}, false, err
	}
	err = db.Write(ctx, func(tx *sql.Tx) error {
		if _, err := access.Require(ctx, tx, actor, repo, access.Write); err != nil {
			return err
		}
		cur, ok, err := patches.Lookup(ctx, tx, repo, patchID)
		if err != nil {
			return err
		}
		if !ok {
			return fault.New(fault.NotFound, "no patch %s", patchID)
		}
		switch cur.State {
		case patches.Merged:
			if cur.Merge != nil && cur.Merge.Commit == oid {
				m = *cur.Merge
				return nil
			}
			if cur.Merge == nil {
				return fault.New(fault.Conflict, "patch %s is already merged", patchID)
			}
			return fault.New(fault.Conflict, "patch %s is already merged (%s on %s)", patchID, cur.Merge.Commit, cur.Merge.Branch)
		case patches.Closed:
			return fault.New(fault.Conflict, "patch %s is closed: reopen it before recording its merge", patchID)
		}
		merged, err := patches.RecordMerge(ctx, tx, repo, patchID, cur.Base, oid, actor, now)
		if err != nil {
			return err
		}
		if !merged {
			return fault.New(fault.Conflict, "patch %s is no longer open", patchID)
		}
		m = patches.Merge{Branch: cur.Base, Commit: oid, By: actor, At: store.FormatTime(now)}
		recorded = true
		return nil
	})
	if err != nil {
		return patches.Merge{}, false, err
	}
	return m, recorded, nil
}
