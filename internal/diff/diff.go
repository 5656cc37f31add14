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
	"strconv"
	"strings"

	gitrepo "github.com/collab-forge/collab/internal/git"
)

// Limits bound what a diff returns.
type Limits struct {
	// MaxBytes bounds the text of the diff; the cut falls on a line end.
	MaxBytes int
	// MaxFiles bounds the number of files shown.
	MaxFiles int
	// BigFile is the blob size above which a file is shown as binary
	// without git reading it (and core.bigFileThreshold for git itself).
	BigFile int64
	// MaxRead bounds the bytes of content git reads for one diff (both
	// sides of every file shown); the files past it are skipped.
	MaxRead int64
}

// DefaultLimits are what the SSH verbs and the web pages use.
func DefaultLimits() Limits {
	return Limits{MaxBytes: 2 << 20, MaxFiles: 1000, BigFile: 4 << 20, MaxRead: 16 << 20}
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
	if l.MaxRead <= 0 {
		l.MaxRead = d.MaxRead
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
	// Skipped are the files Text leaves out to keep within the limits.
	Skipped []Skip `json:"skipped"`
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
	tree, conflicts, refusal, err := g.replay(ctx, from, to.Base, lim)
	if err != nil {
		return Result{}, err
	}
	if conflicts != nil || refusal != "" {
		res, err := g.diff(ctx, from.Commit, to.Commit, lim)
		if err != nil {
			return Result{}, err
		}
		res.Conflict = conflicts != nil
		note := "interdiff not replayed: " + refusal
		if res.Conflict {
			note = fmt.Sprintf("interdiff conflict: replaying %s..%s onto %s did not apply cleanly",
				short(from.Base), short(from.Commit), short(to.Base))
		}
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

// diff streams git diff a b, keeping at most lim of it. Before git reads
// a byte of content, the changed paths and their blob sizes are listed
// (tree reads only): files over lim.BigFile are described without being
// read, and once the blobs taken pass lim.MaxRead the remaining files are
// left out of git's diff and named in Result.Skipped.
func (g git) diff(ctx context.Context, a, b string, lim Limits) (Result, error) {
	cs, sizes, renames, notes, err := g.budgetedChanges(ctx, a, b, lim)
	if err != nil {
		return Result{}, err
	}
	p := planRead(cs, sizes, renames, lim)
	if len(p.big) > 0 {
		notes = append(notes, fmt.Sprintf("%d file%s over %s not read by git: shown as binary", len(p.big), plural(len(p.big)), mib(lim.BigFile)))
	}
	var tail strings.Builder
	for _, c := range p.big {
		tail.WriteString(binaryStanza(c))
	}
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	args := diffArgs(lim)
	if !p.renames {
		args = append(args, "--no-renames")
	}
	args = append(args, a, b, "--")
	args = append(args, p.pathspecs...)
	res := Result{}
	cut := false
	if len(p.read) > 0 || len(p.skipped) == 0 {
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
		var rerr error
		res, cut, rerr = capture(io.MultiReader(stdout, strings.NewReader(tail.String())), lim)
		if cut {
			cancel() // stop git: the rest is not wanted
		}
		werr := cmd.Wait()
		if ctx.Err() != nil {
			return Result{}, fmt.Errorf("git diff %s %s: %w", a, b, ctx.Err())
		}
		if rerr != nil {
			return Result{}, fmt.Errorf("read git diff: %w", rerr)
		}
		if werr != nil && !cut {
			return Result{}, fmt.Errorf("git diff %s %s: %w: %s", a, b, werr, strings.TrimSpace(errb.String()))
		}
	} else {
		var rerr error
		if res, cut, rerr = capture(strings.NewReader(tail.String()), lim); rerr != nil {
			return Result{}, rerr
		}
	}
	res.TotalFiles = max(len(cs), res.Files)
	res.Notes = notes
	res.Skipped = []Skip{}
	for _, c := range p.skipped {
		res.Skipped = append(res.Skipped, Skip{Path: c.dst, OldPath: c.src, Reason: "over the read budget"})
	}
	if len(p.skipped) > 0 {
		res.Truncated = true
		res.Notes = append(res.Notes, fmt.Sprintf("%d file%s not shown: git would read more than %s of them (limit %s, %s a file)",
			len(p.skipped), plural(len(p.skipped)), mib(p.wanted), mib(lim.MaxRead), mib(lim.BigFile)))
	}
	if cut {
		res.Truncated = true
		res.Notes = append(res.Notes, truncNote(res, lim))
	}
	return res, nil
}

// Skip is a file of a diff that its text leaves out, and why.
type Skip struct {
	Path    string `json:"path"`
	OldPath string `json:"old_path"`
	Reason  string `json:"reason"`
}

// budgetedChanges lists what a..b changed and the sizes of the blobs
// involved, reading trees only. Rename detection reads the content of
// added and deleted files, so it is done only when those fit lim.MaxRead
// (a note says when it was not).
func (g git) budgetedChanges(ctx context.Context, a, b string, lim Limits) (cs []change, sizes map[string]int64, renames bool, notes []string, err error) {
	if cs, err = g.changesWith(ctx, a, b, false); err != nil {
		return nil, nil, false, nil, err
	}
	if sizes, err = g.sizes(ctx, cs); err != nil {
		return nil, nil, false, nil, err
	}
	var candidates int64
	n := 0
	for _, c := range cs {
		switch {
		case c.old.mode == "" && isBlob(c.new.mode):
			candidates += sizes[c.new.oid]
			n++
		case c.new.mode == "" && isBlob(c.old.mode):
			candidates += sizes[c.old.oid]
			n++
		}
	}
	notes = []string{}
	if n < 2 {
		return cs, sizes, true, notes, nil // nothing to pair up
	}
	if candidates > lim.MaxRead {
		return cs, sizes, false, append(notes, fmt.Sprintf("renames not detected: the added and deleted files hold %s (limit %s)", mib(candidates), mib(lim.MaxRead))), nil
	}
	if cs, err = g.changesWith(ctx, a, b, true); err != nil {
		return nil, nil, false, nil, err
	}
	return cs, sizes, true, notes, nil
}

// sizes returns the size of every blob cs involves.
func (g git) sizes(ctx context.Context, cs []change) (map[string]int64, error) {
	var oids []string
	for _, c := range cs {
		for _, e := range []entry{c.old, c.new} {
			if isBlob(e.mode) {
				oids = append(oids, e.oid)
			}
		}
	}
	size := map[string]int64{}
	if len(oids) == 0 {
		return size, nil
	}
	out, err := g.run(ctx, strings.NewReader(strings.Join(oids, "\n")+"\n"), "cat-file", "--batch-check=%(objectname) %(objectsize)")
	if err != nil {
		return nil, err
	}
	for _, l := range strings.Split(out, "\n") {
		if oid, n, ok := strings.Cut(l, " "); ok {
			if v, err := strconv.ParseInt(n, 10, 64); err == nil {
				size[oid] = v
			}
		}
	}
	return size, nil
}

// readPlan says which changes git diff may read.
type readPlan struct {
	read      []change // shown by git
	big       []change // over BigFile: described, not read
	skipped   []change // past the read budget: left out
	wanted    int64    // what reading them all would have cost
	renames   bool     // rename detection is within budget
	pathspecs []string // what git diff is limited to
}

// maxPathspecBytes bounds the pathspecs on git's command line (Linux
// allows 128 KiB an argument and about 2 MiB in all).
const maxPathspecBytes = 512 << 10

// planRead walks cs in git's order, taking files while the blobs read
// stay within lim.MaxRead (the first file is always taken unless it is
// over BigFile, so that a diff never shows nothing for want of budget);
// the rest is skipped. Only the first lim.MaxFiles count: git is stopped
// past them anyway.
func planRead(cs []change, sizes map[string]int64, renames bool, lim Limits) readPlan {
	p := readPlan{renames: renames}
	var used, argBytes int64
	over := false
	for i, c := range cs {
		cost := int64(0)
		bigOne := false
		for _, e := range []entry{c.old, c.new} {
			if isBlob(e.mode) {
				cost += sizes[e.oid]
				if sizes[e.oid] > lim.BigFile {
					bigOne = true
				}
			}
		}
		if bigOne {
			p.big = append(p.big, c)
			continue
		}
		p.wanted += cost
		if i >= lim.MaxFiles {
			continue
		}
		arg := int64(len(c.src) + len(c.dst) + 2*len(literal))
		if !over && (len(p.read) == 0 || used+cost <= lim.MaxRead) && argBytes+arg <= maxPathspecBytes {
			p.read = append(p.read, c)
			used += cost
			argBytes += arg
			continue
		}
		over = true
		p.skipped = append(p.skipped, c)
	}
	if len(p.big) > maxBigFiles && len(p.skipped) == 0 {
		// Too many to exclude one by one: let git call them binary itself.
		p.read, p.big = append(p.read, p.big...), nil
	}
	switch {
	case len(p.skipped) > 0:
		for _, c := range p.read {
			p.pathspecs = append(p.pathspecs, literal+c.src)
			if c.dst != c.src {
				p.pathspecs = append(p.pathspecs, literal+c.dst)
			}
		}
	default:
		p.pathspecs = excludes(p.big)
	}
	return p
}

const literal = ":(literal)"

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// mib shows a byte count the way the notes do.
func mib(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

func truncNote(r Result, lim Limits) string {
	if r.TotalFiles > r.Files {
		return fmt.Sprintf("diff truncated: showing %d of %d files (limits: %d files, %d bytes)", r.Files, r.TotalFiles, lim.MaxFiles, lim.MaxBytes)
	}
	return fmt.Sprintf("diff truncated at %d bytes in file %d of %d (limits: %d files, %d bytes)", len(r.Text), r.Files, r.TotalFiles, lim.MaxFiles, lim.MaxBytes)
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
