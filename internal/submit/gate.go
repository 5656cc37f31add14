package submit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/branches"
	"github.com/collab-forge/collab/internal/checks"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/hookenv"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/store"
)

// MaxAttempts is how often a submit whose branch moved under it
// recomputes its result and tries again before it gives up (exit 3).
const MaxAttempts = 5

// Gate decides and performs submits on one forge. The caller (internal/ops)
// has checked the submitter's access and the input.
type Gate struct {
	DB   *store.DB
	Root forge.Root
	Log  *slog.Logger
	// PatchURL gives a patch's page for Reviewed-on: ("" leaves it out).
	PatchURL func(repo, id string) string
	// BeforeMove, when set, runs after a result was built and just before
	// the compare-and-swap: tests move the branch there to make the race
	// a submit must survive happen every time.
	BeforeMove func(attempt int)
	// AfterMove, when set, runs after the branch moved and before the
	// merge is recorded: tests stop the process there to check that the
	// merge scan repairs the record.
	AfterMove func()
	// Record records what a submit's move merged, as the merge scan of a
	// push records it (ops.Push.RecordSubmitted), and returns the issues
	// the merge closed by patch id. It lives above this package, beside
	// the merge scan, which is a push's use case.
	Record func(ctx context.Context, m Moved) (closed map[string][]string, err error)
}

// Moved is one branch move a submit made, for Gate.Record.
type Moved struct {
	Repo      string // the repository key
	Git       git.Repo
	Branch    string
	Old, New  string
	Strategy  string
	Submitter string
	// Tokens are the lease tokens the submit carried, by full issue id.
	Tokens map[string]int64
}

func (g *Gate) log() *slog.Logger {
	if g.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return g.Log
}

func (g *Gate) repo(key string) (git.Repo, error) {
	dir, err := reponame.Dir(g.Root.ReposDir(), key)
	if err != nil {
		return git.Repo{}, err
	}
	return git.Open(dir), nil
}

// Facts reads what the requirements of p (read with its reviews) depend
// on, besides mergeable.
func (g *Gate) Facts(ctx context.Context, q store.Querier, p patches.Patch, strategy string, chained bool) (Facts, error) {
	rule, ok, err := branches.Get(ctx, q, p.Repo, p.Base)
	if err != nil {
		return Facts{}, err
	}
	var r *branches.Rule
	if ok {
		r = &rule
	}
	var cs []checks.Check
	if head := p.Head(); head.Number > 0 {
		if cs, err = checks.OfRevision(ctx, q, p.Repo, p.ID, head.Number); err != nil {
			return Facts{}, err
		}
	}
	f, err := factsOf(p, strategy, r, cs, func(name string) (access.Level, error) { return access.Of(ctx, q, name, p.Repo) })
	if err != nil || len(p.Parents) == 0 {
		return f, err
	}
	// The whole stack below, not only the parent: a merged parent may
	// still sit on an open grandparent.
	below, err := patches.OpenAncestors(ctx, q, p.Repo, p.ID)
	if err != nil {
		return Facts{}, err
	}
	f.OpenParents, f.Chained = nil, chained
	for _, r := range below {
		f.OpenParents = append(f.OpenParents, r.ID)
	}
	return f, nil
}

// factsOf is what Evaluate needs for p, given its branch's rule (nil:
// none), its head revision's checks and the access level of a principal.
func factsOf(p patches.Patch, strategy string, rule *branches.Rule, headChecks []checks.Check, level func(string) (access.Level, error)) (Facts, error) {
	f := Facts{Patch: p, Strategy: strategy, Writers: map[string]bool{}, Rule: rule, Checks: headChecks}
	for _, r := range p.Parents {
		if r.State == patches.Open {
			f.OpenParents = append(f.OpenParents, r.ID)
		}
	}
	for _, r := range p.Reviews {
		if _, seen := f.Writers[r.Author]; seen || r.Verdict != "approve" {
			continue
		}
		lvl, err := level(r.Author)
		if err != nil {
			return Facts{}, err
		}
		f.Writers[r.Author] = lvl >= access.Write
	}
	return f, nil
}

