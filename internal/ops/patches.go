package ops

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/checks"
	"github.com/collab-forge/collab/internal/diff"
	"github.com/collab-forge/collab/internal/events"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/ids"
	"github.com/collab-forge/collab/internal/issues"
	"github.com/collab-forge/collab/internal/leases"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/principals"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/review"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/text"
)

// CheckNumbered refuses a revision or line number below 1: what a client
// gives explicitly (in a request, 0 means the latest revision, or no line).
func CheckNumbered(field string, n int) error {
	if n >= 1 {
		return nil
	}
	if field == FieldLine {
		return fault.NewField(fault.Usage, field, "bad line %d: lines are numbered from 1", n)
	}
	return fault.NewField(fault.Usage, field, "bad revision %d: revisions are numbered from 1", n)
}

// patchURL is the web page of a patch, "" when the forge has no url.
func (s *Service) patchURL(key, id string) string {
	if s.URL == "" {
		return ""
	}
	segs := strings.Split(reponame.Display(key), "/")
	for i, sg := range segs {
		segs[i] = url.PathEscape(sg)
	}
	return s.URL + "/" + strings.Join(segs, "/") + "/-/patches/" + id
}

// view is p as patch list prints it: with its review views, summary and
// page URL.
func (s *Service) view(p patches.Patch) review.Listed {
	return review.Listed{Patch: review.Describe(p), URL: s.patchURL(p.Repo, p.ID), Revisions: review.WithChecks(p.Revisions, nil)}
}

// logPatch records a change made to a patch, with the journal's fields.
func (s *Service) logPatch(ctx context.Context, msg, id string, args ...any) {
	s.log().InfoContext(ctx, msg, append([]any{"PATCH", id, "OUTCOME", "ok"}, args...)...)
}

func (s *Service) repoDir(key string) (string, error) {
	return reponame.Dir(s.Root.ReposDir(), key)
}

// ListPatches is a page of a repository's patches.
type ListPatches struct {
	Repo string
	// State is open, merged, closed or all, in any case; "" means open.
	State string
	// Limit is the page size, 1 to 1000.
	Limit int
	// After is the id (or prefix) of the last patch of the previous page.
	After string
	// Reviewer, when set, keeps the patches that ask this principal to
	// review them (Gerrit's r=).
	Reviewer string
}

// ListPatches lists patches newest first, each with its revisions, review
// views and summary.
func (s *Service) ListPatches(ctx context.Context, who Actor, in ListPatches) ([]review.Listed, error) {
	state := strings.ToLower(in.State)
	sc, err := s.listed(ctx, who, in.Repo, &state, string(patches.Open), patches.CheckState, in.Limit)
	if err != nil {
		return nil, err
	}
	if err := checkReviewer(in.Reviewer); err != nil {
		return nil, err
	}
	var list []patches.Patch
	err = s.DB.Read(ctx, func(tx store.Tx) error {
		list, err = patches.ListFiltered(ctx, tx, sc.key, state, in.Limit, in.After, patches.Filter{Reviewer: in.Reviewer})
		return err
	})
	if err != nil {
		return nil, err
	}
	var tips map[string]string
	ids := make([]string, len(list))
	for i, p := range list {
		ids[i] = p.ID
		if tips == nil && p.State == patches.Open {
			if tips, err = s.branchTips(ctx, sc.key); err != nil {
				return nil, err
			}
		}
	}
	// A page's checks, rules and approvers' access in a few reads, not a
	// few per patch.
	byPatch, err := checks.OfPatches(ctx, s.DB.R(), sc.key, ids)
	if err != nil {
		return nil, err
	}
	sts, err := s.gate().ListStatuses(ctx, s.DB.R(), sc.key, list, tips, byPatch)
	if err != nil {
		return nil, err
	}
	out := make([]review.Listed, 0, len(list))
	for i, p := range list {
		v := s.view(p)
		v.Revisions = review.WithChecks(p.Revisions, byPatch[p.ID])
		v.Submit = &sts[i]
		out = append(out, v)
	}
	return out, nil
}

