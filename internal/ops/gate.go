package ops

// The review gate's use cases (CONTRACT.md "Protected branches, submit and
// checks"): branch rules, check results on revisions, and patch submit.

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/branches"
	"github.com/collab-forge/collab/internal/checks"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/review"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/submit"
)

// gate is the submit machinery on this forge.
func (s *Service) gate() *submit.Gate {
	return &submit.Gate{DB: s.DB, Root: s.Root, Log: s.Log, PatchURL: s.patchURL, AfterMove: afterMove(),
		Record: s.RecordSubmitted}
}

// RecordSubmitted records a submit's move as the merge scan of a push
// records it (Push.RecordSubmitted).
func (s *Service) RecordSubmitted(ctx context.Context, m submit.Moved) (map[string][]string, error) {
	e := &Push{Root: s.Root, DB: s.DB, Repo: m.Repo, Git: m.Git, Principal: m.Submitter,
		Stderr: io.Discard, Log: s.Log, Now: s.now, Tokens: m.Tokens}
	merged, err := e.RecordSubmitted(ctx, m.Branch, m.Old, m.New, m.Strategy)
	if err != nil {
		return nil, err
	}
	closed := map[string][]string{}
	for _, g := range merged {
		closed[g.PatchID] = append(closed[g.PatchID], g.Closed...)
	}
	return closed, nil
}

// ProtectBranch is a branch rule to set; nil and "" fields take the
// contract's defaults (1 approval, no checks, merge, direct push none).
type ProtectBranch struct {
	Repo       string
	Branch     string
	Approvals  *int
	Checks     []string
	Strategy   string
	DirectPush string
	// Resolved: submit needs every inline thread resolved.
	Resolved bool
}

// ProtectBranch makes (or replaces) the rule of a branch: a repository
// admin's. The branch need not exist yet: the rule waits for it.
func (s *Service) ProtectBranch(ctx context.Context, who Actor, in ProtectBranch) (branches.Rule, error) {
	r := branches.Default(in.Branch)
	if in.Approvals != nil {
		r.Approvals = *in.Approvals
	}
	if in.Checks != nil {
		r.Checks = in.Checks
	}
	if in.Strategy != "" {
		r.Strategy = in.Strategy
	}
	if in.DirectPush != "" {
		r.DirectPush = in.DirectPush
	}
	r.Resolved = in.Resolved
	if err := branches.Validate(&r); err != nil {
		return branches.Rule{}, err
	}
	sc, err := s.repo(ctx, who, in.Repo, access.Admin)
	if err != nil {
		return branches.Rule{}, err
	}
	err = s.write(ctx, who, func(tx store.Tx) error {
		r, err = branches.Put(ctx, tx, sc.key, r, who.Principal, s.now())
		return err
	})
	if err != nil {
		return branches.Rule{}, err
	}
	s.log().InfoContext(ctx, "branch protected", "REPO", sc.key, "REF", "refs/heads/"+r.Branch, "OUTCOME", "ok",
		"approvals", r.Approvals, "checks", strings.Join(r.Checks, ","), "strategy", r.Strategy, "direct_push", r.DirectPush)
	return r, nil
}

// UnprotectBranch removes a branch's rule (a repository admin's) and
// returns it as it was; an unprotected branch is fault.NotFound.
func (s *Service) UnprotectBranch(ctx context.Context, who Actor, repo, branch string) (branches.Rule, error) {
	if err := branches.CheckBranch(branch); err != nil {
		return branches.Rule{}, err
	}
	sc, err := s.repo(ctx, who, repo, access.Admin)
	if err != nil {
		return branches.Rule{}, err
	}
	var r branches.Rule
	err = s.write(ctx, who, func(tx store.Tx) error {
		r, err = branches.Delete(ctx, tx, sc.key, branch, who.Principal, s.now())
		return err
	})
	if err != nil {
		return branches.Rule{}, err
	}
	s.log().InfoContext(ctx, "branch unprotected", "REPO", sc.key, "REF", "refs/heads/"+branch, "OUTCOME", "ok")
	return r, nil
}

