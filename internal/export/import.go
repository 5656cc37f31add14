package export

import (
	"context"
	"crypto/ed25519"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/collabref"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/issues"
	"github.com/collab-forge/collab/internal/leases"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/principals"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/repos"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/text"
)

// Import is what collab-hook import is asked to do.
type Import struct {
	// Repo is the repository's key here.
	Repo string
	// From is where the export is: a git URL or a path. "" reads Repo's
	// own refs/collab/ (Repo must be a repository this forge knows).
	From string
	// Keys are the keys whose signatures the records must carry.
	Keys []ed25519.PublicKey
	// Trust imports records whose signatures do not check out.
	Trust bool
	// Map renames the names in the record (authors, holders, pushers,
	// reviewers) from the other forge's to this one's.
	Map map[string]string
	// Binary is collab-hook's path, for the hooks of a repository Import
	// creates.
	Binary string
}

// Imported says what an import did.
type Imported struct {
	Repo string `json:"repo"`
	// Created: the repository was made here from the source, with its
	// branches and tags.
	Created bool `json:"created"`
	// Issues and Patches are the records written; Unchanged those that
	// were here already, the same.
	Issues    int `json:"issues"`
	Patches   int `json:"patches"`
	Unchanged int `json:"unchanged"`
	// Checked is how many signed commits were checked; Untrusted the
	// problems --trust let through.
	Checked   int      `json:"checked"`
	Untrusted []string `json:"untrusted"`
	// Principals are the names that had no account here: made, disabled.
	Principals []string `json:"principals"`
}

// Importer reads exports back into the record of one forge.
type Importer struct {
	Root forge.Root
	DB   *store.DB
	Now  func() time.Time
	Log  *slog.Logger // nil: discard
}