// checkReviewer refuses a reviewer filter that cannot be a principal's
// name ("" asks for no filter).
func checkReviewer(name string) error {
	if name != "" && !access.ValidName(name) {
		return fault.NewField(fault.Usage, FieldReviewer, "bad %s %q: want a principal name", fault.Field(FieldReviewer), text.Clip(name))
	}
	return nil
}

// ShowPatch reads a patch with its revisions, reviews, linked issues,
// merge record and timeline.
func (s *Service) ShowPatch(ctx context.Context, who Actor, ref Ref) (review.Shown, error) {
	t, err := s.target(ctx, who, ref, access.Read, patches.Resolve, "PATCH")
	if err != nil {
		return review.Shown{}, err
	}
	var out review.Shown
	var p patches.Patch
	err = s.DB.Read(ctx, func(tx store.Tx) error {
		if p, err = patches.Get(ctx, tx, t.key, t.id); err != nil {
			return err
		}
		tl, err := review.Timeline(ctx, tx, p)
		if err != nil {
			return err
		}
		out = review.Shown{Listed: s.view(p), Timeline: tl}
		// The viewer's own drafts, marked, and nobody else's.
		drafts, err := patches.Drafts(ctx, tx, t.key, t.id, who.Principal)
		if err != nil {
			return err
		}
		out.Reviews = append(out.Reviews, review.Views(drafts, p.Head().Number)...)
		if len(p.Parents) > 0 || len(p.Children) > 0 {
			out.Below, out.Above, err = patches.Chain(ctx, tx, t.key, t.id)
		}
		return err
	})
	if err != nil {
		return review.Shown{}, err
	}
	// After the read transaction: the submit status runs git.
	return out, s.withGate(ctx, &out.Listed, p)
}

// Diff is a revision's diff, or an interdiff, as patch diff --json prints
// it.
type Diff struct {
	PatchID  string `json:"patch_id"`
	Revision int    `json:"revision"`
	// From is the revision the interdiff starts at, null for a plain diff.
	From   *int   `json:"from"`
	Base   string `json:"base_commit"`
	Commit string `json:"commit"`
	diff.Result
}

// PatchDiff asks for a revision's diff against its base, or for the
// interdiff From→Revision.
type PatchDiff struct {
	Patch Ref
	// Revision is the revision shown; 0 means the latest.
	Revision int
	// From, when positive, asks for the interdiff from that revision.
	From int
}

// PatchDiff computes a revision's diff or an interdiff from git.
func (s *Service) PatchDiff(ctx context.Context, who Actor, in PatchDiff) (Diff, error) {
	if in.Revision < 0 {
		return Diff{}, CheckNumbered(FieldRevision, in.Revision)
	}
	if in.From < 0 {
		return Diff{}, CheckNumbered(FieldFrom, in.From)
	}
	t, err := s.target(ctx, who, in.Patch, access.Read, patches.Resolve, "PATCH")
	if err != nil {
		return Diff{}, err
	}
	id := t.id
	revs, err := patches.Revisions(ctx, s.DB.R(), t.key, id)
	if err != nil {
		return Diff{}, err
	}
	pick := func(n int) (patches.Revision, error) {
		if n == 0 && len(revs) > 0 {
			return revs[len(revs)-1], nil
		}
		for _, r := range revs {
			if r.Number == n {
				return r, nil
			}
		}
		if n == 0 {
			return patches.Revision{}, fault.New(fault.NotFound, "patch %s has no revisions", id)
		}
		return patches.Revision{}, fault.New(fault.NotFound, "patch %s has no revision %d (it has %d)", id, n, len(revs))
	}
	to, err := pick(in.Revision)
	if err != nil {
		return Diff{}, err
	}
	dir, err := s.repoDir(t.key)
	if err != nil {
		return Diff{}, err
	}
	out := Diff{PatchID: id, Revision: to.Number, Base: to.BaseCommit, Commit: to.Commit}
	toRange := diff.Range{Base: to.BaseCommit, Commit: to.Commit}
	if in.From > 0 {
		from, err := pick(in.From)
		if err != nil {
			return Diff{}, err
		}
		n := from.Number
		out.From = &n
		out.Result, err = s.Diffs.Interdiff(ctx, dir, diff.Range{Base: from.BaseCommit, Commit: from.Commit}, toRange, diff.DefaultLimits())
		if err != nil {
			return Diff{}, fmt.Errorf("interdiff %d→%d of %s: %w", from.Number, to.Number, id, err)
		}
	} else {
		out.Result, err = s.Diffs.Revision(ctx, dir, toRange, diff.DefaultLimits())
		if err != nil {
			return Diff{}, fmt.Errorf("diff of revision %d of %s: %w", to.Number, id, err)
		}
	}
	if out.Notes == nil {
		out.Notes = []string{}
	}
	return out, nil
}

