// Package submit makes what patch submit puts on a branch, in the bare
// repository with stock git 2.39 and no work tree, and decides whether a
// patch may be submitted (Evaluate).
//
// The strategies (CONTRACT.md "Protected branches, submit and checks"):
//
//   - merge: git merge-tree --write-tree of the branch tip and the patch
//     tip (it picks the merge base itself), then commit-tree with both as
//     parents: always a merge commit.
//   - ff-only: the patch tip itself, when the branch tip is its ancestor;
//     otherwise "needs rebase".
//   - squash: the same merge-tree result, committed with the branch tip as
//     its only parent and the patch's title and description.
//   - rebase: each commit of the revision (base_commit..commit) replayed
//     onto the tip in a temporary index: read-tree ONTO once, then per
//     commit git diff --binary PARENT C | git apply --cached --3way,
//     write-tree and commit-tree with C's author and message (2.39 has
//     neither merge-tree --merge-base nor git replay).
//
// Every commit written carries the footers (Reviewed-on:, Reviewed-by:)
// and the tip the Patch: trailer, in the message's last paragraph.
package submit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/collab-forge/collab/internal/branches"
	"github.com/collab-forge/collab/internal/git"
)

// Ident is a git identity.
type Ident struct {
	Name, Email string
	// When is the identity's date; zero means now.
	When time.Time
}

func (id Ident) env(who string) []string {
	env := []string{"GIT_" + who + "_NAME=" + id.Name, "GIT_" + who + "_EMAIL=" + id.Email}
	if !id.When.IsZero() {
		env = append(env, "GIT_"+who+"_DATE="+strconv.FormatInt(id.When.Unix(), 10)+" "+id.When.Format("-0700"))
	}
	return env
}

// Input is what a submit merges.
type Input struct {
	Strategy string
	// Tip is the branch's tip; Base and Commit the patch revision's diff
	// (base_commit..commit).
	Tip, Base, Commit string
	PatchID           string
	// Title and Description make the squash's message and the merge
	// commit's.
	Title, Description string
	Branch             string
	// Footers are added to every commit written (Reviewed-on:,
	// Reviewed-by:); the last one written also gets Patch: PatchID.
	Footers []string
	// Committer is the submitter; it is also the author of a merge commit.
	Committer Ident
}

// Result is what the branch moves to.
type Result struct {
	Commit string
	// Written is the number of commits the submit made (0 for ff-only).
	Written int
}

// MaxConflictPaths is how many conflicting paths a refusal names.
const MaxConflictPaths = 10

// Conflict says why a strategy does not apply; it is the mergeable
// requirement's detail.
type Conflict struct {
	// Reason is a short sentence ("conflicts", "needs rebase", …).
	Reason string
	// Paths are the conflicting paths, sorted; Total counts them all.
	Paths []string
	Total int
}

func (c *Conflict) Error() string {
	if len(c.Paths) == 0 {
		return c.Reason
	}
	s := c.Reason + " in " + strings.Join(c.Paths, ", ")
	if c.Total > len(c.Paths) {
		s += fmt.Sprintf(" and %d more", c.Total-len(c.Paths))
	}
	return s
}

func conflict(reason string, paths []string) *Conflict {
	seen := map[string]bool{}
	var uniq []string
	for _, p := range paths {
		if p != "" && !seen[p] {
			seen[p] = true
			uniq = append(uniq, p)
		}
	}
	c := &Conflict{Reason: reason, Total: len(uniq)}
	if len(uniq) > MaxConflictPaths {
		uniq = uniq[:MaxConflictPaths]
	}
	c.Paths = uniq
	return c
}

// AsConflict returns the *Conflict in err's chain, or nil.
func AsConflict(err error) *Conflict {
	var c *Conflict
	if errors.As(err, &c) {
		return c
	}
	return nil
}

