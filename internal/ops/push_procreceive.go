package ops

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/collabref"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/ids"
	"github.com/collab-forge/collab/internal/issues"
	"github.com/collab-forge/collab/internal/leases"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/pushcheck"
	"github.com/collab-forge/collab/internal/store"
)

// Report is proc-receive's answer for one refs/for command: NG, the
// refusal the pusher sees, or where the command's ref now points.
type Report struct {
	Ref      string
	NG       string // "" means ok
	Refname  string
	Old, New string
	Forced   bool
}

// ProcReceive records each refs/for/BASE command of a push as a patch
// revision, and reports on each in order.
func (e *Push) ProcReceive(ctx context.Context, cmds []Update, rawOpts []string) []Report {
	base := e.baseURL(ctx)
	reps := make([]Report, 0, len(cmds))
	for _, c := range cmds {
		if opts, err := pushcheck.RefOptions(rawOpts, c.Ref); err != nil {
			reps = append(reps, Report{Ref: c.Ref, NG: fault.Public(err)})
		} else {
			reps = append(reps, e.receive(ctx, c, opts, base))
		}
	}
	return reps
}

// received is what one refs/for command did.
type received struct {
	// pushed is what the tip brings to its branch.
	pushed  git.Pushed
	patch   patches.Patch
	rev     Revision
	prev    *patches.Revision
	added   bool
	created bool
	// retargeted: the push moved the patch to another branch.
	retargeted bool
	oldHead    string
	issues     []string
}

// Revision aliases patches.Revision for brevity here.
type Revision = patches.Revision

func (e *Push) receive(ctx context.Context, c Update, opts Options, base string) Report {
	start := time.Now()
	log := e.logger().With("PRINCIPAL", e.Principal, "REPO", e.Repo, "REF", c.Ref, "OLD_OID", c.Old, "NEW_OID", c.New)
	taken := e.prefetched
	stack, tip, err := e.revise(ctx, c, opts)
	if e.prefetched > taken {
		log = log.With("READ", "prefetched")
	}
	if err != nil {
		fe := fault.As(err)
		outcome := "refused"
		if fe.Kind == fault.Internal {
			outcome = "error"
		}
		if is := refusedFor(err); is != "" {
			// journalctl ISSUE=… finds the pushes refused for it.
			log = log.With("ISSUE", is)
		}
		log.Warn("proc-receive", "OUTCOME", outcome, "DURATION_MS", ms(start), "error", err.Error())
		e.say("collab: %s", fe.Msg)
		return Report{Ref: c.Ref, NG: fe.Msg}
	}
	for _, r := range stack {
		outcome := "revision"
		if !r.added {
			outcome = "unchanged"
		}
		l := log.With("PATCH", r.patch.ID)
		if len(r.issues) > 0 {
			l = l.With("ISSUE", strings.Join(r.issues, ","))
		}
		l.Info("proc-receive", "OUTCOME", outcome, "revision", r.rev.Number, "DURATION_MS", ms(start))
		e.tell(r, base)
	}
	res := stack[len(stack)-1]
	if len(tip.Patch) == 0 && len(tip.ChangeID) == 0 {
		e.say("this commit has no Patch: trailer; to revise this patch by amending, install the hook and record the id:")
		e.say("%s", HookHint(e.sshCommand(ctx, base), res.patch.ID))
	}
	rep := Report{Ref: c.Ref, Refname: collabref.HeadRef(res.patch.ID), Old: res.oldHead, New: c.New}
	if !res.added {
		rep.Refname = collabref.RevRef(res.patch.ID, c.New)
	}
	if res.added && res.oldHead != git.ZeroOID {
		rep.Forced = e.forced(ctx, res, tip)
	}
	return rep
}

// forced reports whether a new revision does not descend from the previous
// one, for the client's "(forced update)" (a label only). The answer is
// mostly at hand: a tip whose parent is the previous revision is a
// fast-forward; a tip that is one commit on its merge base with the branch
// (an amend or rebase of a one-commit patch) descends from the previous
// revision only if that is on the branch already, and the merge scan would
// have recorded the patch merged then, unless the patch has just moved to
// this branch. Anything else asks git.
func (e *Push) forced(ctx context.Context, res received, tip git.Commit) bool {
	if slices.Contains(tip.Parents, res.oldHead) {
		return false
	}
	// The walk saw every commit the tip brings: the previous revision is
	// an ancestor exactly when it is among them (or on the branch, which
	// for an open patch means it moved here from another branch).
	if p := res.pushed; !p.Truncated && p.New != nil && !res.retargeted {
		return !p.New[res.oldHead]
	}
	if len(tip.Parents) == 1 && tip.Parents[0] == res.rev.BaseCommit && !res.retargeted {
		return true
	}
	ff, err := e.Git.IsAncestor(ctx, res.oldHead, tip.OID)
	return err == nil && !ff
}