// ListBranchRules lists a repository's branch rules, for readers.
func (s *Service) ListBranchRules(ctx context.Context, who Actor, repo string) ([]branches.Rule, error) {
	sc, err := s.repo(ctx, who, repo, access.Read)
	if err != nil {
		return nil, err
	}
	return branches.List(ctx, s.DB.R(), sc.key)
}

// BranchRule reads one branch's rule, for readers; an unprotected branch
// is fault.NotFound.
func (s *Service) BranchRule(ctx context.Context, who Actor, repo, branch string) (branches.Rule, error) {
	if err := branches.CheckBranch(branch); err != nil {
		return branches.Rule{}, err
	}
	sc, err := s.repo(ctx, who, repo, access.Read)
	if err != nil {
		return branches.Rule{}, err
	}
	r, ok, err := branches.Get(ctx, s.DB.R(), sc.key, branch)
	if err != nil {
		return branches.Rule{}, err
	}
	if !ok {
		return branches.Rule{}, fault.New(fault.NotFound, "branch %s is not protected", branch)
	}
	return r, nil
}

// branchRuleLines is each protected branch's rule in one line, for the
// repository's overview (RepoHome).
func branchRuleLines(ctx context.Context, q store.Querier, repo string) (map[string]string, error) {
	rules, err := branches.List(ctx, q, repo)
	if err != nil || len(rules) == 0 {
		return nil, err
	}
	out := make(map[string]string, len(rules))
	for _, r := range rules {
		out[r.Branch] = RuleLine(r)
	}
	return out, nil
}

// RuleLine says what a rule asks in a few words: "1 approval, check
// ci/test; submit by rebase; no direct push".
func RuleLine(r branches.Rule) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d approval%s", r.Approvals, plural(r.Approvals))
	if len(r.Checks) > 0 {
		fmt.Fprintf(&b, ", check%s %s", plural(len(r.Checks)), strings.Join(r.Checks, ", "))
	}
	if r.Resolved {
		b.WriteString(", every thread resolved")
	}
	fmt.Fprintf(&b, "; submit by %s; ", r.Strategy)
	if r.DirectPush == branches.DirectAdmin {
		b.WriteString("admins may fast-forward")
	} else {
		b.WriteString("no direct push")
	}
	return b.String()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// PostCheck is a check result to record on a revision.
type PostCheck struct {
	Patch Ref
	// Revision is the revision the check is about; 0 means the latest.
	Revision int
	Name     string
	State    string
	URL      string
	Summary  string
}

// PostCheck records a check result (write access): the latest state of
// its name on that revision, with a check.updated event.
func (s *Service) PostCheck(ctx context.Context, who Actor, in PostCheck) (checks.Check, error) {
	if in.Revision < 0 {
		return checks.Check{}, CheckNumbered(FieldRevision, in.Revision)
	}
	c := checks.Check{Name: in.Name, State: in.State, URL: in.URL, Summary: strings.TrimRight(in.Summary, "\r\n\t "), By: who.Principal, Revision: 1}
	if err := checks.Validate(c); err != nil {
		return checks.Check{}, err
	}
	t, err := s.target(ctx, who, in.Patch, access.Write, patches.Resolve, "PATCH")
	if err != nil {
		return checks.Check{}, err
	}
	err = s.write(ctx, who, func(tx store.Tx) error {
		rev, err := s.revision(ctx, tx, t, in.Revision)
		if err != nil {
			return err
		}
		c.Revision = rev.Number
		c, err = checks.Post(ctx, tx, t.key, t.id, c, s.now())
		return err
	})
	if err != nil {
		return checks.Check{}, err
	}
	s.logPatch(ctx, "check posted", t.id, "check", c.Name, "state", c.State, "revision", c.Revision)
	return c, nil
}