// Build makes the result of in.Strategy in g (objects only: no ref
// moves). A strategy that does not apply is a *Conflict error.
func Build(ctx context.Context, g git.Repo, in Input) (Result, error) {
	for _, o := range []string{in.Tip, in.Base, in.Commit} {
		if !git.IsOID(o) {
			return Result{}, fmt.Errorf("submit: %q is not an object id", o)
		}
	}
	if in.Strategy != branches.FFOnly {
		// A patch already on the branch (merged by a push whose merge scan
		// has not run yet) would only make an empty commit.
		on, err := g.IsAncestor(ctx, in.Commit, in.Tip)
		if err != nil {
			return Result{}, err
		}
		if on {
			return Result{}, conflict("already on the branch", nil)
		}
	}
	switch in.Strategy {
	case branches.FFOnly:
		if in.Tip == in.Commit {
			return Result{}, conflict("already on the branch", nil)
		}
		ok, err := g.IsAncestor(ctx, in.Tip, in.Commit)
		if err != nil {
			return Result{}, err
		}
		if !ok {
			return Result{}, conflict("needs rebase: the branch moved on since the patch's base", nil)
		}
		return Result{Commit: in.Commit}, nil
	case branches.Merge, branches.Squash:
		tree, err := mergeTree(ctx, g, in.Tip, in.Commit)
		if err != nil {
			return Result{}, err
		}
		var parents []string
		var msg string
		author := in.Committer
		if in.Strategy == branches.Merge {
			parents = []string{in.Tip, in.Commit}
			msg = fmt.Sprintf("Merge patch %s into %s\n\n%s", shortID(in.PatchID), in.Branch, subjectLine(in.Title))
			if d := strings.TrimSpace(in.Description); d != "" {
				msg += "\n\n" + d
			}
		} else {
			parents = []string{in.Tip}
			msg = subjectLine(in.Title)
			if d := strings.TrimSpace(in.Description); d != "" {
				msg += "\n\n" + d
			}
			if author, err = authorOf(ctx, g, in.Commit); err != nil {
				return Result{}, err
			}
		}
		msg = AddTrailers(msg, append([]string{"Patch: " + in.PatchID}, in.Footers...))
		c, err := commitTree(ctx, g, tree, parents, msg, author, in.Committer)
		if err != nil {
			return Result{}, err
		}
		return Result{Commit: c, Written: 1}, nil
	case branches.Rebase:
		return rebase(ctx, g, in)
	}
	return Result{}, fmt.Errorf("submit: unknown strategy %q", in.Strategy)
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// mergeTree is git merge-tree --write-tree of a and b: the merged tree, or
// a *Conflict naming the paths.
func mergeTree(ctx context.Context, g git.Repo, a, b string) (string, error) {
	out, err := g.Run(ctx, nil, "merge-tree", "--write-tree", "-z", "--name-only", "--no-messages", a, b)
	code := git.ExitCode(err)
	if err != nil && code != 1 {
		var ge *git.Error
		if errors.As(err, &ge) && strings.Contains(ge.Stderr, "unrelated histories") {
			return "", conflict("no common history with the branch", nil)
		}
		return "", err
	}
	fields := strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	if len(fields) == 0 || !git.IsOID(fields[0]) {
		return "", fmt.Errorf("merge-tree: unexpected output %q", clip(string(out)))
	}
	if code == 1 {
		return "", conflict("conflicts", fields[1:])
	}
	return fields[0], nil
}

// commitTree writes a commit of tree with parents and msg.
func commitTree(ctx context.Context, g git.Repo, tree string, parents []string, msg string, author, committer Ident) (string, error) {
	args := []string{"commit-tree", tree}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	args = append(args, "-F", "-")
	out, err := g.With(append(author.env("AUTHOR"), committer.env("COMMITTER")...)...).Run(ctx, strings.NewReader(msg), args...)
	if err != nil {
		return "", fmt.Errorf("commit-tree: %w", err)
	}
	c := strings.TrimSpace(string(out))
	if !git.IsOID(c) {
		return "", fmt.Errorf("commit-tree: unexpected output %q", clip(c))
	}
	return c, nil
}

// replayed is one commit of a revision, as rebase reads it.
type replayed struct {
	oid, tree, parents string
	author             Ident
	msg                string
}

const logFmt = "--format=%H%x00%T%x00%P%x00%an%x00%ae%x00%at %ai%x00%B"

// commitsOf reads the commits of revs (git log --stdin's syntax), oldest
// first.
func commitsOf(ctx context.Context, g git.Repo, revs ...string) ([]replayed, error) {
	out, err := g.Run(ctx, strings.NewReader(strings.Join(revs, "\n")+"\n"), "log", "-z", "--reverse", "--topo-order", logFmt, "--stdin")
	if err != nil {
		return nil, err
	}
	var cs []replayed
	fs := strings.Split(string(out), "\x00")
	for len(fs) >= 7 {
		f := fs[:7]
		fs = fs[7:]
		if !git.IsOID(f[0]) {
			return nil, fmt.Errorf("log: unexpected record %q", clip(f[0]))
		}
		c := replayed{oid: f[0], tree: f[1], parents: f[2], msg: f[6]}
		c.author = Ident{Name: f[3], Email: f[4], When: parseWhen(f[5])}
		cs = append(cs, c)
	}
	return cs, nil
}

// parseWhen reads "UNIX YYYY-MM-DD HH:MM:SS ±ZZZZ" (%at %ai) into a time
// in the author's zone.
func parseWhen(s string) time.Time {
	f := strings.Fields(s)
	if len(f) != 4 {
		return time.Time{}
	}
	sec, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return time.Time{}
	}
	z, err := time.Parse("-0700", f[3])
	if err != nil {
		return time.Unix(sec, 0).UTC()
	}
	return time.Unix(sec, 0).In(z.Location())
}