// tell prints the pusher's lines for one patch: its revision and URL,
// and the range-diff against the previous revision.
func (e *Push) tell(res received, base string) {
	id := res.patch.ID
	line := fmt.Sprintf("patch %s revision %d", id, res.rev.Number)
	if u := e.patchURL(base, id); u != "" {
		line += ": " + u
	}
	if !res.added {
		line += " (unchanged: this commit is already revision " + fmt.Sprint(res.rev.Number) + ")"
	}
	e.say("%s", line)
	if res.added && res.prev != nil {
		e.say("compare with revision %d (another clone fetches the revisions first):", res.prev.Number)
		e.say("%s", collabref.FetchLine(id))
		e.say("git range-diff %s..%s %s..%s", res.prev.BaseCommit, res.prev.Commit, res.rev.BaseCommit, res.rev.Commit)
	}
}

// HookHint is the contract's copy-paste line that installs the commit-msg
// hook and stamps the patch id on the last commit.
func HookHint(ssh, id string) string {
	return fmt.Sprintf(`f=$(git rev-parse --git-path hooks/commit-msg); %s hooks commit-msg > "$f" && chmod +x "$f"; git commit --amend --no-edit --trailer "Patch: %s"`, ssh, id)
}

// sshCommand turns the root's ssh setting (ssh://git@host:2222 or
// git@host) into the ssh command line a user types; without it, the host
// of the web URL with user git stands in.
func (e *Push) sshCommand(ctx context.Context, base string) string {
	settings, _ := e.DB.Settings(ctx)
	return forge.SSHCommand(settings[forge.SettingSSH], base)
}

// revise records one refs/for/BASE command: it finds or makes the patch of
// each commit of the stack that carries its own identity trailer (see
// stackOf), links issues (fenced by leases), adds the revisions and moves
// the refs, all in one transaction. The results come bottom first; the
// last is the pushed tip's.
func (e *Push) revise(ctx context.Context, c Update, opts Options) ([]received, git.Commit, error) {
	if c.New == git.ZeroOID {
		return nil, git.Commit{}, fault.New(fault.Usage, "cannot delete %s", c.Ref)
	}
	branch, err := pushcheck.BaseOf(c.Ref)
	if err != nil {
		return nil, git.Commit{}, err
	}
	// The update-ref that writes the refs at the end starts now, so that
	// its start overlaps the walk and the transaction instead of following
	// them. It holds no lock and reads no ref until Commit hands it its
	// lines, below under the refs lock (see git.RefUpdater); every way
	// out before then, a refusal included, aborts it with nothing written.
	refs, err := e.Git.StartRefUpdate(ctx)
	if err != nil {
		return nil, git.Commit{}, fault.Wrap(err, "cannot start git update-ref")
	}
	defer refs.Abort()
	pushed, mb, err := e.readPushed(ctx, c.New, branch)
	tip := pushed.Tip
	if err != nil {
		return nil, tip, err
	}
	lim, err := e.limits(ctx)
	if err != nil {
		return nil, tip, err
	}
	segs, err := stackOf(pushed, mb)
	if err != nil {
		return nil, tip, err
	}
	for _, s := range segs {
		if err := CheckTip(s.top, lim.MessageBytes); err != nil {
			return nil, tip, err
		}
	}
	now := e.Now()
	// The refs lock orders this push's ref update after any other's that
	// committed earlier. The revision's row commits first and its refs are
	// written after: a run killed in between leaves a row whose refs a
	// retry of the same commit (pushRefs), the sweep (RestoreRefs, seconds
	// later) or fsck restores; the pushed objects are already out of the
	// quarantine when proc-receive runs. Never a ref without its row.
	unlock, err := patches.LockRefs(ctx, e.Git.Dir)
	if err != nil {
		return nil, tip, fault.Wrap(err, "cannot lock the patch refs")
	}
	defer unlock()
	var out []received
	var updates []git.RefUpdate
	err = e.DB.Write(ctx, func(tx store.Tx) error {
		// A revision is a write the pusher makes: it counts against the
		// pusher's rate limit, in its own transaction.
		if e.CountWrite != nil {
			if err := e.CountWrite(ctx, tx, e.Principal); err != nil {
				return err
			}
		}
		out, updates = out[:0], updates[:0]
		parent, added := "", false
		named := map[string]string{}
		for _, s := range segs {
			res, all, err := e.pin(ctx, tx, s, branch, parent, opts, now)
			if err != nil {
				return err
			}
			if other, dup := named[res.patch.ID]; dup {
				return fault.New(fault.Usage, "commits %s and %s both name patch %s; give each commit its own Patch: trailer (remove one and let the commit-msg hook make a new id)",
					other[:12], s.top.OID[:12], res.patch.ID)
			}
			named[res.patch.ID] = s.top.OID
			res.pushed = pushed
			out = append(out, res)
			updates = append(updates, pushRefs(res.patch.ID, res.rev, all)...)
			parent, added = res.patch.ID, added || res.added
		}
		if !added {
			return nil
		}
		// From now on the merge scan of this branch has a starting point
		// (see BranchScans): a post-receive killed later is made up.
		return patches.StartScans(ctx, tx, e.Repo, branch, mb, now)
	})
	if err != nil {
		return nil, tip, err
	}
	if err := refs.Commit(updates); err != nil {
		last := out[len(out)-1]
		return nil, tip, fault.Wrap(err, fmt.Sprintf("revision %d of patch %s is recorded but its refs could not be written; push again to finish", last.rev.Number, last.patch.ID))
	}
	return out, tip, nil
}

