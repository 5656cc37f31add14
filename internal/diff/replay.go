package diff

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
)

// maxPathspecs bounds the paths handed to git diff on its command line;
// beyond it the whole patch is replayed instead.
const maxPathspecs = 1000

// entry is one tree entry: mode and object id ("" mode: absent).
type entry struct{ mode, oid string }

// change is one line of git diff-tree -r -z -M: a path changed from old to
// new; renames carry both paths.
type change struct {
	status   byte
	old, new entry
	src, dst string // src == dst unless renamed or copied
}

// changesWith lists what a..b changed, with renames found or not (finding
// them reads the content of added and deleted files).
func (g git) changesWith(ctx context.Context, a, b string, renames bool) ([]change, error) {
	flag := "--no-renames"
	if renames {
		flag = "--find-renames"
	}
	out, err := g.run(ctx, nil, "diff-tree", "-r", "-z", flag, a, b, "--")
	if err != nil {
		return nil, err
	}
	var cs []change
	f := strings.Split(out, "\x00")
	for i := 0; i < len(f); i++ {
		meta := f[i]
		if !strings.HasPrefix(meta, ":") {
			continue
		}
		m := strings.Fields(meta[1:])
		if len(m) != 5 || i+1 >= len(f) {
			return nil, fmt.Errorf("git diff-tree: bad record %q", meta)
		}
		c := change{status: m[4][0], old: entry{m[0], m[2]}, new: entry{m[1], m[3]}}
		c.src = f[i+1]
		c.dst = c.src
		i++
		if c.status == 'R' || c.status == 'C' {
			if i+1 >= len(f) {
				return nil, fmt.Errorf("git diff-tree: bad rename record %q", meta)
			}
			c.dst = f[i+1]
			i++
		}
		if c.old.mode == "000000" {
			c.old = entry{}
		}
		if c.new.mode == "000000" {
			c.new = entry{}
		}
		cs = append(cs, c)
	}
	return cs, nil
}

// entries reads, from tree, the entries (blobs, trees, gitlinks) at the
// changed paths and at their parent directories, reading only the
// subtrees that lead there when the paths are few.
func (g git) entries(ctx context.Context, tree string, paths, dirs map[string]bool) (map[string]entry, error) {
	got := map[string]entry{}
	if len(paths) > maxPathspecs {
		all := map[string]bool{}
		for p := range paths {
			all[p] = true
		}
		for d := range dirs {
			all[d] = true
		}
		return got, g.lsTree(ctx, tree, true, nil, all, got)
	}
	// -r -t with the paths lists them and every tree on the way there.
	if err := g.lsTree(ctx, tree, true, keys(paths), paths, got); err != nil {
		return nil, err
	}
	// A directory not listed is absent, or a file where a directory is
	// wanted; without -r its own entry shows which.
	var unseen []string
	for d := range dirs {
		if _, ok := got[d]; !ok && !paths[d] {
			unseen = append(unseen, d)
		}
	}
	if len(unseen) == 0 {
		return got, nil
	}
	if len(unseen) > maxPathspecs {
		unseen = nil // list everything
	}
	return got, g.lsTree(ctx, tree, unseen == nil, unseen, dirs, got)
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// lsTree streams git ls-tree of tree (recursive with trees shown, or not),
// limited to pathspecs when given, into got for the paths in want.
func (g git) lsTree(ctx context.Context, tree string, recursive bool, pathspecs []string, want map[string]bool, got map[string]entry) error {
	args := []string{"--literal-pathspecs", "ls-tree", "-z", "--full-tree"}
	if recursive {
		args = append(args, "-r", "-t")
	}
	args = append(args, tree)
	if pathspecs != nil {
		args = append(append(args, "--"), pathspecs...)
	}
	cmd := g.cmd(ctx, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var errb bytes.Buffer
	cmd.Stderr = &limitedBuffer{max: 64 << 10, b: &errb}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("git ls-tree: %w", err)
	}
	br := bufio.NewReaderSize(stdout, 64<<10)
	var rerr error
	for {
		rec, err := br.ReadString(0)
		if meta, p, ok := strings.Cut(strings.TrimSuffix(rec, "\x00"), "\t"); ok && want[p] {
			if m := strings.Fields(meta); len(m) == 3 {
				got[p] = entry{mode: m[0], oid: m[2]}
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				rerr = err
			}
			break
		}
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("git ls-tree %s: %w: %s", tree, err, strings.TrimSpace(errb.String()))
	}
	return rerr
}

func parents(p string) []string {
	var out []string
	for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
		out = append(out, d)
	}
	return out
}

