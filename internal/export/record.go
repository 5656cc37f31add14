package export

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/collab-forge/collab/internal/collabref"
	"github.com/collab-forge/collab/internal/ids"
	"github.com/collab-forge/collab/internal/store"
)

// The files of an export. Field names are the contract's JSON shapes; the
// fields of each struct are in alphabetical order so that the encoded keys
// are sorted (a test holds them to it) and exports diff cleanly.
//
// An issue's comments and lease tenures, and a patch's revisions and
// reviews, are files of their own rather than arrays in issue.json or
// patch.json, so that a new comment adds a file instead of rewriting one.
// The live lease is not exported: whether a lease is live depends on the
// clock, and the same rows must give the same tree; the tenures carry the
// whole history.

// Issue is issue.json.
type Issue struct {
	Author    string   `json:"author"`
	Body      string   `json:"body"`
	ClosedAt  *string  `json:"closed_at"`
	CreatedAt string   `json:"created_at"`
	ID        string   `json:"id"`
	Labels    []string `json:"labels"` // sorted
	// OnBehalfOf and Via: whom the author filed it for, and how the
	// request came (omitted when it was the author's own).
	OnBehalfOf *string  `json:"on_behalf_of,omitempty"`
	Patches    []string `json:"patches"` // patches that link (fix) it, oldest first
	Repo       string   `json:"repo"`
	State      string   `json:"state"`
	Title      string   `json:"title"`
	UpdatedAt  string   `json:"updated_at"`
	Via        *string  `json:"via,omitempty"`
}

// Comment is comments/NNNNNN-ID.json (NNNNNN: its position, 1 first).
type Comment struct {
	Author     string  `json:"author"`
	Body       string  `json:"body"`
	CreatedAt  string  `json:"created_at"`
	ID         string  `json:"id"`
	OnBehalfOf *string `json:"on_behalf_of,omitempty"`
	Via        *string `json:"via,omitempty"`
}

// Tenure is tenures/NNNNNN.json (NNNNNN: the token).
type Tenure struct {
	AcquiredAt string  `json:"acquired_at"`
	EndReason  *string `json:"end_reason"`
	EndedAt    *string `json:"ended_at"`
	ExpiresAt  *string `json:"expires_at"`
	Holder     string  `json:"holder"`
	Token      int64   `json:"token"`
}

// Patch is patch.json.
type Patch struct {
	Author      string   `json:"author"`
	Base        string   `json:"base"`
	CreatedAt   string   `json:"created_at"`
	Description string   `json:"description"`
	Draft       bool     `json:"draft"`
	ID          string   `json:"id"`
	Issues      []string `json:"issues"` // issues it links (fixes), sorted
	Merge       *Merge   `json:"merge"`
	Repo        string   `json:"repo"`
	State       string   `json:"state"`
	Title       string   `json:"title"`
	Topic       string   `json:"topic"`
	UpdatedAt   string   `json:"updated_at"`
}

// Merge is a patch's merge record.
type Merge struct {
	At     string `json:"at"`
	Branch string `json:"branch"`
	By     string `json:"by"`
	Commit string `json:"commit"`
}

// Revision is revisions/NNNNNN.json (NNNNNN: its number).
type Revision struct {
	BaseCommit string `json:"base_commit"`
	Commit     string `json:"commit"`
	CreatedAt  string `json:"created_at"`
	Number     int64  `json:"number"`
	Pusher     string `json:"pusher"`
}

// Review is reviews/NNNNNN-ID.json (NNNNNN: its position, 1 first).
type Review struct {
	Author     string  `json:"author"`
	Body       string  `json:"body"`
	CreatedAt  string  `json:"created_at"`
	File       *string `json:"file"`
	ID         string  `json:"id"`
	Line       *int64  `json:"line"`
	OnBehalfOf *string `json:"on_behalf_of,omitempty"`
	Revision   int64   `json:"revision"`
	Verdict    string  `json:"verdict"`
	Via        *string `json:"via,omitempty"`
}

// StateChange is states/NNNNNN.json of a patch (NNNNNN: its position, 1
// first): who closed, reopened or merged it, and when.
type StateChange struct {
	Actor string `json:"actor"`
	At    string `json:"at"`
	Kind  string `json:"kind"` // closed, reopened, merged
}

// File names inside a record's tree.
const (
	IssueFile   = "issue.json"
	PatchFile   = "patch.json"
	CommentsDir = "comments"
	TenuresDir  = "tenures"
	RevisionDir = "revisions"
	ReviewsDir  = "reviews"
	StatesDir   = "states"
)

// IssueRef and PatchRef are the refs a record lives on.
func IssueRef(id string) string { return collabref.IssueRef(id) }
func PatchRef(id string) string { return collabref.RecordRef(id) }