// readPushed reads the pushed tip, what it brings to branch and their merge
// base, refusing a push that brings nothing or shares no history. One git
// process does it, unless the walk is long or the topic merged the branch
// in (several boundary commits): then git merge-base decides.
func (e *Push) readPushed(ctx context.Context, tip, branch string) (git.Pushed, string, error) {
	pushed, ok, err := e.pushedRange(ctx, tip, branch)
	if err != nil {
		return pushed, "", fault.Wrap(err, "cannot read the pushed commit and its target branch")
	}
	if !ok {
		return pushed, "", fault.New(fault.NotFound, "unknown base branch %s: push to refs/for/ an existing branch", branch)
	}
	var mb string
	switch {
	case pushed.Truncated || len(pushed.Boundary) > 1:
		if mb, ok, err = e.Git.MergeBaseRef(ctx, tip, HeadsPrefix+branch); err != nil {
			return pushed, "", fault.Wrap(err, "cannot find the merge base")
		}
	case len(pushed.New) == 0:
		mb, ok = tip, true
	default:
		mb, ok = "", len(pushed.Boundary) == 1
		if ok {
			mb = pushed.Boundary[0]
		}
	}
	if !ok {
		return pushed, "", fault.New(fault.Usage, "commit %s shares no history with %s", tip[:12], branch)
	}
	if mb == tip {
		return pushed, "", fault.New(fault.Usage, "no new changes: commit %s is already on %s", tip[:12], branch)
	}
	return pushed, mb, nil
}

// segment is one patch's part of a pushed stack: its revision pins top,
// with base as its base commit.
type segment struct {
	top  git.Commit
	base string
	// tip: top is the pushed tip, to which the options that name one
	// patch (title=, description=, patch=, fixes=, lease=) apply.
	tip bool
}

