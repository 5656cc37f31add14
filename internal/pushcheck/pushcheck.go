// Package pushcheck decides, before any ref moves, whether a push may go
// on: its push limits, its push options (and Gerrit's refs/for suffix), no
// client write under refs/collab/, no refs/for delete, and the branch rules
// of protected branches. It reads no database: the caller hands it the
// facts (Push), from serve's hand-off or from the database.
package pushcheck

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/collab-forge/collab/internal/collabref"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/pushlimit"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/text"
)

// Namespaces of refs the hooks treat specially.
const (
	ForPrefix   = "refs/for/"
	HeadsPrefix = "refs/heads/"
)

// Update is one ref update as git hands it to pre- and post-receive.
type Update struct {
	Old, New, Ref string
}

// ReadUpdates reads "OLD NEW REF" lines.
func ReadUpdates(r io.Reader) ([]Update, error) {
	var us []Update
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 || !git.IsOID(f[0]) || !git.IsOID(f[1]) {
			return nil, fmt.Errorf("bad ref update line %q", text.Clip(sc.Text()))
		}
		us = append(us, Update{Old: f[0], New: f[1], Ref: f[2]})
	}
	return us, sc.Err()
}

// FormatUpdates returns us as the lines ReadUpdates reads.
func FormatUpdates(us []Update) string {
	var b strings.Builder
	for _, u := range us {
		fmt.Fprintf(&b, "%s %s %s\n", u.Old, u.New, u.Ref)
	}
	return b.String()
}

// MovesBranches reports whether any update creates or moves a branch, the
// only updates the merge scan looks at.
func MovesBranches(us []Update) bool {
	for _, u := range us {
		if strings.HasPrefix(u.Ref, HeadsPrefix) && u.New != git.ZeroOID {
			return true
		}
	}
	return false
}

// TouchesBranches reports whether any update creates, moves or deletes a
// branch: such a push must be checked against the branch rules.
func TouchesBranches(us []Update) bool {
	for _, u := range us {
		if strings.HasPrefix(u.Ref, HeadsPrefix) {
			return true
		}
	}
	return false
}

// HasFor reports whether any update is to a refs/for ref: proc-receive
// will run for the push.
func HasFor(us []Update) bool { return countFor(us) > 0 }

// countFor is the number of refs/for refs among us.
func countFor(us []Update) int {
	n := 0
	for _, u := range us {
		if strings.HasPrefix(u.Ref, ForPrefix) {
			n++
		}
	}
	return n
}

// BaseOf returns the target branch of a refs/for/BASE ref; BASE may also
// be spelled refs/heads/BASE, and be followed by Gerrit's %options
// suffix, as Gerrit allows. The branch becomes the patch's base, kept in
// the record and shown on pages: git takes any bytes in a ref name, and
// PostgreSQL refused one that was not UTF-8 deep in the write (the push
// failed as an internal error), so such a name is refused here.
func BaseOf(ref string) (string, error) {
	bare, _ := SplitFor(ref)
	b := strings.TrimPrefix(strings.TrimPrefix(bare, ForPrefix), HeadsPrefix)
	if b == "" || strings.HasPrefix(b, "-") || !git.IsFullRef(HeadsPrefix+b) {
		return "", fault.New(fault.Usage, "bad target %s: push to refs/for/BRANCH", text.Clip(ref))
	}
	if err := text.CheckLine("target branch", b, maxBranch); err != nil {
		return "", fault.New(fault.Usage, "bad target %s: %s", text.Clip(ref), fault.Public(err))
	}
	return b, nil
}

// maxBranch bounds a target branch's name: past any real branch's, short
// enough to show on a page.
const maxBranch = 1024

// RepoDirOf finds the repository a hook ran in (gitDir, its GIT_DIR, ""
// as unset; else wd, its working directory, as git runs hooks of a bare
// repository there) under reposDir, the root's repos directory, and
// returns its key, with symlinks resolved on both sides before comparing.
func RepoDirOf(reposDir, wd, gitDir string) (key, dir string, err error) {
	d := gitDir
	if d == "" {
		d = "."
	}
	if !filepath.IsAbs(d) {
		d = filepath.Join(wd, d)
	}
	real, err := filepath.EvalSymlinks(d)
	if err != nil {
		return "", "", fmt.Errorf("find repository: %w", err)
	}
	repos, err := filepath.EvalSymlinks(reposDir)
	if err != nil {
		return "", "", fmt.Errorf("find repositories dir: %w", err)
	}
	if !reponame.Inside(repos, real) {
		return "", "", fault.New(fault.NotFound, "this repository is not under the forge root %s", filepath.Dir(reposDir))
	}
	rel, err := filepath.Rel(repos, real)
	if err != nil {
		return "", "", fmt.Errorf("find repository: %w", err)
	}
	rel = filepath.ToSlash(rel)
	k, err := reponame.Key(rel)
	if err != nil || k != rel {
		return "", "", fault.New(fault.NotFound, "repository %s is not a forge repository", rel)
	}
	return k, real, nil
}