// Review is a review to post, or an inline comment.
type Review struct {
	Patch   Ref
	Verdict string // review.Approve, review.RequestChanges or review.Comment
	Body    string
	// Revision is the revision reviewed; 0 means the latest.
	Revision int
	// File and Line anchor an inline comment ("" and 0: none; a File
	// without a Line is a comment on the whole file).
	File string
	Line int
	// Side anchors an inline comment to the revision's file ("" or
	// patches.SideNew) or to its base's (patches.SideOld).
	Side string
	// Reply answers the inline thread of this comment (an id or prefix):
	// the reply takes its revision, file, line and side.
	Reply string
	// Draft keeps it visible only to its author until Publish; a draft
	// is a comment (the verdict comes with Publish).
	Draft bool
	// LeaseToken fences the review: "N" when the patch links exactly one
	// issue, else "ISSUE:N"; "" means unfenced.
	LeaseToken string
}

// Posted is a review just posted.
type Posted struct {
	// Review is marked outdated when a newer revision exists.
	Review review.View
	// Repo and PatchID are the patch's repository key and full id.
	Repo, PatchID string
}

// Review posts a review: a vote needs write access, a comment read. The
// inline anchor is checked against the revision's tree, the lease token
// and the patch's state inside the transaction that records it.
func (s *Service) Review(ctx context.Context, who Actor, in Review) (Posted, error) {
	if err := review.CheckVerdict(in.Verdict); err != nil {
		return Posted{}, err
	}
	body := strings.TrimRight(in.Body, "\r\n\t ")
	if err := text.Check("body", body, review.MaxBody); err != nil {
		return Posted{}, fault.OnField(err, FieldBody)
	}
	if strings.TrimSpace(body) == "" && (in.Verdict == review.Comment || in.File != "") {
		return Posted{}, fault.NewField(fault.Usage, FieldBody, "a comment needs a body (%s)", fault.Field(FieldBody))
	}
	if in.Line != 0 && in.File == "" {
		return Posted{}, fault.NewField(fault.Usage, FieldLine, "%s needs %s", fault.Field(FieldLine), fault.Field(FieldFile))
	}
	if in.Line < 0 {
		return Posted{}, CheckNumbered(FieldLine, in.Line)
	}
	if in.Revision < 0 {
		return Posted{}, CheckNumbered(FieldRevision, in.Revision)
	}
	switch {
	case in.Side != "" && in.Side != patches.SideOld && in.Side != patches.SideNew:
		return Posted{}, fault.NewField(fault.Usage, FieldSide, "bad %s %q: want old or new", fault.Field(FieldSide), text.Clip(in.Side))
	case in.Side != "" && in.File == "":
		return Posted{}, fault.NewField(fault.Usage, FieldSide, "%s needs %s", fault.Field(FieldSide), fault.Field(FieldFile))
	case in.Reply != "" && (in.File != "" || in.Line != 0 || in.Side != "" || in.Revision != 0):
		return Posted{}, fault.NewField(fault.Usage, FieldReply, "a reply takes its anchor from the comment it answers: drop %s, %s, %s and %s",
			fault.Field(FieldFile), fault.Field(FieldLine), fault.Field(FieldSide), fault.Field(FieldRevision))
	case in.Draft && in.Verdict != review.Comment:
		return Posted{}, fault.New(fault.Usage, "a draft is a comment: give the verdict when you publish (patch publish --%s)", in.Verdict)
	}
	fence, err := review.ParseFence(in.LeaseToken)
	if err != nil {
		return Posted{}, fault.OnField(err, FieldLeaseToken)
	}
	t, err := s.target(ctx, who, in.Patch, review.Need(in.Verdict), patches.Resolve, "PATCH")
	if err != nil {
		return Posted{}, err
	}
	revs, err := patches.Revisions(ctx, s.DB.R(), t.key, t.id)
	if err != nil {
		return Posted{}, err
	}
	if len(revs) == 0 {
		return Posted{}, fault.New(fault.NotFound, "patch %s has no revisions", t.id)
	}
	rev := revs[len(revs)-1]
	if in.Revision > 0 {
		if in.Revision > len(revs) {
			return Posted{}, fault.New(fault.NotFound, "patch %s has no revision %d", t.id, in.Revision)
		}
		rev = revs[in.Revision-1]
	}
	r := patches.Review{ID: ids.New(), Revision: rev.Number, Author: who.Principal, Behalf: who.behalf(), Verdict: in.Verdict, Body: body, Draft: in.Draft}
	if in.Reply != "" {
		to, err := s.threadOf(ctx, t, who, in.Reply)
		if err != nil {
			return Posted{}, err
		}
		r.Revision, r.File, r.Line, r.Side, r.Thread = to.Revision, to.File, to.Line, to.Side, to.Thread
	}
	if in.File != "" {
		// Revisions never change once pinned, so the anchor is checked
		// against git before the write transaction.
		dir, err := s.repoDir(t.key)
		if err != nil {
			return Posted{}, err
		}
		anchor := rev
		if in.Side == patches.SideOld {
			// The old side is the revision's base: its file, its lines.
			anchor.Commit = rev.BaseCommit
		}
		p, err := review.CheckAnchor(ctx, dir, anchor, in.File, in.Line)
		if err != nil {
			if fe := fault.As(err); in.Side == patches.SideOld && fe.Kind == fault.Usage {
				err = fault.New(fault.Usage, "on the old side (the base of revision %d): %s", rev.Number, fe.Msg)
			}
			return Posted{}, fault.OnField(err, FieldFile)
		}
		if err := review.InDiff(ctx, dir, rev, p); err != nil {
			return Posted{}, fault.OnField(err, FieldFile)
		}
		r.File = &p
		if in.Side != "" {
			side := in.Side
			r.Side = &side
		}
		if in.Line > 0 {
			l := in.Line
			r.Line = &l
		}
	}
	err = s.write(ctx, who, func(tx store.Tx) error {
		p, ok, err := patches.Lookup(ctx, tx, t.key, t.id)
		if err != nil {
			return err
		}
		if !ok {
			return fault.New(fault.NotFound, "no patch %s", t.id)
		}
		if in.Verdict != review.Comment && p.State != patches.Open {
			return fault.New(fault.Conflict, "patch %s is %s: only comments are taken now", t.id, p.State)
		}
		if fence != nil {
			issueID, err := fence.Issue(ctx, tx, t.key, t.id)
			if err != nil {
				return err
			}
			if err := leases.Fence(ctx, tx, t.key, issueID, who.Principal, fence.Token(), s.now()); err != nil {
				return err
			}
		}
		r, err = patches.AddReview(ctx, tx, t.key, t.id, r, s.now())
		return err
	})
	if err != nil {
		return Posted{}, err
	}
	s.logPatch(ctx, "review posted", t.id, "review", r.ID, "verdict", r.Verdict, "revision", r.Revision)
	// Revisions may have been pushed meanwhile: mark it against the latest.
	if revs, err = patches.Revisions(ctx, s.DB.R(), t.key, t.id); err != nil {
		return Posted{}, err
	}
	v := review.Views([]patches.Review{r}, revs[len(revs)-1].Number)[0]
	return Posted{Review: v, Repo: t.key, PatchID: t.id}, nil
}

