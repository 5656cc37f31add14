package review

import (
	"context"
	"fmt"
	"sort"

	"github.com/collab-forge/collab/internal/checks"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/submit"
)

// View is a review as shown: the contract's review object plus whether it
// was written on a revision older than the patch's latest.
type View struct {
	patches.Review
	// Outdated: a newer revision exists. For an inline comment this is
	// "on an older revision": its file and line refer to that revision.
	Outdated bool `json:"outdated"`
}

// IsInline reports whether the review is an inline comment (anchored to a
// file, and maybe a line, of its revision).
func (v View) IsInline() bool { return v.File != nil }

// Anchor is "FILE:LINE", "FILE" or "".
func (v View) Anchor() string {
	switch {
	case v.File == nil:
		return ""
	case v.Line == nil:
		return *v.File
	default:
		return fmt.Sprintf("%s:%d", *v.File, *v.Line)
	}
}

// Views marks each review outdated when latest (the newest revision's
// number) is past its revision.
func Views(rs []patches.Review, latest int) []View {
	out := make([]View, len(rs))
	for i, r := range rs {
		out[i] = View{Review: r, Outdated: r.Revision < latest}
	}
	return out
}

// Vote is one reviewer's standing verdict.
type Vote struct {
	Author   string     `json:"author"`
	Verdict  string     `json:"verdict"`
	Revision int        `json:"revision"`
	At       store.Time `json:"at"`
}

// Summary is where a patch's review stands. Each reviewer's latest vote
// (approve or request-changes) counts, as in Gerrit and GitHub; it counts
// for the latest revision only, and a vote on an older revision is shown
// as stale.
type Summary struct {
	// Revision is the latest revision's number.
	Revision int `json:"revision"`
	// Approvals and ChangeRequests name the reviewers whose latest vote,
	// cast on the latest revision, is approve / request-changes.
	Approvals      []string `json:"approvals"`
	ChangeRequests []string `json:"change_requests"`
	// Stale are latest votes cast on an older revision.
	Stale []Vote `json:"stale"`
	// Comments counts the reviews without a vote, inline ones included.
	Comments int `json:"comments"`
}

// Summarize computes the summary of reviews rs (oldest first) of a patch
// whose latest revision is latest.
func Summarize(rs []patches.Review, latest int) Summary {
	s := Summary{Revision: latest, Approvals: []string{}, ChangeRequests: []string{}, Stale: []Vote{}}
	last := map[string]Vote{}
	var order []string
	for _, r := range rs {
		if r.Verdict == Comment {
			s.Comments++
			continue
		}
		if _, seen := last[r.Author]; !seen {
			order = append(order, r.Author)
		}
		last[r.Author] = Vote{Author: r.Author, Verdict: r.Verdict, Revision: r.Revision, At: r.CreatedAt}
	}
	for _, a := range order {
		v := last[a]
		switch {
		case v.Revision < latest:
			s.Stale = append(s.Stale, v)
		case v.Verdict == Approve:
			s.Approvals = append(s.Approvals, a)
		case v.Verdict == RequestChanges:
			s.ChangeRequests = append(s.ChangeRequests, a)
		}
	}
	return s
}

// String is the summary in one short line, e.g.
// "approved by bob; changes requested by carol; 1 stale vote".
func (s Summary) String() string {
	var parts []string
	if len(s.Approvals) > 0 {
		parts = append(parts, "approved by "+join(s.Approvals))
	}
	if len(s.ChangeRequests) > 0 {
		parts = append(parts, "changes requested by "+join(s.ChangeRequests))
	}
	if n := len(s.Stale); n == 1 {
		parts = append(parts, "1 stale vote")
	} else if n > 1 {
		parts = append(parts, fmt.Sprintf("%d stale votes", n))
	}
	if len(parts) == 0 {
		return "no votes"
	}
	out := parts[0]
	for _, p := range parts[1:] {
		out += "; " + p
	}
	return out
}

func join(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}

// Timeline entry kinds.
const (
	KindRevision = "revision" // a revision was pushed (or pinned by the merge scan)
	KindReview   = "review"   // a review with a vote
	KindComment  = "comment"  // a review without a vote, inline or not
	KindClosed   = "closed"
	KindReopened = "reopened"
	KindMerged   = "merged"
)