// input is what Build needs for p onto tip.
func (g *Gate) input(p patches.Patch, st Status, tip, submitter string) Input {
	head := p.Head()
	var footers []string
	if g.PatchURL != nil {
		if u := g.PatchURL(p.Repo, p.ID); u != "" {
			footers = append(footers, "Reviewed-on: "+u)
		}
	}
	for _, a := range st.Approvers {
		footers = append(footers, "Reviewed-by: "+a)
	}
	return Input{Strategy: st.Strategy, Tip: tip, Base: head.BaseCommit, Commit: head.Commit, PatchID: p.ID,
		Title: p.Title, Description: p.Description, Branch: p.Base, Footers: footers,
		Committer: Ident{Name: submitter, Email: hookenv.Email(submitter)}}
}

// mergeable builds p's result in a scratch object store to see whether
// the strategy applies.
func (g *Gate) mergeable(ctx context.Context, repo git.Repo, p patches.Patch, st Status) Requirement {
	if m, bad := aliasBase(ctx, repo, p.Base); bad {
		return m
	}
	tip, ok, err := repo.ResolveRef(ctx, "refs/heads/"+p.Base)
	switch {
	case err != nil:
		return Requirement{Name: ReqMergeable, Detail: "could not be checked"}
	case !ok:
		return Requirement{Name: ReqMergeable, Detail: "branch " + p.Base + " does not exist"}
	case len(p.Revisions) == 0:
		return Requirement{Name: ReqMergeable, Detail: "no revision"}
	}
	scratch, done, err := Scratch(repo)
	if err != nil {
		return Requirement{Name: ReqMergeable, Detail: "could not be checked"}
	}
	defer done()
	if _, err := Build(ctx, scratch, g.input(p, st, tip, "collab")); err != nil {
		if c := AsConflict(err); c != nil {
			return Requirement{Name: ReqMergeable, Detail: c.Error()}
		}
		g.log().Warn("mergeable check", "REPO", p.Repo, "PATCH", p.ID, "OUTCOME", "error", "error", err.Error())
		return Requirement{Name: ReqMergeable, Detail: "could not be checked"}
	}
	return Requirement{Name: ReqMergeable, OK: true, Detail: st.Strategy + " applies onto " + tip[:12]}
}

// aliasBase refuses a base branch that is a symbolic ref (an operator's
// alias, say master for main): moving it would move the branch it names
// without that branch's rule. bad is false when base is an ordinary
// branch or none.
func aliasBase(ctx context.Context, repo git.Repo, base string) (m Requirement, bad bool) {
	target, sym, err := repo.SymbolicRef(ctx, "refs/heads/"+base)
	switch {
	case err != nil:
		return Requirement{Name: ReqMergeable, Detail: "could not be checked"}, true
	case !sym:
		return Requirement{}, false
	}
	to := strings.TrimPrefix(target, "refs/heads/")
	return Requirement{Name: ReqMergeable, Detail: fmt.Sprintf("branch %s is an alias of %s: push the patch to refs/for/%s", base, to, to)}, true
}

// Status is p's submit status with strategy asked ("" for the rule's),
// mergeable checked by building the result in a scratch object store.
// p must carry its revisions and reviews (patches.Get).
func (g *Gate) Status(ctx context.Context, q store.Querier, p patches.Patch, asked string) (Status, error) {
	f, err := g.Facts(ctx, q, p, asked, false)
	if err != nil {
		return Status{}, err
	}
	st := Evaluate(f)
	if p.State != patches.Open {
		m := Requirement{Name: ReqMergeable, Detail: "the patch is " + string(p.State)}
		f.Mergeable = &m
		return Evaluate(f), nil
	}
	repo, err := g.repo(p.Repo)
	if err != nil {
		return Status{}, err
	}
	m := g.mergeable(ctx, repo, p, st)
	f.Mergeable = &m
	return Evaluate(f), nil
}

