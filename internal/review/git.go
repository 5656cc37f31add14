package review

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path"
	"strings"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/text"
)

// gitCmd is git on repoDir with paths taken literally (no globs).
func gitCmd(ctx context.Context, repoDir string, args ...string) *exec.Cmd {
	return git.Open(repoDir).Command(ctx, append([]string{"--literal-pathspecs"}, args...)...)
}

// CleanPath validates a file path given for an inline comment and returns
// it in the form git uses (slash-separated, relative to the top).
func CleanPath(p string) (string, error) {
	bad := func(why string) error {
		return fault.New(fault.Usage, "bad file %q: %s", text.Clip(p), why)
	}
	if p == "" {
		return "", bad("empty")
	}
	if len(p) > 4096 {
		return "", bad("too long")
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return "", bad("control character")
		}
	}
	if strings.HasPrefix(p, "/") {
		return "", bad("give the path relative to the top of the repository")
	}
	c := path.Clean(p)
	if c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return "", bad("outside the repository")
	}
	return c, nil
}

// CheckAnchor checks that file (and line, when > 0) exists in revision
// rev's tree and returns the cleaned path. A missing file, a directory,
// a binary file with a line, or a line past the end is refused with a
// message naming the revision.
func CheckAnchor(ctx context.Context, repoDir string, rev patches.Revision, file string, line int) (string, error) {
	p, err := CleanPath(file)
	if err != nil {
		return "", err
	}
	if !git.IsOID(rev.Commit) {
		return "", fmt.Errorf("revision %d: bad stored commit %q", rev.Number, rev.Commit)
	}
	out, err := gitCmd(ctx, repoDir, "ls-tree", "-z", "--full-tree", rev.Commit, "--", p).Output()
	if err != nil {
		return "", fmt.Errorf("git ls-tree %s: %w", rev.Commit, err)
	}
	// "MODE TYPE OID\tPATH\0"; the pathspec may also match deeper entries.
	var typ, oid string
	for _, rec := range strings.Split(string(out), "\x00") {
		meta, name, ok := strings.Cut(rec, "\t")
		if !ok || name != p {
			continue
		}
		f := strings.Fields(meta)
		if len(f) == 3 {
			typ, oid = f[1], f[2]
		}
	}
	where := fmt.Sprintf("revision %d (%s)", rev.Number, short(rev.Commit))
	switch typ {
	case "":
		return "", fault.New(fault.Usage, "file %s does not exist in %s", p, where)
	case "tree":
		return "", fault.New(fault.Usage, "%s is a directory in %s: comment on a file", p, where)
	case "commit":
		return "", fault.New(fault.Usage, "%s is a submodule in %s: comment on a file", p, where)
	}
	if line == 0 {
		return p, nil
	}
	n, binary, err := countLines(ctx, repoDir, oid)
	if err != nil {
		return "", err
	}
	if binary {
		return "", fault.New(fault.Usage, "%s is a binary file in %s: comment on the whole file, not on a line", p, where)
	}
	if line > n {
		return "", fault.New(fault.Usage, "line %d is past the end of %s in %s, which has %d lines", line, p, where, n)
	}
	return p, nil
}

// InDiff refuses an inline comment on a file (a path CheckAnchor
// cleaned) that the revision's diff, base..commit, does not touch: a
// reviewer comments on what the patch changes. Renames count on both
// sides (old path and new).
func InDiff(ctx context.Context, repoDir string, rev patches.Revision, p string) error {
	if !git.IsOID(rev.BaseCommit) || !git.IsOID(rev.Commit) {
		return fmt.Errorf("revision %d: bad stored commits %q..%q", rev.Number, rev.BaseCommit, rev.Commit)
	}
	out, err := gitCmd(ctx, repoDir, "diff", "--no-renames", "--name-only", "-z", rev.BaseCommit, rev.Commit, "--", p).Output()
	if err != nil {
		return fmt.Errorf("git diff --name-only %s: %w", rev.Commit, err)
	}
	if len(out) == 0 {
		return fault.New(fault.Usage, "file %s is not changed by revision %d: comment on a file of its diff", p, rev.Number)
	}
	return nil
}

func short(oid string) string {
	if len(oid) > 12 {
		return oid[:12]
	}
	return oid
}

// countLines streams a blob and counts its lines (a last line without a
// newline counts); binary means a NUL in the first 8000 bytes, as git
// decides.
func countLines(ctx context.Context, repoDir, oid string) (n int, binary bool, err error) {
	cmd := gitCmd(ctx, repoDir, "cat-file", "blob", oid)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, false, err
	}
	if err := cmd.Start(); err != nil {
		return 0, false, fmt.Errorf("git cat-file: %w", err)
	}
	br := bufio.NewReaderSize(stdout, 64<<10)
	head, _ := br.Peek(8000)
	binary = bytes.IndexByte(head, 0) >= 0
	var last byte
	var total int64
	buf := make([]byte, 64<<10)
	for !binary {
		k, rerr := br.Read(buf)
		if k > 0 {
			n += bytes.Count(buf[:k], []byte{'\n'})
			last = buf[k-1]
			total += int64(k)
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			_ = cmd.Wait()
			return 0, false, fmt.Errorf("read blob %s: %w", oid, rerr)
		}
	}
	if binary {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return 0, true, nil
	}
	if err := cmd.Wait(); err != nil {
		return 0, false, fmt.Errorf("git cat-file %s: %w", oid, err)
	}
	if total > 0 && last != '\n' {
		n++
	}
	return n, false, nil
}

// resolveCommit turns a hex oid or abbreviation into the full id of a
// commit in repoDir.
func resolveCommit(ctx context.Context, repoDir, s string) (string, error) {
	c := strings.ToLower(strings.TrimSpace(s))
	if len(c) < 4 || len(c) > 64 || strings.Trim(c, "0123456789abcdef") != "" {
		return "", fault.New(fault.Usage, "bad commit %q: want a hex object id", text.Clip(s))
	}
	oid, ok, err := git.Open(repoDir).ResolveRef(ctx, c)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fault.New(fault.NotFound, "no commit %s in the repository", c)
	}
	return oid, nil
}

// reachable checks that commit (a full oid) is reachable from
// refs/heads/branch.
func reachable(ctx context.Context, repoDir, commit, branch string) error {
	r := git.Open(repoDir)
	tip, ok, err := r.ResolveRef(ctx, "refs/heads/"+branch)
	if err != nil {
		return err
	}
	if !ok {
		return fault.New(fault.Conflict, "target branch %s does not exist", branch)
	}
	in, err := r.IsAncestor(ctx, commit, tip)
	if err != nil {
		return err
	}
	if !in {
		return fault.New(fault.Conflict, "commit %s is not reachable from branch %s: merge it there first", short(commit), branch)
	}
	return nil
}