// stackOf splits what a refs/for push brings into patches, as Gerrit
// does: walking down from the tip by first parents, each new commit
// that carries its own identity trailer (Patch: or Change-Id:) ends a
// patch, and commits without one belong to the nearest descendant that
// has one; the tip always ends the top patch. A commit that names the
// same patch as the one above it belongs to it too (a series that grows
// one patch, as before stacks); naming one further up is refused. Each
// patch's base is the top of the one below, the bottom's the merge base.
// A walk git cut short is one patch, as before stacks.
func stackOf(p git.Pushed, mb string) ([]segment, error) {
	tip := segment{top: p.Tip, base: mb, tip: true}
	if p.Truncated || len(p.Commits) < 2 {
		return []segment{tip}, nil
	}
	var tops []git.Commit
	above := identity(p.Tip)
	seen := map[string]string{}
	if above != "" {
		seen[above] = p.Tip.OID
	}
	for cur := p.Tip.OID; ; {
		c, ok := p.Commits[cur]
		if !ok || len(c.Parents) == 0 {
			break
		}
		if id := identity(c); cur != p.Tip.OID && id != "" && id != above {
			if other, dup := seen[id]; dup {
				return nil, fault.New(fault.Usage, "commits %s and %s both name patch %s; give each commit its own Patch: trailer (remove one and let the commit-msg hook make a new id)",
					c.OID[:12], other[:12], id)
			}
			seen[id] = c.OID
			tops = append(tops, c)
			above = id
		}
		cur = c.Parents[0]
	}
	if len(tops) == 0 {
		return []segment{tip}, nil
	}
	segs := make([]segment, 0, len(tops)+1)
	base := mb
	for i := len(tops) - 1; i >= 0; i-- {
		segs = append(segs, segment{top: tops[i], base: base})
		base = tops[i].OID
	}
	tip.base = base
	return append(segs, tip), nil
}

// identity is the patch id a commit's own trailer names (Patch:, else a
// well-formed Change-Id:), or "".
func identity(c git.Commit) string {
	if len(c.Patch) > 0 {
		return c.Patch[0]
	}
	if len(c.ChangeID) > 0 {
		id, _ := ChangeID(c.ChangeID[0])
		return id
	}
	return ""
}

// pin records segment s as a revision of its patch, made or found, with
// parent as the revision's parent patch ("" for the bottom of a stack),
// inside tx. all are the patch's revisions that pushRefs needs.
func (e *Push) pin(ctx context.Context, tx store.Tx, s segment, branch, parent string, opts Options, now time.Time) (received, []Revision, error) {
	var res received
	if !s.tip {
		// Options that name one patch are the tip's; a stack's other
		// patches share the push's topic, draft state, reviewers,
		// hashtags, message and base move.
		opts = Options{Topic: opts.Topic, Draft: opts.Draft, Reviewers: opts.Reviewers, Hashtags: opts.Hashtags, Message: opts.Message, BaseMove: opts.BaseMove}
	}
	msg := string(s.top.Message)
	commit := s.top.OID
	id, err := e.patchOf(ctx, tx, s.top, opts)
	if err != nil {
		return res, nil, err
	}
	touchOnly := false
	p, exists, err := patches.Lookup(ctx, tx, e.Repo, id)
	if err != nil {
		return res, nil, err
	}
	if exists {
		// Below the tip of a stack, the commit is named too.
		which := ""
		if !s.tip {
			which = "commit " + commit[:12] + ": "
		}
		if touchOnly, res.retargeted, err = e.editPatch(ctx, tx, &p, which, branch, opts, now); err != nil {
			return res, nil, err
		}
	} else {
		if p, err = e.createPatch(ctx, tx, id, msg, branch, opts, now); err != nil {
			return res, nil, err
		}
		res.created = true
	}
	res.patch = p
	named, err := e.linkIssues(ctx, tx, id, append(append([]string{}, opts.Fixes...), s.top.Fixes...), opts.Leases, now)
	if err != nil {
		return res, nil, err
	}
	res.issues = named
	if err := e.addRequests(ctx, tx, id, opts, now); err != nil {
		return res, nil, err
	}
	revs, err := patches.RevisionsFor(ctx, tx, e.Repo, id, commit)
	if err != nil {
		return res, nil, err
	}
	res.oldHead = git.ZeroOID
	if len(revs) > 0 {
		res.oldHead = revs[len(revs)-1].Commit
	}
	pin := Revision{Commit: commit, BaseCommit: s.base, Pusher: e.Principal, Parent: parent}
	if opts.Message != nil {
		pin.Message = *opts.Message
	}
	var rev Revision
	added := true
	if res.retargeted {
		rev, err = patches.NewRevisionOf(ctx, tx, e.Repo, id, revs, pin, now)
	} else {
		rev, added, err = patches.AddRevisionOf(ctx, tx, e.Repo, id, revs, pin, now)
	}
	if err != nil {
		return res, nil, err
	}
	if touchOnly && !added {
		if err := patches.Edit(ctx, tx, e.Repo, id, patches.Update{}, now); err != nil {
			return res, nil, err
		}
	}
	// A new revision carries the message from its insert (and its
	// revision.pushed); a push of a commit already pinned sets it.
	if opts.Message != nil && !added {
		if err := patches.SetRevisionMessage(ctx, tx, e.Repo, id, rev.Number, *opts.Message); err != nil {
			return res, nil, err
		}
		rev.Message = *opts.Message
	}
	res.rev, res.added = rev, added
	if !added {
		res.oldHead = commit
		return res, revs, nil
	}
	if exists && opts.Title == nil && opts.Description == nil {
		if err := e.followMessage(ctx, tx, &res.patch, msg, now); err != nil {
			return res, nil, err
		}
	}
	if len(revs) > 0 {
		prev := revs[len(revs)-1]
		res.prev = &prev
	}
	return res, append(revs, rev), nil
}