// ListStatuses is Status for a page of repo's patches, where building
// every result would cost too much: mergeable holds when the base branch
// has not moved since the latest revision's base (tips: the repository's
// branches, git.Refs of refs/heads/); otherwise it is reported as not
// checked here. The caller has read the page's checks
// (checks.OfPatches); the branch rules and each approver's access are read
// once for the page, not once a patch.
func (g *Gate) ListStatuses(ctx context.Context, q store.Querier, repo string, ps []patches.Patch, tips map[string]string,
	checksOf map[string]map[int][]checks.Check) ([]Status, error) {
	rules, err := branches.List(ctx, q, repo)
	if err != nil {
		return nil, err
	}
	byBranch := make(map[string]*branches.Rule, len(rules))
	for i := range rules {
		byBranch[rules[i].Branch] = &rules[i]
	}
	levels := map[string]access.Level{}
	level := func(name string) (access.Level, error) {
		if l, ok := levels[name]; ok {
			return l, nil
		}
		l, err := access.Of(ctx, q, name, repo)
		levels[name] = l
		return l, err
	}
	out := make([]Status, 0, len(ps))
	for _, p := range ps {
		var cs []checks.Check
		if head := p.Head(); head.Number > 0 {
			if cs = checksOf[p.ID][head.Number]; cs == nil {
				cs = []checks.Check{}
			}
		}
		f, err := factsOf(p, "", byBranch[p.Base], cs, level)
		if err != nil {
			return nil, err
		}
		out = append(out, ListStatus(f, tips))
	}
	return out, nil
}

// ListStatus evaluates f with mergeable as a list can tell it without git:
// from the branch tips.
func ListStatus(f Facts, tips map[string]string) Status {
	p := f.Patch
	head := p.Head()
	tip, ok := tips["refs/heads/"+p.Base]
	m := Requirement{Name: ReqMergeable}
	switch {
	case p.State != patches.Open:
		m.Detail = "the patch is " + string(p.State)
	case !ok:
		m.Detail = "branch " + p.Base + " does not exist"
	case head.Number > 0 && tip == head.BaseCommit:
		m.OK, m.Detail = true, "applies: "+p.Base+" has not moved since the revision's base"
	default:
		m.Detail = "not checked in a list (" + p.Base + " moved since the revision's base); patch show checks it"
	}
	f.Mergeable = &m
	return Evaluate(f)
}

// Submitted is a submit's outcome.
type Submitted struct {
	Status Status
	// Commit is the branch's new tip; Written the commits the submit made.
	Commit  string
	Written int
	// Attempts is how many times the result was built.
	Attempts int
	// Closed are the issues the merge closed (the patch's open linked
	// ones), for the submitter to be told as a pusher is.
	Closed []string
	// Already is true when the patch had been merged by this submitter's
	// own earlier submit (a retry whose answer was lost): Commit is that
	// merge's, and nothing moved now.
	Already bool
}

// Submit merges patch id of repo (a key) into its base branch by
// submitter with strategy asked ("" for the rule's), when every
// requirement holds: the result is built (Build), the branch moved by
// compare-and-swap (recomputed and retried up to MaxAttempts when another
// move won), and the merge recorded as the merge scan records it
// (Gate.Record). A refusal is fault.Conflict with the
// requirements as the field "requirements".
func (g *Gate) Submit(ctx context.Context, repoKey, id, asked, submitter string) (Submitted, error) {
	return g.SubmitFenced(ctx, repoKey, id, asked, submitter, nil, false)
}