// PatchChange is what a close, reopen or merge did to a patch.
type PatchChange struct {
	Patch review.Listed
	// Changed is false when the patch already was in that state (or
	// merged as that commit).
	Changed bool
}

// SetPatchState closes (abandons) or reopens a patch: write access. A
// merged patch stays merged.
func (s *Service) SetPatchState(ctx context.Context, who Actor, ref Ref, state patches.State) (PatchChange, error) {
	t, err := s.target(ctx, who, ref, access.Write, patches.Resolve, "PATCH")
	if err != nil {
		return PatchChange{}, err
	}
	var changed bool
	err = s.write(ctx, who, func(tx store.Tx) error {
		changed, err = patches.SetState(ctx, tx, t.key, t.id, state, who.Principal, s.now())
		return err
	})
	if err != nil {
		return PatchChange{}, err
	}
	s.logPatch(ctx, "patch state set", t.id, "state", state, "changed", changed)
	p, err := patches.Get(ctx, s.DB.R(), t.key, t.id)
	if err != nil {
		return PatchChange{}, err
	}
	return PatchChange{Patch: s.view(p), Changed: changed}, nil
}

// Merge is a manual merge record: the patch was merged as Commit.
type Merge struct {
	Patch Ref
	// Commit is a full or abbreviated oid, reachable from the patch's
	// target branch.
	Commit string
	// LeaseToken fences the record as a review's token does: "N" when the
	// patch links exactly one issue, else "ISSUE:N"; "" for none.
	LeaseToken string
}

