// Package diff produces the unified diffs of code review from stock git: a
// revision's diff (BASE..COMMIT) and the interdiff between two revisions.
//
// Output is streamed from git and cut at Limits (bytes and files) with a
// note saying so, so that a revision touching thousands of files or a huge
// blob costs a bounded amount of memory here. Only full object ids ever
// reach git's command line, always before "--".
package diff

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	gitrepo "github.com/collab-forge/collab/internal/git"
)

// Limits bound what a diff returns.
type Limits struct {
	// MaxBytes bounds the text of the diff; the cut falls on a line end.
	MaxBytes int
	// MaxFiles bounds the number of files shown.
	MaxFiles int
	// BigFile is the blob size above which git shows a file as binary
	// instead of reading it line by line (core.bigFileThreshold).
	BigFile int64
}

// DefaultLimits are what the SSH verbs and the web pages use.
func DefaultLimits() Limits {
	return Limits{MaxBytes: 2 << 20, MaxFiles: 1000, BigFile: 4 << 20}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxBytes <= 0 {
		l.MaxBytes = d.MaxBytes
	}
	if l.MaxFiles <= 0 {
		l.MaxFiles = d.MaxFiles
	}
	if l.BigFile <= 0 {
		l.BigFile = d.BigFile
	}
	return l
}

// Range is one revision's diff: Base..Commit, both full object ids.
type Range struct {
	Base   string `json:"base"`
	Commit string `json:"commit"`
}

// Result is a diff as shown to a reader.
type Result struct {
	// Text is a plain unified diff (git's format), cut at the limits.
	Text string `json:"diff"`
	// Files is how many files Text shows (the last possibly cut short).
	Files int `json:"files"`
	// TotalFiles is how many files the whole diff touches.
	TotalFiles int `json:"total_files"`
	// Truncated is set when Text is not the whole diff.
	Truncated bool `json:"truncated"`
	// Conflict is set when an interdiff's replay conflicted and Text is
	// the diff of the two trees instead.
	Conflict bool `json:"conflict"`
	// Notes say, one line each, why the diff is not the plain whole one.
	Notes []string `json:"notes"`
}

// WriteText writes the diff for a terminal: notes as "# " lines before the
// diff (git apply skips text before the first "diff --git").
func (r Result) WriteText(w io.Writer) error {
	for _, n := range r.Notes {
		if _, err := fmt.Fprintf(w, "# %s\n", n); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, r.Text)
	return err
}

func checkOID(oids ...string) error {
	for _, o := range oids {
		if !gitrepo.IsOID(o) {
			return fmt.Errorf("not a full object id: %q", o)
		}
	}
	return nil
}

// Revision returns the diff of one revision, base..commit.
func Revision(ctx context.Context, repoDir string, r Range, lim Limits) (Result, error) {
	if err := checkOID(r.Base, r.Commit); err != nil {
		return Result{}, err
	}
	g := git{gitrepo.Open(repoDir)}
	res, err := g.diff(ctx, r.Base, r.Commit, lim.withDefaults())
	if err != nil {
		return Result{}, err
	}
	if res.Truncated {
		res.Notes = append(res.Notes, fmt.Sprintf("the whole diff: git diff %s %s", r.Base, r.Commit))
	}
	return res, nil
}