func authorOf(ctx context.Context, g git.Repo, oid string) (Ident, error) {
	cs, err := commitsOf(ctx, g, oid, "^"+oid+"^@")
	if err != nil {
		return Ident{}, err
	}
	if len(cs) != 1 {
		return Ident{}, fmt.Errorf("read author of %s: %d commits", oid, len(cs))
	}
	return cs[0].author, nil
}

// rebase replays base..commit onto the tip (see the package comment).
func rebase(ctx context.Context, g git.Repo, in Input) (Result, error) {
	cs, err := commitsOf(ctx, g, in.Commit, "^"+in.Base)
	if err != nil {
		return Result{}, err
	}
	if len(cs) == 0 {
		return Result{}, conflict("nothing to rebase: the revision has no commits over its base", nil)
	}
	for _, c := range cs {
		if strings.Contains(c.parents, " ") || c.parents == "" {
			return Result{}, conflict("rebase replays no merge commits (use merge or squash)", nil)
		}
	}
	tmp, err := os.MkdirTemp("", "collab-submit-")
	if err != nil {
		return Result{}, fmt.Errorf("rebase: %w", err)
	}
	defer os.RemoveAll(tmp)
	ix := g.With("GIT_INDEX_FILE=" + filepath.Join(tmp, "index"))
	onto := in.Tip
	ontoTree, err := treeOf(ctx, g, in.Tip)
	if err != nil {
		return Result{}, err
	}
	parentTree, err := treeOf(ctx, g, cs[0].parents)
	if err != nil {
		return Result{}, err
	}
	indexAt := "" // the tree the index holds
	for i, c := range cs {
		tree := c.tree
		if ontoTree != parentTree {
			// The commit's change must be applied to what it lands on.
			if indexAt != ontoTree {
				if _, err := ix.Run(ctx, nil, "read-tree", ontoTree); err != nil {
					return Result{}, fmt.Errorf("rebase: %w", err)
				}
			}
			if tree, err = apply(ctx, g, ix, c); err != nil {
				return Result{}, err
			}
			indexAt = tree
		}
		trailers := in.Footers
		if i == len(cs)-1 {
			trailers = append([]string{"Patch: " + in.PatchID}, in.Footers...)
		}
		nc, err := commitTree(ctx, g, tree, []string{onto}, AddTrailers(c.msg, trailers), c.author, in.Committer)
		if err != nil {
			return Result{}, err
		}
		onto, ontoTree, parentTree = nc, tree, c.tree
	}
	return Result{Commit: onto, Written: len(cs)}, nil
}

