package ops

import (
	"context"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/issues"
	"github.com/collab-forge/collab/internal/labels"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/store"
)

// FileIssue is an issue to file.
type FileIssue struct {
	Repo        string
	Title, Body string
}

// FileIssue files an issue: anyone who may read the repository may.
func (s *Service) FileIssue(ctx context.Context, who Actor, in FileIssue) (issues.Issue, error) {
	if err := checkTitle(in.Title); err != nil {
		return issues.Issue{}, err
	}
	sc, err := s.repo(ctx, who, in.Repo, access.Read)
	if err != nil {
		return issues.Issue{}, err
	}
	var is issues.Issue
	err = s.write(ctx, who, func(tx store.Tx) error {
		is, err = issues.NewFor(ctx, tx, sc.key, who.Principal, who.behalf(), in.Title, in.Body, s.now())
		return err
	})
	if err != nil {
		return issues.Issue{}, err
	}
	s.note("ISSUE", is.ID)
	return is, nil
}

// ListIssues is a page of a repository's issues.
type ListIssues struct {
	Repo string
	// State is open, closed or all; "" means open.
	State string
	// Limit is the page size, 1 to 1000.
	Limit int
	// After is the id (or prefix) of the last issue of the previous page.
	After string
	// Query, when set, keeps the issues whose title or body holds it.
	Query string
	// Labels keeps the issues that carry every one of them.
	Labels []string
	// Counts asks for each issue's number of comments too.
	Counts bool
}

// IssueList is a page of issues.
type IssueList struct {
	Repo   string // the repository's key
	Issues []issues.Issue
	// Counts are the issues' comment counts by id, when asked for.
	Counts map[string]int
}

// ListIssues lists issues newest first, each with its live lease.
func (s *Service) ListIssues(ctx context.Context, who Actor, in ListIssues) (IssueList, error) {
	ls, err := labels.Set(in.Labels)
	if err != nil {
		return IssueList{}, err
	}
	sc, err := s.listed(ctx, who, in.Repo, &in.State, string(issues.Open), issues.CheckState, in.Limit)
	if err != nil {
		return IssueList{}, err
	}
	out := IssueList{Repo: sc.key}
	if in.Query == "" {
		out.Issues, err = issues.ListLabeled(ctx, s.DB.R(), sc.key, in.State, ls, in.Limit, in.After, s.now())
	} else {
		// The hits and their rows in one read transaction, so they agree.
		err = s.DB.Read(ctx, func(tx store.Tx) error {
			var err error
			out.Issues, err = issues.Search(ctx, tx, sc.key, in.State, in.Query, ls, in.Limit, in.After, s.now())
			return err
		})
	}
	if err != nil || !in.Counts {
		return out, err
	}
	ids := make([]string, len(out.Issues))
	for i, is := range out.Issues {
		ids[i] = is.ID
	}
	out.Counts, err = issues.CommentCounts(ctx, s.DB.R(), sc.key, ids)
	return out, err
}

// ShowIssue asks for an issue with one page of its comments.
type ShowIssue struct {
	Issue Ref
	// After starts the page after this comment (an id or a prefix of
	// one; "" from the first).
	After string
	// Limit bounds the page's comments (1 to 1000); their bodies are
	// bounded by issues.PageBytes.
	Limit int
}

// ShowIssue reads an issue with its lease, lease history, linked patches,
// references and one bounded page of its comments (issue show and the
// API's GET of an issue): a long issue costs one page per request.
func (s *Service) ShowIssue(ctx context.Context, who Actor, in ShowIssue) (issues.Shown, error) {
	if err := checkLimit(in.Limit); err != nil {
		return issues.Shown{}, err
	}
	t, err := s.target(ctx, who, in.Issue, access.Read, issues.Resolve, "ISSUE")
	if err != nil {
		return issues.Shown{}, err
	}
	var out issues.Shown
	err = s.DB.Read(ctx, func(tx store.Tx) error {
		out, err = issues.GetPage(ctx, tx, t.key, t.id, s.now(), in.After, in.Limit)
		return err
	})
	if err != nil {
		return issues.Shown{}, err
	}
	return out, s.readable(ctx, who, &out.Detail)
}

// LinkedPatch is a patch that fixes an issue, as its page lists it.
type LinkedPatch struct {
	ID, Title string
	State     patches.State
	Merge     *patches.Merge
}

// Comments asks for a page of an issue's comments, oldest first.
type Comments struct {
	Issue Ref
	// After starts after this comment; From instead starts at it ("" for
	// both: from the first). Either is an id or a prefix of one.
	After, From string
	// Limit bounds the page's comments, MaxBytes their bodies (one
	// comment always shows, however long).
	Limit, MaxBytes int
}

// IssuePage is an issue as its web page shows it: its head (Detail
// without comments), a page of comments, and the linked patches.
type IssuePage struct {
	issues.Detail
	// More says whether comments follow the page; Count is them all.
	More  bool
	Count int
	// Linked are the linked patches with their titles, states and merges.
	Linked []LinkedPatch
	// MayChangeState says whether the actor may close or reopen it now.
	MayChangeState bool
	// MayLabel says whether the actor may change its labels (LabelIssue).
	MayLabel bool
}