// Interdiff returns what the author changed from revision from to
// revision to, as the contract defines it: from's changes (its
// Base..Commit) replayed onto to's Base in a scratch index, and the
// resulting tree diffed against to's Commit. So a base that moved between
// the revisions does not show. When the replay conflicts, Result.Conflict
// is set, a note names the conflicting paths, and the diff is that of the
// two revisions' trees.
func Interdiff(ctx context.Context, repoDir string, from, to Range, lim Limits) (Result, error) {
	if err := checkOID(from.Base, from.Commit, to.Base, to.Commit); err != nil {
		return Result{}, err
	}
	lim = lim.withDefaults()
	scratch, err := os.MkdirTemp("", "collab-interdiff-")
	if err != nil {
		return Result{}, fmt.Errorf("interdiff scratch dir: %w", err)
	}
	defer os.RemoveAll(scratch)
	objects := scratch + "/objects"
	if err := os.Mkdir(objects, 0o700); err != nil {
		return Result{}, fmt.Errorf("interdiff scratch dir: %w", err)
	}
	repoObjects, err := objectsDir(ctx, repoDir)
	if err != nil {
		return Result{}, err
	}
	// The replay writes blobs and trees; keep them out of the repository
	// (it may be read-only to this process, and they are throwaway).
	g := git{gitrepo.Open(repoDir).With(
		"GIT_INDEX_FILE="+scratch+"/index",
		"GIT_OBJECT_DIRECTORY="+objects,
		"GIT_ALTERNATE_OBJECT_DIRECTORIES="+quoteAlternate(repoObjects),
	)}
	tree, conflicts, err := g.replay(ctx, from, to.Base, lim.BigFile)
	if err != nil {
		return Result{}, err
	}
	if conflicts != nil {
		res, err := g.diff(ctx, from.Commit, to.Commit, lim)
		if err != nil {
			return Result{}, err
		}
		res.Conflict = true
		note := fmt.Sprintf("interdiff conflict: replaying %s..%s onto %s did not apply cleanly",
			short(from.Base), short(from.Commit), short(to.Base))
		if len(conflicts) > 0 {
			note = fmt.Sprintf("interdiff conflict: replaying %s..%s onto %s conflicted in %s",
				short(from.Base), short(from.Commit), short(to.Base), strings.Join(clip(conflicts, 10), ", "))
		}
		res.Notes = append([]string{note + "; showing the diff of the two trees instead"}, res.Notes...)
		if res.Truncated {
			res.Notes = append(res.Notes, fmt.Sprintf("the whole diff: git diff %s %s", from.Commit, to.Commit))
		}
		return res, nil
	}
	res, err := g.diff(ctx, tree, to.Commit, lim)
	if err != nil {
		return Result{}, err
	}
	if res.Truncated {
		res.Notes = append(res.Notes, fmt.Sprintf("the whole interdiff: git range-diff %s..%s %s..%s", from.Base, from.Commit, to.Base, to.Commit))
	}
	return res, nil
}

func short(oid string) string { return oid[:12] }