// record is one issue or patch ready to become a tree.
type record struct {
	ref     string
	files   []file
	newest  string // the latest time among its rows: the commit's date
	subject string
	body    string
}

func (r *record) add(path string, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	r.files = append(r.files, file{path: path, data: b.Bytes()})
	return nil
}

func (r *record) seen(times ...*string) {
	for _, t := range times {
		if t != nil && *t > r.newest {
			r.newest = *t
		}
	}
}

// when is the commit date: the record's newest change.
func (r *record) when() int64 {
	t, err := store.ParseTime(r.newest)
	if err != nil {
		if t, err = time.Parse(time.RFC3339Nano, r.newest); err != nil {
			return 0
		}
	}
	return t.Unix()
}

func (r *record) message() string {
	return r.subject + "\n\n" + r.body + "\n"
}

// oneLine makes a title fit a commit subject.
func oneLine(s string, max int) string {
	s = strings.Join(strings.FieldsFunc(s, unicode.IsControl), " ")
	if r := []rune(s); len(r) > max {
		s = string(r[:max-1]) + "…"
	}
	return s
}

// seqName is the file name of the n-th comment or review: its position
// keeps `ls` in time order, its id (when it is one) makes it findable.
func seqName(n int, id string) string {
	if ids.Valid(id) {
		return fmt.Sprintf("%06d-%s.json", n, id)
	}
	return fmt.Sprintf("%06d.json", n)
}

const expired = "expired"

func ptrTo(s string) *string { return &s }

func nullable(s sql.NullString) *string {
	if !s.Valid {
		return nil
	}
	return &s.String
}