// IssuePage reads an issue's head, a page of its comments (in.Issue names
// the issue), the title, state and merge of each linked patch, and
// whether the actor may change the issue's state.
func (s *Service) IssuePage(ctx context.Context, who Actor, in Comments) (IssuePage, error) {
	t, err := s.target(ctx, who, in.Issue, access.Read, issues.Resolve, "ISSUE")
	if err != nil {
		return IssuePage{}, err
	}
	var pg IssuePage
	err = s.DB.Read(ctx, func(tx store.Tx) error {
		var err error
		if pg.Detail, err = issues.GetHead(ctx, tx, t.key, t.id, s.now()); err != nil {
			return err
		}
		if pg.Comments, pg.More, err = issues.CommentPage(ctx, tx, t.key, t.id, in.After, in.From, in.Limit, in.MaxBytes); err != nil {
			return err
		}
		if pg.Count, err = issues.CommentCount(ctx, tx, t.key, t.id); err != nil {
			return err
		}
		for _, pid := range pg.Patches {
			lp := LinkedPatch{ID: pid}
			if p, ok, err := patches.Lookup(ctx, tx, t.key, pid); err != nil {
				return err
			} else if ok {
				lp.Title, lp.State, lp.Merge = p.Title, p.State, p.Merge
			}
			pg.Linked = append(pg.Linked, lp)
		}
		return nil
	})
	if err != nil {
		return IssuePage{}, err
	}
	if err := s.readable(ctx, who, &pg.Detail); err != nil {
		return IssuePage{}, err
	}
	pg.MayChangeState = issues.MayChange(pg.Issue, who.Principal, t.lvl, true, "close") == nil
	pg.MayLabel = t.lvl >= access.Write
	return pg, nil
}

// Comments reads a page of an issue's comments; more says whether others
// follow.
func (s *Service) Comments(ctx context.Context, who Actor, in Comments) (cs []issues.Comment, more bool, err error) {
	t, err := s.target(ctx, who, in.Issue, access.Read, issues.Resolve, "ISSUE")
	if err != nil {
		return nil, false, err
	}
	return issues.CommentPage(ctx, s.DB.R(), t.key, t.id, in.After, in.From, in.Limit, in.MaxBytes)
}

// Comment is a comment to add to an issue.
type Comment struct {
	Issue Ref
	Body  string
	// LeaseToken, when positive, fences the comment: it must be the
	// actor's token of the live lease on the issue.
	LeaseToken int64
}

// Comment adds a comment: anyone who may read the repository may, and a
// lease held by another does not stop it (only a stale token does).
func (s *Service) Comment(ctx context.Context, who Actor, in Comment) (issues.Comment, error) {
	t, err := s.target(ctx, who, in.Issue, access.Read, issues.Resolve, "ISSUE")
	if err != nil {
		return issues.Comment{}, err
	}
	var c issues.Comment
	err = s.write(ctx, who, func(tx store.Tx) error {
		now := s.now()
		if err := t.fence(ctx, tx, who, in.LeaseToken, now); err != nil {
			return err
		}
		c, err = issues.AddCommentFor(ctx, tx, t.key, t.id, who.Principal, who.behalf(), in.Body, now)
		return err
	})
	return c, err
}

// EditIssue is a change of an issue's state and/or title.
type EditIssue struct {
	Issue Ref
	State *issues.State // nil leaves the state
	Title *string       // nil leaves the title
	Body  *string       // nil leaves the body
	// LeaseToken, when positive, fences the change.
	LeaseToken int64
}

// EditIssue closes, reopens, retitles and/or rewrites the body of an
// issue by the rule of issues.Change. changed is false when nothing
// differed.
func (s *Service) EditIssue(ctx context.Context, who Actor, in EditIssue) (is issues.Issue, changed bool, err error) {
	if in.Title != nil {
		if err := checkTitle(*in.Title); err != nil {
			return issues.Issue{}, false, err
		}
	}
	t, err := s.target(ctx, who, in.Issue, access.Read, issues.Resolve, "ISSUE")
	if err != nil {
		return issues.Issue{}, false, err
	}
	err = s.write(ctx, who, func(tx store.Tx) error {
		is, changed, err = issues.Change(ctx, tx, t.key, t.id, issues.Edit{
			Principal: who.Principal, Level: t.lvl, Person: who.OnBehalfOf, PersonLevel: t.person, State: in.State, Title: in.Title, Body: in.Body, LeaseToken: in.LeaseToken,
		}, s.now())
		return err
	})
	return is, changed, err
}

// checkTitle refuses a title before anything else is looked at, the same
// for every transport (the SSH verbs, the API, the web's forms): empty,
// multi-line, oversized, or holding a control character a terminal would
// act on (issues.CheckTitle, which the write repeats).
func checkTitle(title string) error {
	_, err := issues.CheckTitle(title)
	return fault.OnField(err, FieldTitle)
}