// RecordMerge records by hand that a patch was merged (write access): the
// fallback for a merge the scan did not see. Recording the same commit
// again is a no-op (Changed false); another commit, or a closed patch, is
// a conflict.
func (s *Service) RecordMerge(ctx context.Context, who Actor, in Merge) (PatchChange, patches.Merge, error) {
	fence, err := review.ParseFence(in.LeaseToken)
	if err != nil {
		return PatchChange{}, patches.Merge{}, fault.OnField(err, FieldLeaseToken)
	}
	t, err := s.target(ctx, who, in.Patch, access.Write, patches.Resolve, "PATCH")
	if err != nil {
		return PatchChange{}, patches.Merge{}, err
	}
	p, ok, err := patches.Lookup(ctx, s.DB.R(), t.key, t.id)
	if err != nil {
		return PatchChange{}, patches.Merge{}, err
	}
	if !ok {
		return PatchChange{}, patches.Merge{}, fault.New(fault.NotFound, "no patch %s", t.id)
	}
	dir, err := s.repoDir(t.key)
	if err != nil {
		return PatchChange{}, patches.Merge{}, err
	}
	oid, err := review.MergeCommit(ctx, dir, in.Commit, p.Base)
	if err != nil {
		return PatchChange{}, patches.Merge{}, fault.OnField(err, FieldCommit)
	}
	// Whether the commit is the patch's work decides whether its linked
	// issues close; git is asked before the write.
	repo := git.Open(dir)
	cs, err := repo.Commits(ctx, oid)
	if err != nil || len(cs) != 1 {
		return PatchChange{}, patches.Merge{}, fault.Default(err, "cannot read commit "+oid)
	}
	content, err := ContentOf(ctx, repo, s.DB.R(), t.key, t.id, oid, cs[0].Parents)
	if err != nil {
		return PatchChange{}, patches.Merge{}, err
	}
	var m patches.Merge
	var recorded bool
	err = s.write(ctx, who, func(tx store.Tx) error {
		cur, ok, err := patches.Lookup(ctx, tx, t.key, t.id)
		if err != nil {
			return err
		}
		if !ok {
			return fault.New(fault.NotFound, "no patch %s", t.id)
		}
		switch cur.State {
		case patches.Merged:
			if cur.Merge != nil && cur.Merge.Commit == oid {
				m = *cur.Merge
				return nil
			}
			if cur.Merge == nil {
				return fault.New(fault.Conflict, "patch %s is already merged", t.id)
			}
			return fault.New(fault.Conflict, "patch %s is already merged (%s on %s)", t.id, cur.Merge.Commit, cur.Merge.Branch)
		case patches.Closed:
			return fault.New(fault.Conflict, "patch %s is closed: reopen it before recording its merge", t.id)
		}
		now := s.now()
		// Check and record share this transaction: no takeover between.
		tokens, err := review.MayComplete(ctx, tx, t.key, t.id, who.Principal, t.lvl >= access.Admin, fence, "record the merge of", now)
		if err != nil {
			return err
		}
		m = patches.Merge{Branch: cur.Base, Commit: oid, By: who.Principal, Strategy: patches.ByManual, Content: content}
		comp := patches.Completion{Closer: issues.Closer{
			What:   "the merge of patch " + t.id + " into " + cur.Base + " as " + oid + " recorded by " + who.Principal,
			Tokens: tokens,
			Admin:  func() (bool, error) { return t.lvl >= access.Admin, nil },
		}}
		// A commit that is not the patch's work closes none of its issues.
		comp.OwnOnly = content == patches.ContentDiffers
		done, err := patches.RecordMergeFenced(ctx, tx, t.key, t.id, m, comp, now)
		if err != nil {
			return err
		}
		if !done.Merged {
			return fault.New(fault.Conflict, "patch %s is no longer open", t.id)
		}
		m.At = store.At(now)
		recorded = true
		return nil
	})
	if err != nil {
		return PatchChange{}, patches.Merge{}, err
	}
	if recorded {
		s.logPatch(ctx, "merge recorded by hand", t.id, "NEW_OID", m.Commit, "REF", "refs/heads/"+m.Branch)
	}
	got, err := patches.Get(ctx, s.DB.R(), t.key, t.id)
	if err != nil {
		return PatchChange{}, patches.Merge{}, err
	}
	return PatchChange{Patch: s.view(got), Changed: recorded}, m, nil
}