// plan splits from's changes into those that carry over to base as they
// are (base has what from's base had at every path involved, and nothing
// in the way of a new path) and the paths that need a three-way apply.
func (g git) plan(ctx context.Context, cs []change, base string) (index, merge []string, baseBlobs []change, err error) {
	paths, dirs := map[string]bool{}, map[string]bool{}
	for _, c := range cs {
		for _, p := range []string{c.src, c.dst} {
			paths[p] = true
			for _, d := range parents(p) {
				dirs[d] = true
			}
		}
	}
	have, err := g.entries(ctx, base, paths, dirs)
	if err != nil {
		return nil, nil, nil, err
	}
	// clear: nothing at p in base and no file where p needs a directory.
	clear := func(p string) bool {
		if _, ok := have[p]; ok {
			return false
		}
		for _, d := range parents(p) {
			if e, ok := have[d]; ok && e.mode != "040000" {
				return false
			}
		}
		return true
	}
	for _, c := range cs {
		switch c.status {
		case 'R':
			if have[c.src] == c.old && clear(c.dst) {
				index = append(index, indexLine(entry{}, c.src), indexLine(c.new, c.dst))
				continue
			}
			merge = append(merge, c.src, c.dst)
		case 'A':
			if have[c.dst] == c.new {
				continue // base already has it
			}
			if clear(c.dst) {
				index = append(index, indexLine(c.new, c.dst))
				continue
			}
			merge = append(merge, c.dst)
		default: // M, T, D (and C, which -M alone never reports)
			if have[c.dst] == c.new {
				continue
			}
			if have[c.src] == c.old && c.src == c.dst {
				index = append(index, indexLine(c.new, c.dst))
				continue
			}
			merge = append(merge, c.src)
			if c.dst != c.src {
				merge = append(merge, c.dst)
			}
		}
	}
	// What base has at the merged paths: the third side a 3-way reads.
	for _, p := range merge {
		if e, ok := have[p]; ok && isBlob(e.mode) {
			baseBlobs = append(baseBlobs, change{new: e, src: p, dst: p})
		}
	}
	return index, merge, baseBlobs, nil
}

// indexLine is one record of update-index -z --index-info; mode 0 removes.
func indexLine(e entry, p string) string {
	if e.mode == "" {
		return "0 " + strings.Repeat("0", 40) + "\t" + p
	}
	return e.mode + " " + e.oid + "\t" + p
}