// quoteAlternate quotes a path for GIT_ALTERNATE_OBJECT_DIRECTORIES, a
// colon-separated list in which git unquotes C-style "…" entries.
func quoteAlternate(p string) string {
	if !strings.ContainsAny(p, ":\"\\") {
		return p
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(p) + `"`
}

func clip(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(s[:n:n], fmt.Sprintf("and %d more", len(s)-n))
}

// git runs git on one repository (internal/git decides its environment)
// and keeps at most 64 KiB of what it says on stderr.
type git struct{ r gitrepo.Repo }

func (g git) cmd(ctx context.Context, args ...string) *exec.Cmd { return g.r.Command(ctx, args...) }

func (g git) run(ctx context.Context, stdin io.Reader, args ...string) (string, error) {
	cmd := g.cmd(ctx, args...)
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &limitedBuffer{max: 64 << 10, b: &errb}
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// objectsDir is the repository's object directory: DIR/objects as git
// lays it out, else whatever git says (a relocated one).
func objectsDir(ctx context.Context, dir string) (string, error) {
	abs, err := filepath.Abs(filepath.Join(dir, "objects"))
	if err != nil {
		return "", err
	}
	if st, err := os.Stat(filepath.Join(abs, "pack")); err == nil && st.IsDir() {
		return abs, nil
	}
	out, err := git{gitrepo.Open(dir)}.run(ctx, nil, "rev-parse", "--path-format=absolute", "--git-path", "objects")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// diffArgs are the options of every diff shown to a reader: git's own
// format whatever the server's configuration says, no external drivers.
func diffArgs(lim Limits) []string {
	return []string{
		"-c", "core.bigFileThreshold=" + fmt.Sprint(lim.BigFile),
		"-c", "diff.noprefix=false", "-c", "diff.mnemonicPrefix=false",
		"diff", "--no-color", "--no-ext-diff", "--no-textconv", "--find-renames",
		"--src-prefix=a/", "--dst-prefix=b/",
	}
}

// unmergedPaths reads ls-files -z --unmerged: "MODE OID STAGE\tPATH\0".
func unmergedPaths(out string) []string {
	var paths []string
	seen := map[string]bool{}
	for _, rec := range strings.Split(out, "\x00") {
		_, p, ok := strings.Cut(rec, "\t")
		if ok && !seen[p] {
			seen[p] = true
			paths = append(paths, p)
		}
	}
	return paths
}

// diff streams git diff a b, keeping at most lim of it.
func (g git) diff(ctx context.Context, a, b string, lim Limits) (Result, error) {
	big, err := g.bigChanges(ctx, a, b, lim.BigFile)
	if err != nil {
		return Result{}, err
	}
	if len(big) > maxBigFiles {
		big = nil
	}
	var tail strings.Builder
	for _, c := range big {
		tail.WriteString(binaryStanza(c))
	}
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	args := append(diffArgs(lim), a, b, "--")
	args = append(args, excludes(big)...)
	cmd := g.cmd(dctx, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return Result{}, fmt.Errorf("git diff: %w", err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &limitedBuffer{max: 64 << 10, b: &errb}
	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("git diff: %w", err)
	}
	// The oversized files come last, described without git reading them.
	res, cut, rerr := capture(io.MultiReader(stdout, strings.NewReader(tail.String())), lim)
	if cut {
		cancel() // stop git: the rest is not wanted
	}
	werr := cmd.Wait()
	if rerr != nil {
		return Result{}, fmt.Errorf("read git diff: %w", rerr)
	}
	if werr != nil && !cut {
		return Result{}, fmt.Errorf("git diff %s %s: %w: %s", a, b, werr, strings.TrimSpace(errb.String()))
	}
	res.TotalFiles = res.Files
	res.Notes = []string{}
	if cut {
		res.Truncated = true
		total, err := g.countFiles(ctx, a, b)
		if err == nil {
			res.TotalFiles = total
		}
		res.Notes = append(res.Notes, truncNote(res, lim))
	}
	return res, nil
}

func truncNote(r Result, lim Limits) string {
	if r.TotalFiles > r.Files {
		return fmt.Sprintf("diff truncated: showing %d of %d files (limits: %d files, %d bytes)", r.Files, r.TotalFiles, lim.MaxFiles, lim.MaxBytes)
	}
	return fmt.Sprintf("diff truncated at %d bytes in file %d of %d (limits: %d files, %d bytes)", len(r.Text), r.Files, r.TotalFiles, lim.MaxFiles, lim.MaxBytes)
}

// countFiles counts the paths the diff a..b touches without reading blobs.
func (g git) countFiles(ctx context.Context, a, b string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := g.cmd(ctx, "diff", "--no-renames", "--name-only", "-z", a, b, "--")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	n := 0
	buf := make([]byte, 32<<10)
	for {
		k, err := stdout.Read(buf)
		n += bytes.Count(buf[:k], []byte{0})
		if err != nil {
			break
		}
	}
	if err := cmd.Wait(); err != nil {
		return 0, err
	}
	return n, nil
}

// capture reads a diff stream line by line until it ends or a limit is
// reached (cut). It never holds more than lim.MaxBytes plus one buffer.
func capture(r io.Reader, lim Limits) (res Result, cut bool, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var out bytes.Buffer
	var line []byte
	atStart := true
	for {
		chunk, rerr := br.ReadSlice('\n')
		header := atStart && bytes.HasPrefix(chunk, []byte("diff --git "))
		if header && res.Files == lim.MaxFiles {
			cut = true
			break
		}
		if out.Len()+len(line)+len(chunk) > lim.MaxBytes {
			cut = true
			break
		}
		if header {
			res.Files++
		}
		line = append(line, chunk...)
		if errors.Is(rerr, bufio.ErrBufferFull) {
			atStart = false
			continue
		}
		out.Write(line)
		line = line[:0]
		atStart = true
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return Result{}, false, rerr
		}
	}
	res.Text = out.String()
	return res, cut, nil
}

// limitedBuffer keeps the first max bytes written to it and drops the rest,
// so that a chatty git cannot grow our memory.
type limitedBuffer struct {
	max int
	b   *bytes.Buffer
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.b.Len(); room > 0 {
		if len(p) > room {
			l.b.Write(p[:room])
		} else {
			l.b.Write(p)
		}
	}
	return len(p), nil
}