// PatchEdit is a change of a patch's descriptive fields, its draft state
// or its reviewers (patch edit, ready, wip, reviewers); nil and empty
// leave a field.
type PatchEdit struct {
	Patch           Ref
	Title           *string
	Description     *string
	Draft           *bool
	AddReviewers    []string // principal names or their e-mail addresses, as %r= takes
	RemoveReviewers []string
}

// EditPatch applies in: the patch's author (who may read) or a writer may.
// What changed is one patch.edited event, with the patch and the names of
// the fields that changed; Changed is false when nothing did.
func (s *Service) EditPatch(ctx context.Context, who Actor, in PatchEdit) (PatchChange, error) {
	if in.Title != nil {
		t, err := issues.CheckTitle(*in.Title)
		if err != nil {
			return PatchChange{}, fault.OnField(err, FieldTitle)
		}
		in.Title = &t
	}
	if in.Description != nil {
		if err := text.Check("description", *in.Description, text.MaxBody); err != nil {
			return PatchChange{}, err
		}
	}
	t, err := s.target(ctx, who, in.Patch, access.Read, patches.Resolve, "PATCH")
	if err != nil {
		return PatchChange{}, err
	}
	var changed []string
	err = s.write(ctx, who, func(tx store.Tx) error {
		cur, err := patches.Get(ctx, tx, t.key, t.id)
		if err != nil {
			return err
		}
		if cur.Author != who.Principal && t.lvl < access.Write {
			return fault.New(fault.Denied, "permission denied: write access to %s needed to edit a patch by someone else", reponame.Display(t.key))
		}
		var u patches.Update
		if in.Title != nil && *in.Title != cur.Title {
			u.Title, changed = in.Title, append(changed, "title")
		}
		if in.Description != nil && *in.Description != cur.Description {
			u.Description, changed = in.Description, append(changed, "description")
		}
		if in.Draft != nil && *in.Draft != cur.Draft {
			u.Draft, changed = in.Draft, append(changed, "draft")
		}
		if len(changed) > 0 {
			if err := patches.Edit(ctx, tx, t.key, t.id, u, s.now()); err != nil {
				return err
			}
		}
		add, err := principals.Reviewers(ctx, tx, in.AddReviewers)
		if err != nil {
			return err
		}
		added, err := patches.AddReviewers(ctx, tx, t.key, t.id, add, who.Principal, s.now())
		if err != nil {
			return err
		}
		removed, err := patches.RemoveReviewers(ctx, tx, t.key, t.id, in.RemoveReviewers)
		if err != nil {
			return err
		}
		if len(added)+len(removed) > 0 {
			changed = append(changed, "reviewers")
		}
		if len(changed) == 0 {
			return nil
		}
		p, err := patches.Get(ctx, tx, t.key, t.id)
		if err != nil {
			return err
		}
		_, err = events.Emit(ctx, tx, events.PatchEdited, t.key, who.Principal, s.now(), struct {
			patches.Patch
			Changed []string `json:"changed"`
		}{p, changed})
		return err
	})
	if err != nil {
		return PatchChange{}, err
	}
	s.logPatch(ctx, "patch edited", t.id, "changed", strings.Join(changed, ","))
	p, err := patches.Get(ctx, s.DB.R(), t.key, t.id)
	if err != nil {
		return PatchChange{}, err
	}
	return PatchChange{Patch: s.view(p), Changed: len(changed) > 0}, nil
}