// replay applies from's changes onto base in the scratch index and returns
// the resulting tree, or the conflicting paths (non-nil, maybe empty when
// git named none) when the replay did not apply, or a refusal (why it was
// not tried: the three-way part would read more than lim allows).
//
// Paths that base did not touch since from's base carry over as index
// entries, without git reading a byte of their content (a 50 MB blob costs
// nothing); only the rest goes through git diff | git apply --3way, and
// only when the blobs that reads (from's two sides and base's) fit
// lim.MaxRead and none is over lim.BigFile.
func (g git) replay(ctx context.Context, from Range, base string, lim Limits) (tree string, conflicts []string, refusal string, err error) {
	if _, err := g.run(ctx, nil, "read-tree", base); err != nil {
		return "", nil, "", err
	}
	cs, sizes, _, _, err := g.budgetedChanges(ctx, from.Base, from.Commit, lim)
	if err != nil {
		return "", nil, "", err
	}
	index, merge, baseOIDs, err := g.plan(ctx, cs, base)
	if err != nil {
		return "", nil, "", err
	}
	if len(merge) > 0 {
		// A three-way merge would have git read oversized blobs whole: call
		// those conflicts and let the caller show the trees' diff.
		inMerge := map[string]bool{}
		for _, p := range merge {
			inMerge[p] = true
		}
		var refused []string
		var cost int64
		for _, c := range cs {
			if !inMerge[c.src] && !inMerge[c.dst] {
				continue
			}
			for _, e := range []entry{c.old, c.new} {
				if isBlob(e.mode) {
					cost += sizes[e.oid]
				}
			}
		}
		for _, c := range oversized(cs, sizes, lim.BigFile) {
			if inMerge[c.src] || inMerge[c.dst] {
				refused = append(refused, c.dst)
			}
		}
		if len(refused) > 0 {
			return "", refused, "", nil
		}
		baseSizes, err := g.sizes(ctx, baseOIDs)
		if err != nil {
			return "", nil, "", err
		}
		for _, n := range baseSizes {
			cost += n
		}
		if cost > lim.MaxRead {
			return "", nil, fmt.Sprintf("replaying the %d paths that both revisions' bases touched would read %s (limit %s)", len(merge), mib(cost), mib(lim.MaxRead)), nil
		}
	}
	switch {
	case len(merge) > maxPathspecs:
		err = g.apply(ctx, from, nil) // the whole patch onto base as read
	default:
		if len(index) > 0 {
			in := strings.NewReader(strings.Join(index, "\x00") + "\x00")
			if _, err := g.run(ctx, in, "update-index", "-z", "--index-info"); err != nil {
				return "", nil, "", err
			}
		}
		if len(merge) > 0 {
			err = g.apply(ctx, from, merge)
		}
	}
	if ctx.Err() != nil {
		return "", nil, "", ctx.Err()
	}
	// git apply --3way exits non-zero when it leaves anything unmerged,
	// and index entries alone never conflict.
	if err != nil {
		unmerged, lerr := g.run(ctx, nil, "ls-files", "-z", "--unmerged")
		if lerr != nil {
			return "", nil, "", lerr
		}
		conflicts = unmergedPaths(unmerged)
		if conflicts == nil {
			conflicts = []string{}
		}
		return "", conflicts, "", nil
	}
	out, err := g.run(ctx, nil, "write-tree")
	if err != nil {
		return "", []string{}, "", nil
	}
	return strings.TrimSpace(out), nil, "", nil
}

// apply runs git diff --binary FROM [-- paths] | git apply --cached --3way
// into the scratch index, joined by an OS pipe so that the patch never
// passes through this process. A failed apply is returned as is (the
// caller looks for conflicts); a failed diff is an error of its own.
func (g git) apply(ctx context.Context, from Range, paths []string) error {
	pr, pw, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("pipe: %w", err)
	}
	args := []string{"--literal-pathspecs", "-c", "diff.noprefix=false", "-c", "diff.mnemonicPrefix=false",
		"diff", "--binary", "--no-color", "--no-ext-diff", "--no-textconv", "--find-renames",
		"--src-prefix=a/", "--dst-prefix=b/", from.Base, from.Commit, "--"}
	produce := g.cmd(ctx, append(args, paths...)...)
	produce.Stdout = pw
	var perr, aerr bytes.Buffer
	produce.Stderr = &limitedBuffer{max: 64 << 10, b: &perr}
	apply := g.cmd(ctx, "apply", "--cached", "--3way", "--allow-empty", "--whitespace=nowarn")
	apply.Stdin = pr
	apply.Stderr = &limitedBuffer{max: 64 << 10, b: &aerr}
	if err := produce.Start(); err != nil {
		pr.Close()
		pw.Close()
		return fmt.Errorf("git diff: %w", err)
	}
	pw.Close()
	if err := apply.Start(); err != nil {
		pr.Close()
		_ = produce.Wait()
		return fmt.Errorf("git apply: %w", err)
	}
	pr.Close()
	applyErr := apply.Wait()
	produceErr := produce.Wait()
	if produceErr != nil && applyErr == nil {
		return fmt.Errorf("git diff %s..%s: %w: %s", from.Base, from.Commit, produceErr, strings.TrimSpace(perr.String()))
	}
	if applyErr != nil {
		return fmt.Errorf("git apply: %w: %s", applyErr, strings.TrimSpace(aerr.String()))
	}
	return nil
}
