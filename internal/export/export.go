// Package export writes the forge's record of a repository (issues with
// their comments and lease tenures, patches with their revisions' metadata
// and reviews) into that repository as plain git objects under
// refs/collab/, signed with the forge key, so that a clone can carry the
// conversation.
//
// Every object is built and hashed in memory; git is asked only for what
// it must do itself: list the refs (for-each-ref), say which objects it
// already has (cat-file --batch-check), store new objects (one pack
// through index-pack, or unpack-objects for a handful, both --strict) and
// move the refs (one update-ref --stdin transaction, each ref checked
// against the value the export started from). That is at most five
// processes per repository however many records change.
//
// The record goes back the other way too: Verify checks an export's
// signatures, Read decodes one (both asking one cat-file for a commit
// generation or a tree level of every record at a time), and Importer
// writes what Read found into a forge (collab-hook import).
package export

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/collab-forge/collab/internal/collabref"
	"github.com/collab-forge/collab/internal/flock"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/store"
)

// Exporter writes records from DB, signing with Key.
type Exporter struct {
	DB  *store.DB
	Key ed25519.PrivateKey
	Log *slog.Logger // nil: discard
}

// Result says what one export of a repository did.
type Result struct {
	Repo    string   `json:"repo"`
	Records int      `json:"records"` // issues and patches exported
	Skipped int      `json:"skipped"` // rows whose ids cannot name a ref
	Updated []string `json:"updated"` // refs that moved, one new commit each
	Objects int      `json:"objects"` // objects written
}

// unpackLimit mirrors git's transfer.unpackLimit: fewer objects are stored
// loose, more as one pack.
const unpackLimit = 100

// packRefsLimit is how many moved refs make an export pack the refs.
const packRefsLimit = 100

// Export brings the refs/collab/ records of repo (a repository key) in the
// bare repository gitDir up to date with the database. A record whose tree
// is unchanged keeps its ref; a changed one gets one new signed commit on
// top of the old. Exporting again with no change writes nothing. now only
// decides whether an unswept lease tenure has run out.
func (x *Exporter) Export(ctx context.Context, repo, gitDir string, now time.Time) (Result, error) {
	start := time.Now()
	res := Result{Repo: repo, Updated: []string{}}
	g := gitCmd{dir: gitDir}
	if err := g.checkFormat(ctx); err != nil {
		return res, err
	}
	unlock, err := lock(ctx, filepath.Join(gitDir, "collab-export.lock"))
	if err != nil {
		return res, err
	}
	defer unlock()
	recs, skipped, err := load(ctx, x.DB, repo, now)
	if err != nil {
		return res, err
	}
	loaded := time.Now()
	res.Records, res.Skipped = len(recs), skipped
	cur, err := g.records(ctx)
	if err != nil {
		return res, err
	}

	var fresh, maybe []object // objects of new records; of changed ones
	seen := map[string]bool{}
	var updates bytes.Buffer
	for _, r := range recs {
		tree, objs := buildTree(r.files)
		old, had := cur[r.ref]
		if had && old.tree == tree {
			continue
		}
		payload := commitPayload(tree, old.commit, r.when(), r.message())
		sig, err := sshSign(x.Key, payload)
		if err != nil {
			return res, err
		}
		c := newObject(typeCommit, withSignature(payload, sig))
		objs = append(objs, c)
		for _, o := range objs {
			if seen[o.oid] {
				continue
			}
			seen[o.oid] = true
			if had {
				maybe = append(maybe, o)
			} else {
				fresh = append(fresh, o)
			}
		}
		oldOID := old.commit
		if !had {
			oldOID = git.ZeroOID
		}
		fmt.Fprintf(&updates, "update %s %s %s\n", r.ref, c.oid, oldOID)
		res.Updated = append(res.Updated, r.ref)
	}
	if len(res.Updated) == 0 {
		x.log().InfoContext(ctx, "export", "REPO", repo, "OUTCOME", "unchanged",
			"records", res.Records, "DURATION_MS", time.Since(start).Milliseconds())
		return res, nil
	}
	built := time.Now()
	if len(maybe) > 0 {
		missing, err := g.missing(ctx, maybe)
		if err != nil {
			return res, err
		}
		fresh = append(fresh, missing...)
	}
	if err := g.store(ctx, fresh); err != nil {
		return res, err
	}
	res.Objects = len(fresh)
	stored := time.Now()
	if _, err := g.run(ctx, &updates, "update-ref", "-m", "collab export", "--stdin"); err != nil {
		return res, fmt.Errorf("move export refs: %w", err)
	}
	if len(res.Updated) >= packRefsLimit {
		// A first export of a big forge leaves one loose file per record
		// (11 000 refs: 44 MB of 4 KB blocks); nothing else packs them,
		// since git gc --auto counts only objects.
		if _, err := g.run(ctx, nil, "pack-refs", "--all"); err != nil {
			return res, err
		}
	}
	x.log().InfoContext(ctx, "export", "REPO", repo, "OUTCOME", "updated",
		"records", res.Records, "updated", len(res.Updated), "objects", res.Objects,
		"DURATION_MS", time.Since(start).Milliseconds(), "load_ms", loaded.Sub(start).Milliseconds(),
		"build_ms", built.Sub(loaded).Milliseconds(), "store_ms", stored.Sub(built).Milliseconds(),
		"refs_ms", time.Since(stored).Milliseconds())
	return res, nil
}