// threadOf is the posted inline comment of t that a reply names.
func (s *Service) threadOf(ctx context.Context, t target, who Actor, prefix string) (patches.Review, error) {
	id, err := patches.ResolveComment(ctx, s.DB.R(), t.key, t.id, prefix, who.Principal)
	if err != nil {
		return patches.Review{}, fault.OnField(err, FieldReply)
	}
	c, err := patches.Comment(ctx, s.DB.R(), t.key, t.id, id, who.Principal)
	if err != nil {
		return patches.Review{}, fault.OnField(err, FieldReply)
	}
	if c.Thread == nil || c.File == nil {
		return patches.Review{}, fault.NewField(fault.Usage, FieldReply, "comment %s is not an inline comment: only those have threads", id)
	}
	if c.Draft {
		return patches.Review{}, fault.NewField(fault.Usage, FieldReply, "comment %s is your draft: publish it first", id)
	}
	return c, nil
}

// Publish is patch publish: the caller's drafts on a patch, with an
// optional verdict and message, posted as one review (one
// review.posted). A vote needs write access, drafts alone read.
type Publish struct {
	Patch Ref
	// Verdict is review.Approve, RequestChanges or Comment; "" with no
	// Body posts the drafts alone.
	Verdict string
	Body    string
}

// Published is what a publish posted: the drafts, then the summary.
type Published struct {
	Repo, PatchID string
	Posted        []patches.Review
}