// apply applies c's change (its parent's diff to it) to the index of ix
// with a three-way fallback, and writes the tree.
func apply(ctx context.Context, g, ix git.Repo, c replayed) (string, error) {
	d, err := g.Run(ctx, nil, "diff", "--binary", "--full-index", "--no-renames", c.parents, c.oid)
	if err != nil {
		return "", fmt.Errorf("rebase: diff of %s: %w", c.oid, err)
	}
	if len(bytes.TrimSpace(d)) > 0 {
		if _, err := ix.Run(ctx, bytes.NewReader(d), "apply", "--cached", "--3way", "--allow-empty"); err != nil {
			var ge *git.Error
			if !errors.As(err, &ge) || ge.Code != 1 {
				return "", fmt.Errorf("rebase: apply %s: %w", c.oid, err)
			}
			paths, lerr := unmerged(ctx, ix)
			if lerr != nil {
				return "", lerr
			}
			if len(paths) == 0 {
				paths = failedPaths(ge.Stderr)
			}
			return "", conflict("conflicts replaying "+c.oid[:12], paths)
		}
	}
	out, err := ix.Run(ctx, nil, "write-tree")
	if err != nil {
		return "", fmt.Errorf("rebase: write-tree: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

func unmerged(ctx context.Context, ix git.Repo) ([]string, error) {
	out, err := ix.Run(ctx, nil, "ls-files", "-u", "-z")
	if err != nil {
		return nil, fmt.Errorf("rebase: ls-files: %w", err)
	}
	var paths []string
	for _, e := range strings.Split(string(out), "\x00") {
		if _, p, ok := strings.Cut(e, "\t"); ok {
			paths = append(paths, p)
		}
	}
	return paths, nil
}

// failedPaths reads the paths git apply names in its errors. (The regexp
// is compiled here, on this rare path, not at start-up.)
func failedPaths(stderr string) []string {
	failedPath := regexp.MustCompile(`(?m)^error: (?:patch failed: (.+):\d+|(.+): (?:does not exist in index|already exists in index|does not match index))$`)
	var out []string
	for _, m := range failedPath.FindAllStringSubmatch(stderr, -1) {
		if m[1] != "" {
			out = append(out, m[1])
		} else {
			out = append(out, m[2])
		}
	}
	return out
}

func treeOf(ctx context.Context, g git.Repo, commit string) (string, error) {
	if !git.IsOID(commit) {
		return "", fmt.Errorf("tree of %q: not an object id", commit)
	}
	out, err := g.Run(ctx, nil, "rev-parse", "--verify", "--end-of-options", commit+"^{tree}")
	if err != nil {
		return "", fmt.Errorf("tree of %s: %w", commit, err)
	}
	return strings.TrimSpace(string(out)), nil
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// Scratch returns g writing new objects into a temporary object directory
// (reading g's own as an alternate), and a cleanup that deletes it: a
// build made only to see whether a strategy applies leaves nothing in the
// repository.
func Scratch(g git.Repo) (git.Repo, func(), error) {
	dir, err := os.MkdirTemp("", "collab-scratch-")
	if err != nil {
		return git.Repo{}, nil, fmt.Errorf("scratch object store: %w", err)
	}
	objects := filepath.Join(g.Dir, "objects")
	if abs, err := filepath.Abs(objects); err == nil {
		objects = abs
	}
	return g.With("GIT_OBJECT_DIRECTORY="+dir, "GIT_ALTERNATE_OBJECT_DIRECTORIES="+objects), func() { os.RemoveAll(dir) }, nil
}