// lock serialises exports of one repository (the nightly timer and an
// operator's run), so the second waits and then finds nothing new instead
// of failing on update-ref's old-value check. Closing the file unlocks.
func lock(ctx context.Context, path string) (func(), error) {
	return flock.Lock(ctx, path, 0o640)
}

func (x *Exporter) log() *slog.Logger {
	if x.Log == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return x.Log
}

// gitCmd runs git on one bare repository, in a clean environment: nothing
// a hook's environment holds (GIT_DIR, a quarantine) may point it elsewhere.
type gitCmd struct{ dir string }

func (g gitCmd) cmd(ctx context.Context, args ...string) *exec.Cmd {
	return git.Open(g.dir).Command(ctx, args...)
}

// run runs git with stdin and returns its stdout; a failure carries git's
// stderr.
func (g gitCmd) run(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	c := g.cmd(ctx, args...)
	c.Stdin = stdin
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(errb.String()))
	}
	return out.Bytes(), nil
}

func (g gitCmd) checkFormat(ctx context.Context) error {
	out, err := g.run(ctx, nil, "rev-parse", "--show-object-format")
	if err != nil {
		return err
	}
	if f := strings.TrimSpace(string(out)); f != "sha1" {
		return fmt.Errorf("repository %s uses %s objects; export supports sha1", g.dir, f)
	}
	return nil
}

type tip struct{ commit, tree string }

// records returns the current record refs (issues and patch records, not
// the revision refs) with their commits and trees.
func (g gitCmd) records(ctx context.Context) (map[string]tip, error) {
	out, err := g.run(ctx, nil, "for-each-ref", "--format=%(objectname) %(tree) %(refname)",
		"--", collabref.Issues, collabref.Patches)
	if err != nil {
		return nil, err
	}
	m := map[string]tip{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.SplitN(l, " ", 3)
		if len(f) != 3 || !isRecordRef(f[2]) {
			continue
		}
		m[f[2]] = tip{commit: f[0], tree: f[1]}
	}
	return m, nil
}

func isRecordRef(ref string) bool {
	r, _ := collabref.Parse(ref)
	return r.Kind == collabref.Issue || r.Kind == collabref.Record
}

// missing returns the objects of objs the repository does not have yet.
func (g gitCmd) missing(ctx context.Context, objs []object) ([]object, error) {
	c := g.cmd(ctx, "cat-file", "--batch-check=%(objectname)")
	in, err := c.StdinPipe()
	if err != nil {
		return nil, err
	}
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Start(); err != nil {
		return nil, fmt.Errorf("git cat-file: %w", err)
	}
	w := bufio.NewWriter(in)
	for _, o := range objs {
		w.WriteString(o.oid + "\n")
	}
	werr := errors.Join(w.Flush(), in.Close())
	if err := c.Wait(); err != nil {
		return nil, fmt.Errorf("git cat-file: %w: %s", err, strings.TrimSpace(errb.String()))
	}
	if werr != nil {
		return nil, fmt.Errorf("git cat-file: %w", werr)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(objs) {
		return nil, fmt.Errorf("git cat-file: %d answers for %d objects", len(lines), len(objs))
	}
	var miss []object
	for i, l := range lines {
		if strings.HasSuffix(l, " missing") {
			miss = append(miss, objs[i])
		}
	}
	return miss, nil
}

// store writes objs into the repository, checked by git as a fetch would be.
func (g gitCmd) store(ctx context.Context, objs []object) error {
	if len(objs) == 0 {
		return nil
	}
	args := []string{"index-pack", "--stdin", "--strict"}
	if len(objs) < unpackLimit {
		args = []string{"unpack-objects", "-q", "--strict"}
	}
	c := g.cmd(ctx, args...)
	in, err := c.StdinPipe()
	if err != nil {
		return err
	}
	var errb bytes.Buffer
	c.Stderr = &errb
	if err := c.Start(); err != nil {
		return fmt.Errorf("git %s: %w", args[0], err)
	}
	w := bufio.NewWriterSize(in, 1<<16)
	werr := writePack(w, objs)
	werr = errors.Join(werr, w.Flush(), in.Close())
	if err := c.Wait(); err != nil {
		return fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(errb.String()))
	}
	if werr != nil {
		return fmt.Errorf("git %s: %w", args[0], werr)
	}
	return nil
}