// editPatch applies a push's options to existing patch p (which names the
// commit below a stack's tip in refusals): refused when p is merged or
// closed, or targets another branch and the push does not move it there
// (-o base=move: retargeted). touchOnly says the options changed nothing,
// so only updated_at waits to be touched, which a new revision does too.
func (e *Push) editPatch(ctx context.Context, tx store.Tx, p *patches.Patch, which, branch string, opts Options, now time.Time) (touchOnly, retargeted bool, err error) {
	switch p.State {
	case patches.Merged:
		return false, false, fault.New(fault.Conflict, "%spatch %s is already merged; to start a new patch remove its Patch: trailer (git commit --amend) and push again", which, p.ID)
	case patches.Closed:
		return false, false, fault.New(fault.Conflict, "%spatch %s is closed; reopen it with 'patch reopen' first", which, p.ID)
	}
	u := patches.Update{Title: opts.Title, Description: opts.Description, Topic: opts.Topic, Draft: opts.Draft}
	if p.Base != branch {
		// Votes belong to the base they were cast for: moving a patch is
		// said out loud, and starts its votes again.
		if !opts.BaseMove {
			return false, false, fault.New(fault.Conflict, "patch %s targets %s, not %s: push it to refs/for/%s, or add -o base=move to move it to %s as a new revision (its approvals and checks start from zero); to backport it, push a commit without its Patch: trailer", p.ID, p.Base, branch, p.Base, branch)
		}
		u.Base = &branch
		p.Base = branch
		retargeted = true
	}
	if u == (patches.Update{}) {
		return true, retargeted, nil
	}
	return false, retargeted, patches.Edit(ctx, tx, e.Repo, p.ID, u, now)
}

// createPatch records patch id for branch, titled by its commit's
// message msg unless the push's options say otherwise.
func (e *Push) createPatch(ctx context.Context, tx store.Tx, id, msg, branch string, opts Options, now time.Time) (patches.Patch, error) {
	n := patches.New{Repo: e.Repo, ID: id, Title: Subject(msg), Description: Body(msg), Author: e.Principal, Base: branch}
	if opts.Title != nil {
		n.Title = *opts.Title
	}
	if opts.Description != nil {
		n.Description = *opts.Description
	}
	if opts.Topic != nil {
		n.Topic = *opts.Topic
	}
	if opts.Draft != nil {
		n.Draft = *opts.Draft
	}
	if n.Title == "" {
		n.Title = "(no subject)"
	}
	n.Titled = opts.Title != nil || opts.Description != nil
	return patches.Create(ctx, tx, n, now)
}

// followMessage retitles p from its new revision's commit message msg: as
// on Gerrit, a patch reads as its latest commit message unless someone
// set its title or description; an amend that kept the message (the
// common case) writes nothing.
func (e *Push) followMessage(ctx context.Context, tx store.Tx, p *patches.Patch, msg string, now time.Time) error {
	title, body := Subject(msg), Body(msg)
	if title == "" {
		title = "(no subject)"
	}
	if p.Titled || (title == p.Title && body == p.Description) {
		return nil
	}
	u := patches.Update{Title: &title, Description: &body, FromCommit: true}
	if err := patches.Edit(ctx, tx, e.Repo, p.ID, u, now); err != nil {
		return err
	}
	p.Title, p.Description = title, body
	return nil
}