// fetchEnv is the environment of the fetch of a --from URL beyond git's
// clean one: only the transports a forge serves (no ext::, which runs a
// command), and the operator's way to ssh (GIT_SSH_COMMAND, the agent).
func fetchEnv() []string {
	env := []string{"GIT_ALLOW_PROTOCOL=file:git:http:https:ssh"}
	for _, k := range []string{"GIT_SSH_COMMAND", "GIT_SSH", "SSH_AUTH_SOCK"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// Import brings in.Repo's record up to what the export at in.From holds:
// every issue and patch there, with their original ids, authors and
// times, and the revision refs their commits live on. It creates the
// repository from the source (branches, tags and all) when it is not
// here. It writes nothing when a signature does not check out (unless
// in.Trust), when a record here with the same id differs, or when a name
// cannot be a principal; the record is written in one transaction after
// git has every object it names, so a run killed anywhere is completed by
// the next, and a record already here, the same, is left alone.
func (im *Importer) Import(ctx context.Context, in Import) (Imported, error) {
	start := time.Now()
	out := Imported{Repo: in.Repo, Untrusted: []string{}, Principals: []string{}}
	now := im.now()
	_, err := repos.Get(ctx, im.DB.R(), in.Repo)
	exists := err == nil
	if err != nil && fault.KindOf(err) != fault.NotFound {
		return out, err
	}
	var dir string
	if exists {
		if dir, err = reponame.Dir(im.Root.ReposDir(), in.Repo); err != nil {
			return out, err
		}
	}
	src := dir
	if in.From == "" {
		if !exists {
			return out, fault.New(fault.NotFound, "repository %s not found; give --from to make it from an export", reponame.Display(in.Repo))
		}
	} else {
		if strings.HasPrefix(in.From, "-") || text.CheckLine("--from", in.From, 4096) != nil {
			return out, fault.New(fault.Usage, "bad --from %q: want a git URL or a path", text.Clip(in.From))
		}
		if src = localRepo(ctx, in.From); src == "" {
			// Elsewhere: fetched into a scratch repository beside the
			// forge's, read there, and dropped.
			tmp, err := os.MkdirTemp(im.Root.Dir, ".import-")
			if err != nil {
				return out, fmt.Errorf("import: %w", err)
			}
			defer os.RemoveAll(tmp)
			src = filepath.Join(tmp, "source.git")
			if err := git.Init(ctx, src); err != nil {
				return out, err
			}
			if _, err := git.Open(src).With(fetchEnv()...).Run(ctx, nil, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--", in.From,
				"+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*", "+refs/collab/*:refs/collab/*"); err != nil {
				return out, fault.New(fault.Usage, "cannot fetch the export from %s: %s", text.Clip(in.From), oneLine(gitStderr(err), 200))
			}
		}
	}
	recs, rep, err := Read(ctx, src, in.Keys)
	if err != nil {
		return out, err
	}
	out.Checked = rep.Commits
	if !rep.OK() {
		if !in.Trust {
			return out, fault.New(fault.Conflict, "the export's signatures do not check out, nothing imported: %s%s (--allowed-signers names the keys to accept; --trust imports it anyway)",
				rep.Problems[0], more(len(rep.Problems)-1))
		}
		out.Untrusted = rep.Problems
	}
	names, err := rename(&recs, in.Map)
	if err != nil {
		return out, err
	}
	todo, err := im.fresh(ctx, in.Repo, exists, recs, now)
	if err != nil {
		return out, err
	}
	out.Unchanged = len(recs.Issues) + len(recs.Patches) - len(todo.Issues) - len(todo.Patches)

	// git first: the record must never name a commit the repository lacks.
	if in.From != "" {
		if !exists {
			if _, err := repos.Create(ctx, im.Root, im.DB, in.Repo, false, "", in.Binary, now); err != nil {
				return out, err
			}
			out.Created = true
			if dir, err = reponame.Dir(im.Root.ReposDir(), in.Repo); err != nil {
				return out, err
			}
		}
		if err := fetchRefs(ctx, dir, src, out.Created, recs.Patches); err != nil {
			return out, err
		}
	}
	err = im.DB.Write(ctx, func(tx *sql.Tx) error {
		for _, n := range names {
			made, err := principals.EnsureDisabled(ctx, tx, n, now)
			if err != nil {
				return err
			}
			if made {
				out.Principals = append(out.Principals, n)
			}
		}
		for _, r := range todo.Issues {
			if err := issues.Restore(ctx, tx, in.Repo, restoredIssue(r)); err != nil {
				return collided(err)
			}
			if err := leases.Restore(ctx, tx, in.Repo, r.Issue.ID, restoredTenures(r.Tenures)); err != nil {
				return collided(err)
			}
		}
		for _, r := range todo.Patches {
			if err := patches.Restore(ctx, tx, in.Repo, restoredPatch(r)); err != nil {
				return collided(err)
			}
		}
		return nil
	})
	if err != nil {
		out.Principals = []string{}
		return out, err
	}
	out.Issues, out.Patches = len(todo.Issues), len(todo.Patches)
	im.log().InfoContext(ctx, "import", "REPO", in.Repo, "OUTCOME", "imported", "issues", out.Issues, "patches", out.Patches,
		"unchanged", out.Unchanged, "created", out.Created, "untrusted", len(out.Untrusted), "DURATION_MS", time.Since(start).Milliseconds())
	return out, nil
}

// localRepo is the git directory of from when it is a repository on
// this machine (bare, or a clone's .git), read in place rather than
// fetched: a fetch of 150 000 objects costs as much as the rest of the
// import. "" otherwise.
func localRepo(ctx context.Context, from string) string {
	abs, err := filepath.Abs(from)
	if err != nil {
		return ""
	}
	for _, dir := range []string{abs, filepath.Join(abs, ".git")} {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		if _, err := git.Open(dir).Run(ctx, nil, "rev-parse", "--git-dir"); err == nil {
			return dir
		}
	}
	return ""
}

// fresh returns the records that are not in repo here yet, refusing the
// import when one that is differs from what an export here would write
// for the imported one.
func (im *Importer) fresh(ctx context.Context, repo string, exists bool, recs Records, now time.Time) (Records, error) {
	if !exists {
		return recs, nil
	}
	local, _, err := load(ctx, im.DB, repo, now)
	if err != nil {
		return Records{}, err
	}
	have := make(map[string]string, len(local))
	for _, r := range local {
		have[r.ref], _ = buildTree(r.files)
	}
	var out Records
	check := func(ref string, tree func(string, time.Time) (string, error), kind, id string) (bool, error) {
		h, ok := have[ref]
		if !ok {
			return true, nil
		}
		t, err := tree(repo, now)
		if err != nil {
			return false, err
		}
		if t != h {
			return false, fault.New(fault.Conflict, "%s %s is here already and differs from the export's, nothing imported", kind, id)
		}
		return false, nil
	}
	for _, r := range recs.Issues {
		add, err := check(IssueRef(r.Issue.ID), r.tree, "issue", r.Issue.ID)
		if err != nil {
			return Records{}, err
		}
		if add {
			out.Issues = append(out.Issues, r)
		}
	}
	for _, r := range recs.Patches {
		add, err := check(PatchRef(r.Patch.ID), r.tree, "patch", r.Patch.ID)
		if err != nil {
			return Records{}, err
		}
		if add {
			out.Patches = append(out.Patches, r)
		}
	}
	return out, nil
}

// fetchRefs brings the revision refs of ps from src into dir, and with
// branches, the branches and tags (a repository made from the source, or
// one a killed import made without them).
func fetchRefs(ctx context.Context, dir, src string, branches bool, ps []PatchRecord) error {
	g := git.Open(dir)
	if !branches {
		n, err := g.CountRefs(ctx, "refs/heads/")
		if err != nil {
			return err
		}
		branches = n == 0
	}
	var specs strings.Builder
	if branches {
		specs.WriteString("+refs/heads/*:refs/heads/*\n+refs/tags/*:refs/tags/*\n")
	}
	want := map[string]bool{}
	for _, p := range ps {
		want[p.Patch.ID] = true
	}
	refs, err := git.Open(src).Refs(ctx, collabref.Patches)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(refs))
	for ref := range refs {
		r, ok := collabref.Parse(ref)
		if ok && want[r.ID] && (r.Kind == collabref.Rev || r.Kind == collabref.Head) {
			names = append(names, ref)
		}
	}
	sort.Strings(names)
	for _, ref := range names {
		fmt.Fprintf(&specs, "+%s:%s\n", ref, ref)
	}
	if specs.Len() == 0 {
		return nil
	}
	if _, err := g.Run(ctx, strings.NewReader(specs.String()), "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--stdin", "--", src); err != nil {
		return fmt.Errorf("bring the export's commits into %s: %w", dir, err)
	}
	return nil
}

// rename applies m to every name in recs and returns the names the
// record then holds that need a principal, sorted; a name that cannot be
// one is refused, naming --map.
func rename(recs *Records, m map[string]string) ([]string, error) {
	set := map[string]bool{}
	var bad string
	name := func(s *string) {
		if n, ok := m[*s]; ok {
			*s = n
		}
		switch {
		case *s == access.Local || *s == access.Unknown:
		case access.ValidName(*s):
			set[*s] = true
		case bad == "":
			bad = *s
		}
	}
	maybe := func(s *string) {
		if s != nil {
			name(s)
		}
	}
	for i := range recs.Issues {
		r := &recs.Issues[i]
		name(&r.Issue.Author)
		maybe(r.Issue.OnBehalfOf)
		for j := range r.Comments {
			name(&r.Comments[j].Author)
			maybe(r.Comments[j].OnBehalfOf)
		}
		for j := range r.Tenures {
			name(&r.Tenures[j].Holder)
		}
	}
	for i := range recs.Patches {
		r := &recs.Patches[i]
		name(&r.Patch.Author)
		if r.Patch.Merge != nil {
			name(&r.Patch.Merge.By)
		}
		for j := range r.Revisions {
			name(&r.Revisions[j].Pusher)
		}
		for j := range r.Reviews {
			name(&r.Reviews[j].Author)
			maybe(r.Reviews[j].OnBehalfOf)
		}
		for j := range r.States {
			name(&r.States[j].Actor)
		}
	}
	if bad != "" {
		return nil, fault.New(fault.Usage, "%q in the export cannot be a principal's name here; map it: --map %s=NAME", text.Clip(bad), text.Clip(bad))
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

func restoredIssue(r IssueRecord) issues.Restored {
	i := r.Issue
	out := issues.Restored{ID: i.ID, Title: i.Title, Body: i.Body, State: i.State, Author: i.Author,
		CreatedAt: i.CreatedAt, UpdatedAt: i.UpdatedAt, ClosedAt: i.ClosedAt, Labels: i.Labels, OnBehalfOf: i.OnBehalfOf, Via: i.Via}
	for _, c := range r.Comments {
		out.Comments = append(out.Comments, issues.RestoredComment{ID: c.ID, Author: c.Author, Body: c.Body, CreatedAt: c.CreatedAt,
			OnBehalfOf: c.OnBehalfOf, Via: c.Via})
	}
	return out
}

func restoredTenures(ts []Tenure) []leases.Restored {
	out := make([]leases.Restored, 0, len(ts))
	for _, t := range ts {
		out = append(out, leases.Restored{Token: t.Token, Holder: t.Holder, AcquiredAt: t.AcquiredAt,
			ExpiresAt: t.ExpiresAt, EndedAt: t.EndedAt, EndReason: t.EndReason})
	}
	return out
}

func restoredPatch(r PatchRecord) patches.Restored {
	p := r.Patch
	out := patches.Restored{ID: p.ID, Title: p.Title, Description: p.Description, Topic: p.Topic, State: p.State,
		Author: p.Author, Base: p.Base, Draft: p.Draft, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt, Issues: p.Issues}
	if m := p.Merge; m != nil {
		out.Merge = &patches.RestoredMerge{Branch: m.Branch, Commit: m.Commit, By: m.By, At: m.At}
	}
	for _, v := range r.Revisions {
		out.Revisions = append(out.Revisions, patches.RestoredRevision{Number: v.Number, Commit: v.Commit,
			BaseCommit: v.BaseCommit, Pusher: v.Pusher, At: v.CreatedAt})
	}
	for _, v := range r.Reviews {
		out.Reviews = append(out.Reviews, patches.RestoredReview{ID: v.ID, Author: v.Author, Verdict: v.Verdict,
			Body: v.Body, CreatedAt: v.CreatedAt, Revision: v.Revision, File: v.File, Line: v.Line, OnBehalfOf: v.OnBehalfOf, Via: v.Via})
	}
	for _, v := range r.States {
		out.States = append(out.States, patches.RestoredState{Kind: v.Kind, Actor: v.Actor, At: v.At})
	}
	return out
}

// collided words an insert that failed on an id already taken here (a
// comment's or review's, which are unique across repositories) as the
// refusal it is.
func collided(err error) error {
	if strings.Contains(err.Error(), "UNIQUE constraint failed") {
		return fault.New(fault.Conflict, "an id in the export is taken here already, nothing imported: %s", oneLine(err.Error(), 300))
	}
	return err
}

func more(n int) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf(" (and %d more)", n)
}

// gitStderr is what git said of a failure, or the error.
func gitStderr(err error) string {
	var ge *git.Error
	if errors.As(err, &ge) && ge.Stderr != "" {
		return ge.Stderr
	}
	return err.Error()
}

func (im *Importer) now() time.Time {
	if im.Now == nil {
		return time.Now().UTC()
	}
	return im.Now().UTC()
}

func (im *Importer) log() *slog.Logger {
	if im.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return im.Log
}