// Push is one push as pre-receive decides on it: what git hands the hook
// and the facts the caller gathered.
type Push struct {
	Principal string
	Repo      string
	Updates   []Update
	// Options are the raw push options (EnvOptions).
	Options []string
	Limits  pushlimit.Limits
	// Rules returns the repository's protected branches, by branch name;
	// it is asked only when the push touches a branch and passed every
	// other check.
	Rules func(context.Context) (map[string]Rule, error)
	// Admin reports whether the pusher is an admin of the repository; it
	// is asked only when a rule applies to an update.
	Admin func(context.Context) (bool, error)
	Git   git.Repo
}

// Check decides on p: nil, or one refusal (a fault.Error whose message is
// one line for the pusher) that rejects every ref of the push. The message
// and trailers of a refs/for tip are checked by proc-receive, which reads
// that commit anyway.
func Check(ctx context.Context, p Push) error {
	if len(p.Updates) == 0 {
		return nil
	}
	if err := p.Limits.Check(pushlimit.Push{Refs: len(p.Updates), ForRefs: countFor(p.Updates), Options: p.Options}); err != nil {
		return err
	}
	if _, err := ParseOptions(p.Options); err != nil {
		return err
	}
	for _, u := range p.Updates {
		switch {
		case strings.HasPrefix(u.Ref, collabref.Prefix):
			verb := "update"
			switch {
			case u.New == git.ZeroOID:
				verb = "delete"
			case u.Old == git.ZeroOID:
				verb = "create"
			}
			return fault.New(fault.Denied, "cannot %s %s: refs/collab/ is the forge's own record and only the forge writes it", verb, u.Ref)
		case strings.HasPrefix(u.Ref, ForPrefix):
			if u.New == git.ZeroOID {
				return fault.New(fault.Usage, "cannot delete %s: refs/for/ refs do not exist; close a patch with 'patch close'", u.Ref)
			}
			if _, err := BaseOf(u.Ref); err != nil {
				return err
			}
			if _, err := RefOptions(p.Options, u.Ref); err != nil {
				return err
			}
		}
	}
	if err := checkRepoRefs(ctx, p); err != nil {
		return err
	}
	if err := checkMessages(ctx, p); err != nil {
		return err
	}
	return enforceRules(ctx, p)
}

// checkRepoRefs refuses a push that creates branches or tags past the
// repository's limit; one that only moves or deletes them always goes on
// (so a repository over a lowered limit can be brought under it).
func checkRepoRefs(ctx context.Context, p Push) error {
	creates := 0
	for _, u := range p.Updates {
		if u.Old == git.ZeroOID && u.New != git.ZeroOID && (strings.HasPrefix(u.Ref, HeadsPrefix) || strings.HasPrefix(u.Ref, "refs/tags/")) {
			creates++
		}
	}
	if creates == 0 || p.Limits.RepoRefs == math.MaxInt64 {
		return nil
	}
	have, err := p.Git.CountRefs(ctx, HeadsPrefix, "refs/tags/")
	if err != nil {
		return fmt.Errorf("count refs: %w", err)
	}
	if int64(have+creates) > p.Limits.RepoRefs {
		return fault.New(fault.TooLarge, "push refused: %s would hold %d branches and tags, at most %d (setting %s); delete some first",
			reponame.Display(p.Repo), have+creates, p.Limits.RepoRefs, pushlimit.SettingRepoRefs)
	}
	return nil
}

// checkMessages refuses a push that brings a commit, new to the
// repository, whose message is over the limit that a refs/for tip's is
// held to: on a branch it would be shown on every page that lists it.
// Only commits whose object is over the limit are read (git.NewCommitsOver:
// loose objects without git, a pack by one listing), so an ordinary push
// of many commits reads none.
func checkMessages(ctx context.Context, p Push) error {
	if p.Limits.MessageBytes == math.MaxInt64 {
		return nil
	}
	var tips []string
	for _, u := range p.Updates {
		if u.New != git.ZeroOID {
			tips = append(tips, u.New)
		}
	}
	big, err := p.Git.NewCommitsOver(ctx, p.Limits.MessageBytes, tips)
	if err != nil {
		return fmt.Errorf("read the pushed commits: %w", err)
	}
	for _, oid := range big {
		n, err := p.Git.MessageBytes(ctx, oid)
		if err != nil {
			return fmt.Errorf("read the pushed commits: %w", err)
		}
		if n > p.Limits.MessageBytes {
			return fault.New(fault.Usage, "commit %s: message of %d bytes is too long (at most %d, setting %s); shorten it with git commit --amend",
				oid[:12], n, p.Limits.MessageBytes, pushlimit.SettingMessageBytes)
		}
	}
	return nil
}

// Log writes pre-receive's journal entries for a push decided in err, one
// per ref, as every pre-receive does whichever binary ran it.
func Log(log *slog.Logger, principal, repo string, updates []Update, err error, start time.Time) {
	log = log.With("PRINCIPAL", principal, "REPO", repo)
	outcome := "ok"
	if err != nil {
		outcome = "refused"
		if fault.KindOf(err) == fault.Internal {
			outcome = "error"
		}
		log = log.With("error", err.Error())
	}
	for _, u := range updates {
		log.Info("pre-receive", "REF", u.Ref, "OLD_OID", u.Old, "NEW_OID", u.New, "OUTCOME", outcome, "DURATION_MS", time.Since(start).Milliseconds())
	}
}