// revision is revision n of t's patch (0: the latest), fault.NotFound
// when it has none such.
func (s *Service) revision(ctx context.Context, q store.Querier, t target, n int) (patches.Revision, error) {
	revs, err := patches.Revisions(ctx, q, t.key, t.id)
	if err != nil {
		return patches.Revision{}, err
	}
	if len(revs) == 0 {
		return patches.Revision{}, fault.New(fault.NotFound, "patch %s has no revisions", t.id)
	}
	if n == 0 {
		return revs[len(revs)-1], nil
	}
	if n > len(revs) {
		return patches.Revision{}, fault.New(fault.NotFound, "patch %s has no revision %d (it has %d)", t.id, n, len(revs))
	}
	return revs[n-1], nil
}

// Checks asks for a revision's checks, or one of them by Name.
type Checks struct {
	Patch Ref
	// Revision is the revision; 0 means the latest.
	Revision int
	Name     string
}

// ListChecks returns a revision's checks (read access), by name.
func (s *Service) ListChecks(ctx context.Context, who Actor, in Checks) ([]checks.Check, error) {
	if in.Revision < 0 {
		return nil, CheckNumbered(FieldRevision, in.Revision)
	}
	t, err := s.target(ctx, who, in.Patch, access.Read, patches.Resolve, "PATCH")
	if err != nil {
		return nil, err
	}
	rev, err := s.revision(ctx, s.DB.R(), t, in.Revision)
	if err != nil {
		return nil, err
	}
	return checks.OfRevision(ctx, s.DB.R(), t.key, t.id, rev.Number)
}

// GetCheck returns one check of a revision (read access).
func (s *Service) GetCheck(ctx context.Context, who Actor, in Checks) (checks.Check, error) {
	if err := checks.CheckName(in.Name); err != nil {
		return checks.Check{}, err
	}
	if in.Revision < 0 {
		return checks.Check{}, CheckNumbered(FieldRevision, in.Revision)
	}
	t, err := s.target(ctx, who, in.Patch, access.Read, patches.Resolve, "PATCH")
	if err != nil {
		return checks.Check{}, err
	}
	rev, err := s.revision(ctx, s.DB.R(), t, in.Revision)
	if err != nil {
		return checks.Check{}, err
	}
	return checks.Get(ctx, s.DB.R(), t.key, t.id, rev.Number, in.Name)
}

// Submit asks the forge to merge a patch.
type Submit struct {
	Patch Ref
	// Strategy is merge, ff-only, rebase or squash; "" takes the branch
	// rule's (merge on an unprotected branch).
	Strategy string
	// LeaseToken fences the submit as a review's token does: "N" when the
	// patch links exactly one issue, else "ISSUE:N"; "" for none.
	LeaseToken string
	// Chain submits the patch's open ancestors in its stack with it,
	// bottom up, in one move of the branch (patch submit --chain).
	Chain bool
}

// Submitted is a submit's outcome: the merged patch and what the branch
// moved to.
type Submitted struct {
	Patch review.Shown
	// Commit is the branch's new tip.
	Commit string
	// Attempts is how many times the result was built (more than one when
	// another move of the branch won the race).
	Attempts int
	// Closed are the issues the merge closed.
	Closed []string
	// Already says the patch had been merged by the caller's own earlier
	// submit (a retry): Commit is that merge's and nothing moved now.
	Already bool
}