// Entry is one event in a patch's history.
type Entry struct {
	At    store.Time `json:"at"`
	Kind  string     `json:"kind"`
	Actor string     `json:"actor"`
	// Revision is the revision pushed or reviewed (0 for state changes).
	Revision int `json:"revision,omitempty"`
	// Commit is the revision's tip, or the merge commit.
	Commit string `json:"commit,omitempty"`
	// Branch is the branch merged into.
	Branch string `json:"branch,omitempty"`
	// Review is the review or comment, for those kinds.
	Review *View `json:"review,omitempty"`
}

// Timeline merges p's revisions, reviews (with views against p's latest
// revision), state changes and merge into one list, oldest first. p must
// carry its revisions and reviews (patches.Get).
func Timeline(ctx context.Context, q store.Querier, p patches.Patch) ([]Entry, error) {
	var out []Entry
	for _, r := range p.Revisions {
		out = append(out, Entry{At: r.CreatedAt, Kind: KindRevision, Actor: r.Pusher, Revision: r.Number, Commit: r.Commit})
	}
	for _, v := range Views(p.Reviews, p.Head().Number) {
		kind := KindReview
		if v.Verdict == Comment {
			kind = KindComment
		}
		v := v
		out = append(out, Entry{At: v.CreatedAt, Kind: kind, Actor: v.Author, Revision: v.Revision, Review: &v})
	}
	history, err := patches.History(ctx, q, p.Repo, p.ID)
	if err != nil {
		return nil, err
	}
	sawMerge := false
	for _, h := range history {
		e := Entry{Kind: h.Kind, Actor: h.Actor, At: h.At}
		if e.Kind == KindMerged {
			sawMerge = true
			if p.Merge != nil {
				e.Commit, e.Branch = p.Merge.Commit, p.Merge.Branch
			}
		}
		out = append(out, e)
	}
	if p.Merge != nil && !sawMerge {
		out = append(out, Entry{At: p.Merge.At, Kind: KindMerged, Actor: p.Merge.By, Commit: p.Merge.Commit, Branch: p.Merge.Branch})
	}
	// Ties keep the order above (a revision before what refers to it).
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	if out == nil {
		out = []Entry{}
	}
	return out, nil
}

// Patch is a patch as the verbs print it (and the API may): the contract's
// patch object whose reviews carry Outdated, plus the review summary.
type Patch struct {
	patches.Patch
	Reviews []View  `json:"reviews"`
	Summary Summary `json:"summary"`
}

// Describe adds the review views and summary to p (read with patches.Get,
// or with its Reviews filled).
func Describe(p patches.Patch) Patch {
	latest := p.Head().Number
	return Patch{Patch: p, Reviews: Views(p.Reviews, latest), Summary: Summarize(p.Reviews, latest)}
}

// Listed is a patch as `patch list --json` and GET …/patches print it:
// Describe's view and the patch page's URL (omitted when the forge has no
// url setting), its revisions with their checks, and whether it may be
// submitted.
type Listed struct {
	Patch
	URL string `json:"url,omitempty"`
	// Revisions are the patch's revisions, each with its checks; they
	// stand for patches.Patch's in JSON (WithChecks).
	Revisions []Revision `json:"revisions"`
	// Submit is the patch's submit requirements (internal/ops fills it).
	Submit *submit.Status `json:"submit,omitempty"`
}

// Revision is a revision with the latest state of each of its checks.
type Revision struct {
	patches.Revision
	Checks []checks.Check `json:"checks"`
}

// WithChecks pairs revs with their checks (by revision number); a
// revision without any gets an empty list.
func WithChecks(revs []patches.Revision, byRev map[int][]checks.Check) []Revision {
	out := make([]Revision, len(revs))
	for i, r := range revs {
		cs := byRev[r.Number]
		if cs == nil {
			cs = []checks.Check{}
		}
		out[i] = Revision{Revision: r, Checks: cs}
	}
	return out
}

// Shown is a patch as `patch show --json` and GET …/patches/ID print it:
// Listed and the timeline.
type Shown struct {
	Listed
	Timeline []Entry `json:"timeline"`
	// Below and Above are the patch's relation chain for its page (its
	// ancestors, bottom first, and its descendants); JSON has parents
	// and children.
	Below []patches.Related `json:"-"`
	Above []patches.Related `json:"-"`
}