// SubmitFenced is Submit with the lease tokens the submit carried, by
// full issue id: the merge closes such an issue only while its token is
// the live tenure's (issues.CloseFenced). With chain, the patch's open
// ancestors in its stack are submitted with it, bottom up, each built on
// the one below and all in one move of the branch; every one must meet
// its requirements, and a refusal names each that does not.
func (g *Gate) SubmitFenced(ctx context.Context, repoKey, id, asked, submitter string, tokens map[string]int64, chain bool) (Submitted, error) {
	if asked != "" {
		if err := branches.CheckStrategy(asked); err != nil {
			return Submitted{}, err
		}
	}
	repo, err := g.repo(repoKey)
	if err != nil {
		return Submitted{}, err
	}
	moverRepo := repo.With(hookenv.Committer(submitter)...)
	for attempt := 1; attempt <= MaxAttempts; attempt++ {
		p, err := patches.Get(ctx, g.DB.R(), repoKey, id)
		if err != nil {
			return Submitted{}, err
		}
		if m := p.Merge; p.State == patches.Merged && m != nil && m.Submitted && m.By == submitter {
			return Submitted{Commit: m.Commit, Already: true}, nil
		}
		ps, err := g.chainOf(ctx, p, chain)
		if err != nil {
			return Submitted{}, err
		}
		tip, hasTip, err := repo.ResolveRef(ctx, "refs/heads/"+p.Base)
		if err != nil {
			return Submitted{}, err
		}
		b, err := g.build(ctx, repo, moverRepo, ps, asked, submitter, tip, hasTip, chain)
		if err != nil {
			return Submitted{}, err
		}
		st := b.statuses[len(b.statuses)-1]
		if len(b.refused) > 0 {
			return Submitted{Status: st}, fault.New(fault.Conflict, "%s", strings.Join(b.refused, "; ")).With("requirements", st.Requirements)
		}
		// What was decided must still hold when the branch moves: a new
		// revision, review or check meanwhile means deciding again. The
		// refs lock, which a push holds while it records a revision, keeps
		// a new revision out until the branch has moved (it is released
		// before the record, whose merge scan takes it again).
		unlock, err := patches.LockRefs(ctx, repo.Dir)
		if err != nil {
			return Submitted{}, fault.Wrap(err, "submit failed: cannot lock the patch refs")
		}
		again := true
		for _, q := range ps {
			if again, err = g.stillSubmittable(ctx, q, asked, chain); err != nil || !again {
				break
			}
		}
		if err != nil || !again {
			unlock()
			if err != nil {
				return Submitted{}, err
			}
			continue
		}
		if g.BeforeMove != nil {
			g.BeforeMove(attempt)
		}
		err = moverRepo.CompareAndSwap(ctx, "refs/heads/"+p.Base, b.commit, tip, Reflog(st.Strategy, p.ID))
		unlock()
		if errors.Is(err, git.ErrMoved) {
			g.log().Info("submit", "REPO", repoKey, "PATCH", id, "PRINCIPAL", submitter, "OUTCOME", "retry", "attempt", attempt)
			continue
		}
		if err != nil {
			return Submitted{}, fault.Wrap(err, "submit failed: the branch could not be moved")
		}
		g.log().Info("submit", "REPO", repoKey, "PATCH", id, "PRINCIPAL", submitter, "REF", "refs/heads/"+p.Base,
			"OLD_OID", tip, "NEW_OID", b.commit, "OUTCOME", "moved", "strategy", st.Strategy, "attempt", attempt, "patches", len(ps))
		if g.AfterMove != nil {
			g.AfterMove()
		}
		closedBy, err := g.Record(ctx, Moved{Repo: repoKey, Git: repo, Branch: p.Base, Old: tip, New: b.commit,
			Strategy: st.Strategy, Submitter: submitter, Tokens: tokens})
		if err != nil {
			return Submitted{}, fault.Default(err, fmt.Sprintf("patch %s was merged into %s as %s, but recording it failed (the next push, the sweep or fsck records it)", p.ID, p.Base, b.commit))
		}
		var closed []string
		for _, q := range ps {
			closed = append(closed, closedBy[q.ID]...)
		}
		return Submitted{Status: st, Commit: b.commit, Written: b.written, Attempts: attempt, Closed: closed}, nil
	}
	return Submitted{}, fault.New(fault.Conflict, "patch %s: the branch kept moving during the submit (%d attempts); try again", id, MaxAttempts)
}