// load reads every issue and patch of repo in one read transaction (kept
// to the reads: a long reader stops the WAL from resetting) and then turns
// them into records, issues first. Rows whose ids are not valid hex ids are
// skipped and counted in skipped: they could not name a ref.
func load(ctx context.Context, db *store.DB, repo string, now time.Time) ([]*record, int, error) {
	var issues, patches func() ([]*record, error)
	var skipped int
	err := db.Read(ctx, func(tx *sql.Tx) error {
		var err error
		var n int
		if issues, skipped, err = loadIssues(ctx, tx, repo, now); err != nil {
			return err
		}
		if patches, n, err = loadPatches(ctx, tx, repo); err != nil {
			return err
		}
		skipped += n
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	recs, err := issues()
	if err != nil {
		return nil, 0, err
	}
	ps, err := patches()
	if err != nil {
		return nil, 0, err
	}
	return append(recs, ps...), skipped, nil
}

// loadIssues reads the issues of repo with their comments, tenures and
// links, and returns the function that turns them into records, to be run
// once the read transaction is over.
func loadIssues(ctx context.Context, q store.Querier, repo string, now time.Time) (func() ([]*record, error), int, error) {
	type issueRec struct {
		issue    Issue
		comments []Comment
		tenures  []Tenure
	}
	byID := map[string]*issueRec{}
	var order []*issueRec
	skipped := 0
	args := []any{repo}
	err := store.Each(ctx, q, `SELECT id, title, body, state, author, created_at, updated_at, closed_at, on_behalf_of, via
		FROM issues WHERE repo = ? ORDER BY seq`, args, func(rows *sql.Rows) error {
		var i Issue
		var closed sql.NullString
		if err := rows.Scan(&i.ID, &i.Title, &i.Body, &i.State, &i.Author, &i.CreatedAt, &i.UpdatedAt, &closed, &i.OnBehalfOf, &i.Via); err != nil {
			return err
		}
		if !ids.Valid(i.ID) {
			skipped++
			return nil
		}
		i.Repo, i.ClosedAt, i.Labels, i.Patches = repo, nullable(closed), []string{}, []string{}
		r := &issueRec{issue: i}
		byID[i.ID] = r
		order = append(order, r)
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("read issues of %s: %w", repo, err)
	}
	err = store.Each(ctx, q, `SELECT issue_id, id, author, body, created_at, on_behalf_of, via
		FROM comments WHERE repo = ? ORDER BY seq`, args, func(rows *sql.Rows) error {
		var issue string
		var c Comment
		if err := rows.Scan(&issue, &c.ID, &c.Author, &c.Body, &c.CreatedAt, &c.OnBehalfOf, &c.Via); err != nil {
			return err
		}
		if r := byID[issue]; r != nil {
			r.comments = append(r.comments, c)
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("read comments of %s: %w", repo, err)
	}
	nowText := store.FormatTime(now)
	err = store.Each(ctx, q, `SELECT issue_id, token, holder, acquired_at, expires_at, ended_at, end_reason
		FROM tenures WHERE repo = ? ORDER BY issue_id, token`, args, func(rows *sql.Rows) error {
		var issue string
		var t Tenure
		var exp, ended, reason sql.NullString
		if err := rows.Scan(&issue, &t.Token, &t.Holder, &t.AcquiredAt, &exp, &ended, &reason); err != nil {
			return err
		}
		t.ExpiresAt, t.EndedAt, t.EndReason = nullable(exp), nullable(ended), nullable(reason)
		if t.EndedAt == nil && t.ExpiresAt != nil && *t.ExpiresAt <= nowText {
			// Ran out but not yet swept: export it as the sweep will record
			// it (as leases.Tenures shows it), so the sweep changes nothing.
			t.EndedAt, t.EndReason = t.ExpiresAt, ptrTo(expired)
		}
		if r := byID[issue]; r != nil {
			r.tenures = append(r.tenures, t)
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("read lease tenures of %s: %w", repo, err)
	}
	err = store.Each(ctx, q, `SELECT i.id, l.label FROM issue_labels l JOIN issues i ON i.seq = l.seq
		WHERE l.repo = ? ORDER BY l.seq, l.label`, args, func(rows *sql.Rows) error {
		var issue, label string
		if err := rows.Scan(&issue, &label); err != nil {
			return err
		}
		if r := byID[issue]; r != nil {
			r.issue.Labels = append(r.issue.Labels, label)
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("read labels of %s: %w", repo, err)
	}
	err = store.Each(ctx, q, `SELECT pi.issue_id, pi.patch_id FROM patch_issues pi
		JOIN patches p ON p.repo = pi.repo AND p.id = pi.patch_id
		WHERE pi.repo = ? ORDER BY p.seq`, args, func(rows *sql.Rows) error {
		var issue, patch string
		if err := rows.Scan(&issue, &patch); err != nil {
			return err
		}
		if r := byID[issue]; r != nil {
			r.issue.Patches = append(r.issue.Patches, patch)
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("read patch links of %s: %w", repo, err)
	}

	return func() ([]*record, error) {
		recs := make([]*record, 0, len(order))
		for _, ir := range order {
			r, err := issueRecord(repo, ir.issue, ir.comments, ir.tenures)
			if err != nil {
				return nil, err
			}
			recs = append(recs, r)
		}
		return recs, nil
	}, skipped, nil
}

// issueRecord is the record of issue i of repo with its comments and
// tenures, in order.
func issueRecord(repo string, i Issue, comments []Comment, tenures []Tenure) (*record, error) {
	r := &record{
		ref:     IssueRef(i.ID),
		subject: oneLine("issue "+i.ID[:min(len(i.ID), 12)]+": "+i.Title, 72),
		body: fmt.Sprintf("Issue %s in %s: %s, %d comment(s), %d lease tenure(s).",
			i.ID, repo, i.State, len(comments), len(tenures)),
	}
	r.seen(&i.CreatedAt, &i.UpdatedAt, i.ClosedAt)
	if err := r.add(IssueFile, i); err != nil {
		return nil, err
	}
	for n, c := range comments {
		r.seen(&c.CreatedAt)
		if err := r.add(CommentsDir+"/"+seqName(n+1, c.ID), c); err != nil {
			return nil, err
		}
	}
	for _, t := range tenures {
		r.seen(&t.AcquiredAt, t.EndedAt)
		if err := r.add(fmt.Sprintf("%s/%06d.json", TenuresDir, t.Token), t); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// loadPatches is loadIssues for patches, with their revisions, reviews,
// state changes and linked issues.
func loadPatches(ctx context.Context, q store.Querier, repo string) (func() ([]*record, error), int, error) {
	type patchRec struct {
		patch     Patch
		revisions []Revision
		reviews   []Review
		states    []StateChange
	}
	byID := map[string]*patchRec{}
	var order []*patchRec
	skipped := 0
	args := []any{repo}
	err := store.Each(ctx, q, `SELECT id, title, description, topic, draft, state, author, base,
		created_at, updated_at, merged_branch, merged_commit, merged_by, merged_at
		FROM patches WHERE repo = ? ORDER BY seq`, args, func(rows *sql.Rows) error {
		var p Patch
		var mb, mc, mby, mat sql.NullString
		if err := rows.Scan(&p.ID, &p.Title, &p.Description, &p.Topic, &p.Draft, &p.State, &p.Author, &p.Base,
			&p.CreatedAt, &p.UpdatedAt, &mb, &mc, &mby, &mat); err != nil {
			return err
		}
		if !ids.Valid(p.ID) {
			skipped++
			return nil
		}
		if mc.Valid {
			p.Merge = &Merge{Branch: mb.String, Commit: mc.String, By: mby.String, At: mat.String}
		}
		p.Repo, p.Issues = repo, []string{}
		r := &patchRec{patch: p}
		byID[p.ID] = r
		order = append(order, r)
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("read patches of %s: %w", repo, err)
	}
	err = store.Each(ctx, q, `SELECT patch_id, number, commit_oid, base_commit, pusher, created_at
		FROM revisions WHERE repo = ? ORDER BY patch_id, number`, args, func(rows *sql.Rows) error {
		var patch string
		var v Revision
		if err := rows.Scan(&patch, &v.Number, &v.Commit, &v.BaseCommit, &v.Pusher, &v.CreatedAt); err != nil {
			return err
		}
		if r := byID[patch]; r != nil {
			r.revisions = append(r.revisions, v)
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("read revisions of %s: %w", repo, err)
	}
	err = store.Each(ctx, q, `SELECT patch_id, id, revision, author, verdict, body, file, line, created_at, on_behalf_of, via
		FROM reviews WHERE repo = ? AND draft = 0 ORDER BY seq`, args, func(rows *sql.Rows) error {
		var patch string
		var v Review
		var f sql.NullString
		var line sql.NullInt64
		if err := rows.Scan(&patch, &v.ID, &v.Revision, &v.Author, &v.Verdict, &v.Body, &f, &line, &v.CreatedAt, &v.OnBehalfOf, &v.Via); err != nil {
			return err
		}
		v.File = nullable(f)
		if line.Valid {
			v.Line = &line.Int64
		}
		if r := byID[patch]; r != nil {
			r.reviews = append(r.reviews, v)
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("read reviews of %s: %w", repo, err)
	}
	err = store.Each(ctx, q, `SELECT patch_id, kind, actor, at FROM patch_events WHERE repo = ? ORDER BY seq`,
		args, func(rows *sql.Rows) error {
			var patch string
			var v StateChange
			if err := rows.Scan(&patch, &v.Kind, &v.Actor, &v.At); err != nil {
				return err
			}
			if r := byID[patch]; r != nil {
				r.states = append(r.states, v)
			}
			return nil
		})
	if err != nil {
		return nil, 0, fmt.Errorf("read patch state changes of %s: %w", repo, err)
	}
	err = store.Each(ctx, q, `SELECT patch_id, issue_id FROM patch_issues WHERE repo = ? ORDER BY patch_id, issue_id`,
		args, func(rows *sql.Rows) error {
			var patch, issue string
			if err := rows.Scan(&patch, &issue); err != nil {
				return err
			}
			if r := byID[patch]; r != nil {
				r.patch.Issues = append(r.patch.Issues, issue)
			}
			return nil
		})
	if err != nil {
		return nil, 0, fmt.Errorf("read issue links of %s: %w", repo, err)
	}

	return func() ([]*record, error) {
		recs := make([]*record, 0, len(order))
		for _, pr := range order {
			r, err := patchRecord(repo, pr.patch, pr.revisions, pr.reviews, pr.states)
			if err != nil {
				return nil, err
			}
			recs = append(recs, r)
		}
		return recs, nil
	}, skipped, nil
}

// patchRecord is the record of patch p of repo with its revisions,
// reviews and state changes, in order.
func patchRecord(repo string, p Patch, revisions []Revision, reviews []Review, states []StateChange) (*record, error) {
	r := &record{
		ref:     PatchRef(p.ID),
		subject: oneLine("patch "+p.ID[:min(len(p.ID), 12)]+": "+p.Title, 72),
		body: fmt.Sprintf("Patch %s in %s against %s: %s, %d revision(s), %d review(s).",
			p.ID, repo, p.Base, p.State, len(revisions), len(reviews)),
	}
	r.seen(&p.CreatedAt, &p.UpdatedAt)
	if p.Merge != nil {
		r.seen(&p.Merge.At)
	}
	if err := r.add(PatchFile, p); err != nil {
		return nil, err
	}
	for _, v := range revisions {
		r.seen(&v.CreatedAt)
		if err := r.add(fmt.Sprintf("%s/%06d.json", RevisionDir, v.Number), v); err != nil {
			return nil, err
		}
	}
	for n, v := range reviews {
		r.seen(&v.CreatedAt)
		if err := r.add(ReviewsDir+"/"+seqName(n+1, v.ID), v); err != nil {
			return nil, err
		}
	}
	for n, v := range states {
		r.seen(&v.At)
		if err := r.add(fmt.Sprintf("%s/%06d.json", StatesDir, n+1), v); err != nil {
			return nil, err
		}
	}
	return r, nil
}