// patchOf names the patch a commit revises: its Patch: trailer, else its
// Change-Id:, else -o patch=, else the patch it already is a revision of
// (so that pushing the same trailer-less commit again is a no-op), else a
// new id.
func (e *Push) patchOf(ctx context.Context, tx store.Querier, c git.Commit, opts Options) (string, error) {
	switch {
	case len(c.Patch) == 1:
		return c.Patch[0], nil
	case len(c.ChangeID) == 1:
		// CheckTip made sure it is well-formed.
		id, _ := ChangeID(c.ChangeID[0])
		return id, nil
	case opts.Patch != "":
		return patches.Resolve(ctx, tx, e.Repo, opts.Patch)
	}
	known, err := patches.ByCommit(ctx, tx, e.Repo, c.OID)
	if err != nil {
		return "", err
	}
	if len(known) > 0 {
		return known[0], nil
	}
	return ids.New(), nil
}

// pushRefs are the refs a push of revision rev writes: rev's own and the
// patch's head (the last of all). Not the refs of every revision, as
// PatchRefs gives: git locks each ref it is handed, changed or not, which
// made a push's update-ref cost grow with the patch's revisions (5.5 ms of
// CPU with 47 refs against 1.5 ms with two); the refs of an earlier
// revision that a killed run left unwritten are the sweep's to restore.
func pushRefs(id string, rev Revision, all []Revision) []git.RefUpdate {
	return []git.RefUpdate{
		{Ref: collabref.RevRef(id, rev.Commit), New: rev.Commit},
		{Ref: collabref.HeadRef(id), New: all[len(all)-1].Commit},
	}
}

// pushedLimit bounds the commits of a refs/for push proc-receive reads in
// its one walk; a longer series asks git merge-base.
const pushedLimit = 1000

// linkIssues resolves the issues a push names (fixes= options and Fixes:
// trailers), refuses to link one whose live lease another principal holds
// (unless the pusher is a repository admin, which is looked up only then),
// checks -o lease= tokens against the current tenure, and links them all,
// inside tx.
func (e *Push) linkIssues(ctx context.Context, tx store.Querier, patchID string, prefixes []string, ls []Lease, now time.Time) ([]string, error) {
	var named []string
	seen := map[string]bool{}
	for _, p := range prefixes {
		id, err := issues.Resolve(ctx, tx, e.Repo, p)
		if err != nil {
			if fault.KindOf(err) == fault.NotFound {
				return nil, fault.New(fault.NotFound, "no issue %s in this repository (from fixes= or a Fixes: trailer)", p)
			}
			return nil, err
		}
		if !seen[id] {
			seen[id] = true
			named = append(named, id)
		}
	}
	for _, id := range named {
		holder, err := leases.LiveHolder(ctx, tx, e.Repo, id, now)
		if err != nil {
			return nil, err
		}
		if holder == "" || holder == e.Principal {
			continue
		}
		level, err := access.Of(ctx, tx, e.Principal, e.Repo)
		if err != nil {
			return nil, err
		}
		if level < access.Admin {
			return nil, aboutIssue(id, fault.New(fault.Conflict, "issue %s is leased by %s; only the holder or a repository admin may link it", id, holder).
				With("holder", holder))
		}
	}
	if len(ls) > 0 {
		linked, err := patches.Issues(ctx, tx, e.Repo, patchID)
		if err != nil {
			return nil, err
		}
		all := append([]string{}, named...)
		for _, id := range linked {
			if !seen[id] {
				all = append(all, id)
			}
		}
		for _, l := range ls {
			issue := l.Issue
			if issue == "" {
				if len(all) != 1 {
					return nil, fault.New(fault.Usage, "lease=%d needs exactly one linked issue (this push links %d); use lease=ISSUE:TOKEN", l.Token, len(all))
				}
				issue = all[0]
			} else {
				id, err := issues.Resolve(ctx, tx, e.Repo, issue)
				if err != nil {
					return nil, err
				}
				issue = id
			}
			if err := leases.Fence(ctx, tx, e.Repo, issue, e.Principal, l.Token, now); err != nil {
				return nil, aboutIssue(issue, err)
			}
		}
	}
	for _, id := range named {
		if _, err := patches.LinkIssue(ctx, tx, e.Repo, patchID, id); err != nil {
			return nil, err
		}
	}
	return named, nil
}