// PublishDrafts posts who's drafts on a patch, with the verdict and body
// given, in one write.
func (s *Service) PublishDrafts(ctx context.Context, who Actor, in Publish) (Published, error) {
	if in.Verdict != "" {
		if err := review.CheckVerdict(in.Verdict); err != nil {
			return Published{}, err
		}
	}
	body := strings.TrimRight(in.Body, "\r\n\t ")
	if err := text.Check("body", body, review.MaxBody); err != nil {
		return Published{}, fault.OnField(err, FieldBody)
	}
	verdict := in.Verdict
	switch {
	case verdict == "" && body != "":
		verdict = review.Comment
	case verdict == review.Comment && body == "":
		// A message-less comment adds nothing to the drafts it posts.
		verdict = ""
	}
	need := access.Read
	if verdict != "" {
		need = review.Need(verdict)
	}
	t, err := s.target(ctx, who, in.Patch, need, patches.Resolve, "PATCH")
	if err != nil {
		return Published{}, err
	}
	var posted []patches.Review
	err = s.write(ctx, who, func(tx store.Tx) error {
		p, ok, err := patches.Lookup(ctx, tx, t.key, t.id)
		if err != nil {
			return err
		}
		if !ok {
			return fault.New(fault.NotFound, "no patch %s", t.id)
		}
		var summary *patches.Review
		if verdict != "" {
			if verdict != review.Comment && p.State != patches.Open {
				return fault.New(fault.Conflict, "patch %s is %s: only comments are taken now", t.id, p.State)
			}
			revs, err := patches.RevisionsFor(ctx, tx, t.key, t.id, "")
			if err != nil {
				return err
			}
			if len(revs) == 0 {
				return fault.New(fault.NotFound, "patch %s has no revisions", t.id)
			}
			summary = &patches.Review{ID: ids.New(), Revision: revs[len(revs)-1].Number, Author: who.Principal, Behalf: who.behalf(), Verdict: verdict, Body: body}
		}
		posted, err = patches.Publish(ctx, tx, t.key, t.id, who.Principal, summary, s.now())
		return err
	})
	if err != nil {
		return Published{}, err
	}
	s.logPatch(ctx, "drafts published", t.id, "comments", len(posted), "verdict", verdict)
	return Published{Repo: t.key, PatchID: t.id, Posted: posted}, nil
}

// Resolve is patch resolve: an inline thread marked resolved, or not.
type Resolve struct {
	Patch     Ref
	Comment   string // any comment of the thread (id or prefix)
	Unresolve bool
}

// Resolved is a thread's new state.
type Resolved struct {
	Repo     string `json:"repo"`
	PatchID  string `json:"patch_id"`
	Thread   string `json:"thread"`
	Resolved bool   `json:"resolved"`
	// Changed is false when the thread already was in that state.
	Changed bool `json:"changed"`
}

// ResolveThread marks the inline thread of a comment resolved (or
// unresolved): its first comment's author or a writer may.
func (s *Service) ResolveThread(ctx context.Context, who Actor, in Resolve) (Resolved, error) {
	t, err := s.target(ctx, who, in.Patch, access.Read, patches.Resolve, "PATCH")
	if err != nil {
		return Resolved{}, err
	}
	c, err := s.threadOf(ctx, t, who, in.Comment)
	if err != nil {
		return Resolved{}, err
	}
	thread := *c.Thread
	root, err := patches.Comment(ctx, s.DB.R(), t.key, t.id, thread, who.Principal)
	if err != nil {
		return Resolved{}, err
	}
	if root.Author != who.Principal && t.lvl < access.Write {
		return Resolved{}, fault.New(fault.Denied, "only the thread's author (%s) or a writer may resolve it", root.Author)
	}
	out := Resolved{Repo: t.key, PatchID: t.id, Thread: thread, Resolved: !in.Unresolve}
	err = s.write(ctx, who, func(tx store.Tx) error {
		out.Changed, err = patches.SetResolved(ctx, tx, t.key, t.id, thread, !in.Unresolve, who.Principal, s.now())
		return err
	})
	if err != nil {
		return Resolved{}, err
	}
	s.logPatch(ctx, "thread resolved", t.id, "thread", thread, "resolved", out.Resolved, "changed", out.Changed)
	return out, nil
}