// chainOf is what a submit of p merges: p alone, or with chain its open
// ancestors first, bottom up.
func (g *Gate) chainOf(ctx context.Context, p patches.Patch, chain bool) ([]patches.Patch, error) {
	if !chain || p.State != patches.Open || len(p.Parents) == 0 {
		return []patches.Patch{p}, nil
	}
	below, err := patches.OpenAncestors(ctx, g.DB.R(), p.Repo, p.ID)
	if err != nil {
		return nil, err
	}
	ps := make([]patches.Patch, 0, len(below)+1)
	for _, r := range below {
		q, err := patches.Get(ctx, g.DB.R(), p.Repo, r.ID)
		if err != nil {
			return nil, err
		}
		ps = append(ps, q)
	}
	return append(ps, p), nil
}

// built is a submit's result before the branch moves: each patch's
// status, the refusals (one per patch that fails), and the commit the
// branch moves to.
type built struct {
	statuses []Status
	refused  []string
	commit   string
	written  int
}

// build decides each of ps (bottom first) and builds each on the result
// of the one below, starting at the branch's tip.
func (g *Gate) build(ctx context.Context, repo, mover git.Repo, ps []patches.Patch, asked, submitter, tip string, hasTip, chain bool) (built, error) {
	b := built{commit: tip}
	top := ps[len(ps)-1]
	alias, isAlias := aliasBase(ctx, repo, top.Base)
	for _, q := range ps {
		f, err := g.Facts(ctx, g.DB.R(), q, asked, chain)
		if err != nil {
			return built{}, err
		}
		st := Evaluate(f)
		others := len(st.Unmet()) > 1 // mergeable is always unmet here
		var m Requirement
		switch {
		case q.State != patches.Open:
			m = Requirement{Name: ReqMergeable, Detail: "the patch is " + string(q.State)}
		case q.Base != top.Base:
			m = Requirement{Name: ReqMergeable, Detail: "it targets " + q.Base + ", not " + top.Base}
		case isAlias:
			m = alias
		case len(b.refused) > 0:
			m = Requirement{Name: ReqMergeable, Detail: "not checked: a patch below it cannot be submitted"}
		case (others || !hasTip || len(q.Revisions) == 0) && len(ps) == 1:
			m = g.mergeable(ctx, repo, q, st)
		case others || !hasTip || len(q.Revisions) == 0:
			m = Requirement{Name: ReqMergeable, Detail: "not checked: other requirements fail"}
		default:
			res, err := Build(ctx, mover, g.input(q, st, b.commit, submitter))
			if c := AsConflict(err); c != nil {
				m = Requirement{Name: ReqMergeable, Detail: c.Error()}
			} else if err != nil {
				return built{}, fault.Wrap(err, "submit failed")
			} else {
				m = Requirement{Name: ReqMergeable, OK: true, Detail: st.Strategy + " applies onto " + b.commit[:12]}
				b.commit = res.Commit
				b.written += res.Written
			}
		}
		f.Mergeable = &m
		st = Evaluate(f)
		b.statuses = append(b.statuses, st)
		if !st.Submittable {
			b.refused = append(b.refused, Refusal(q.ID, st.Unmet()))
		}
	}
	return b, nil
}

// stillSubmittable re-reads the patch's revision, reviews and checks and
// says whether the requirements still hold on the same latest revision.
func (g *Gate) stillSubmittable(ctx context.Context, before patches.Patch, asked string, chain bool) (bool, error) {
	p, err := patches.Get(ctx, g.DB.R(), before.Repo, before.ID)
	if err != nil {
		return false, err
	}
	if p.Head().Commit != before.Head().Commit {
		return false, nil
	}
	f, err := g.Facts(ctx, g.DB.R(), p, asked, chain)
	if err != nil {
		return false, err
	}
	f.Mergeable = &Requirement{OK: true}
	return Evaluate(f).Submittable, nil
}