// Submit merges a patch's latest revision into its base branch when every
// submit requirement holds (write access): the forge builds the result in
// the bare repository, moves the branch by compare-and-swap and records
// the merge as the merge scan does (submit.Gate). A refusal is exit 3 /
// 409 with "requirements".
func (s *Service) Submit(ctx context.Context, who Actor, in Submit) (Submitted, error) {
	if in.Strategy != "" {
		if err := branches.CheckStrategy(in.Strategy); err != nil {
			return Submitted{}, err
		}
	}
	fence, err := review.ParseFence(in.LeaseToken)
	if err != nil {
		return Submitted{}, fault.OnField(err, FieldLeaseToken)
	}
	t, err := s.target(ctx, who, in.Patch, access.Write, patches.Resolve, "PATCH")
	if err != nil {
		return Submitted{}, err
	}
	// Completion is fenced: checked here, before anything is built, and
	// again where the merge is recorded, after the branch moved (a
	// takeover between keeps the issue open there).
	// A retry of a submit that merged completes nothing more: its token
	// ended with that merge, and the gate answers with the merge it made.
	var tokens map[string]int64
	p, ok, err := patches.Lookup(ctx, s.DB.R(), t.key, t.id)
	if err != nil {
		return Submitted{}, err
	}
	if m := p.Merge; !ok || p.State != patches.Merged || m == nil || !m.Submitted || m.By != who.Principal {
		if tokens, err = review.MayComplete(ctx, s.DB.R(), t.key, t.id, who.Principal, t.lvl >= access.Admin, fence, "submit", s.now()); err != nil {
			return Submitted{}, err
		}
	}
	// A submit is a write of who's, counted when it starts: its record is
	// written after the branch moved, too late for a refusal, and the
	// attempt costs a merge build whatever its outcome.
	if err := s.write(ctx, who, func(store.Tx) error { return nil }); err != nil {
		return Submitted{}, err
	}
	res, err := s.gate().SubmitFenced(ctx, t.key, t.id, in.Strategy, who.Principal, tokens, in.Chain)
	if err != nil {
		return Submitted{}, err
	}
	s.logPatch(ctx, "patch submitted", t.id, "strategy", res.Status.Strategy, "commit", res.Commit, "attempts", res.Attempts)
	shown, err := s.ShowPatch(ctx, who, Ref{Repo: t.key, ID: t.id})
	if err != nil {
		return Submitted{}, err
	}
	return Submitted{Patch: shown, Commit: res.Commit, Attempts: res.Attempts, Closed: res.Closed, Already: res.Already}, nil
}

// SubmitStatus says whether a patch may be submitted with strategy ("":
// the rule's), and what is missing (read access): mergeable is checked by
// building the result where nothing is kept.
func (s *Service) SubmitStatus(ctx context.Context, who Actor, ref Ref, strategy string) (submit.Status, error) {
	if strategy != "" {
		if err := branches.CheckStrategy(strategy); err != nil {
			return submit.Status{}, err
		}
	}
	t, err := s.target(ctx, who, ref, access.Read, patches.Resolve, "PATCH")
	if err != nil {
		return submit.Status{}, err
	}
	p, err := patches.Get(ctx, s.DB.R(), t.key, t.id)
	if err != nil {
		return submit.Status{}, err
	}
	return s.gate().Status(ctx, s.DB.R(), p, strategy)
}

// CanSubmit reports whether who has the access a submit of a patch of
// repo (a key) needs: what decides whether a page offers the button.
func (s *Service) CanSubmit(ctx context.Context, who Actor, repo string) bool {
	if who.Principal == access.Anonymous {
		return false
	}
	lvl, err := access.Of(ctx, s.DB.R(), who.Principal, repo)
	return err == nil && lvl >= access.Write
}

// withGate adds to l (a view of p) its revisions' checks and its submit
// status, building the result to tell mergeable (patch show; a list uses
// Gate.ListStatuses, which does not).
func (s *Service) withGate(ctx context.Context, l *review.Listed, p patches.Patch) error {
	byRev, err := checks.OfPatch(ctx, s.DB.R(), p.Repo, p.ID)
	if err != nil {
		return err
	}
	l.Revisions = review.WithChecks(p.Revisions, byRev)
	st, err := s.gate().Status(ctx, s.DB.R(), p, "")
	if err != nil {
		return err
	}
	l.Submit = &st
	return nil
}

// branchTips reads a repository's branches for withGate in a list.
func (s *Service) branchTips(ctx context.Context, key string) (map[string]string, error) {
	dir, err := s.repoDir(key)
	if err != nil {
		return nil, err
	}
	return git.Open(dir).Refs(ctx, "refs/heads/")
}
