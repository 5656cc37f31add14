package git

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// MaxLooseCommit bounds the commits LooseCommit reads: a commit is its
// headers and message, which the push limits keep far smaller.
const MaxLooseCommit = 1 << 20

// ErrNotLoose is LooseCommit's answer for an object that is not a loose
// commit under the directory.
var ErrNotLoose = errors.New("not a loose commit")

// LooseCommit reads commit oid from the loose objects under objdir
// (objects/xx/yyyy…, a zlib stream of "commit SIZE\0" and the body) and
// returns its body, as `git cat-file commit` prints it; ErrNotLoose where
// the object is not there as a loose object, or is not a commit.
//
// It is for a pre-receive that must know a push's new commits without
// starting git: git writes the objects of a push of fewer than
// transfer.unpackLimit objects loose into the push's quarantine
// (GIT_QUARANTINE_PATH), and only objects the repository lacked; anything
// else is ErrNotLoose and the caller asks git.
func LooseCommit(objdir, oid string) ([]byte, error) {
	if !IsOID(oid) {
		return nil, fmt.Errorf("loose commit %q: not an object id", oid)
	}
	f, err := os.Open(filepath.Join(objdir, oid[:2], oid[2:]))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNotLoose
	}
	if err != nil {
		return nil, fmt.Errorf("loose commit %s: %w", oid, err)
	}
	defer f.Close()
	z, err := zlib.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("loose commit %s: %w", oid, err)
	}
	defer z.Close()
	raw, err := io.ReadAll(io.LimitReader(z, MaxLooseCommit+64))
	if err != nil {
		return nil, fmt.Errorf("loose commit %s: %w", oid, err)
	}
	head, body, ok := bytes.Cut(raw, []byte{0})
	typ, size, _ := bytes.Cut(head, []byte{' '})
	if !ok || string(typ) != "commit" {
		return nil, ErrNotLoose
	}
	if n, err := strconv.Atoi(string(size)); err != nil || n != len(body) || n > MaxLooseCommit {
		return nil, fmt.Errorf("loose commit %s: malformed object", oid)
	}
	return body, nil
}

// CommitParents returns the parents a commit body (LooseCommit's) names:
// the "parent" headers, which git writes right after "tree".
func CommitParents(body []byte) []string {
	_, body, _ = bytes.Cut(body, []byte{'\n'}) // tree
	var out []string
	for {
		line, rest, _ := bytes.Cut(body, []byte{'\n'})
		p, ok := bytes.CutPrefix(line, []byte("parent "))
		if !ok {
			return out
		}
		out = append(out, string(p))
		body = rest
	}
}

// NewCommitsOver returns the commits a push brought (the objects of its
// quarantine, GIT_QUARANTINE_PATH in r's environment: only objects the
// repository lacked) whose object holds more than n bytes, so that a limit
// on their messages reads no commit that cannot be over it. A push of
// fewer than transfer.unpackLimit objects is loose: its commits are found
// from tips (the pushed ref values) through their parents, reading only
// the head of each commit (or tag) object, without git, until an object
// the quarantine does not hold (the repository's); a pack takes one git
// cat-file over the quarantine alone. Outside a quarantine it finds
// nothing.
func (r Repo) NewCommitsOver(ctx context.Context, n int64, tips []string) ([]string, error) {
	q := ""
	if r.Mode == Hook {
		q = lastValue(r.Env(), "GIT_QUARANTINE_PATH")
	}
	if q == "" {
		return nil, nil
	}
	if !filepath.IsAbs(q) {
		q = filepath.Join(r.Dir, q)
	}
	if packs, _ := filepath.Glob(filepath.Join(q, "pack", "*.idx")); len(packs) > 0 {
		return r.packedCommitsOver(ctx, q, n)
	}
	var out []string
	seen := map[string]bool{}
	todo := append([]string(nil), tips...)
	for len(todo) > 0 {
		oid := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if seen[oid] || !IsOID(oid) {
			continue
		}
		seen[oid] = true
		typ, size, links, err := looseHead(filepath.Join(q, oid[:2], oid[2:]))
		if errors.Is(err, os.ErrNotExist) {
			continue // the repository's: so are its ancestors
		}
		if err != nil {
			return nil, fmt.Errorf("quarantined object %s: %w", oid, err)
		}
		if typ == "commit" && size > n {
			out = append(out, oid)
		}
		todo = append(todo, links...)
	}
	return out, nil
}

// looseHead reads the type and size of the loose object in file and, for
// a commit its parents, for a tag the object it tags, inflating only the
// object's head.
func looseHead(file string) (typ string, size int64, links []string, err error) {
	f, err := os.Open(file)
	if err != nil {
		return "", 0, nil, err
	}
	defer f.Close()
	z, err := zlib.NewReader(f)
	if err != nil {
		return "", 0, nil, err
	}
	defer z.Close()
	br := bufio.NewReaderSize(z, 512)
	head, err := br.ReadString(0)
	if err != nil {
		return "", 0, nil, fmt.Errorf("malformed object header: %w", err)
	}
	t, sz, ok := strings.Cut(strings.TrimSuffix(head, "\x00"), " ")
	if !ok {
		return "", 0, nil, errors.New("malformed object header")
	}
	if size, err = strconv.ParseInt(sz, 10, 64); err != nil {
		return "", 0, nil, errors.New("malformed object header")
	}
	want := map[string]string{"commit": "parent ", "tag": "object "}[t]
	if want == "" {
		return t, size, nil, nil
	}
	for {
		line, err := br.ReadSlice('\n')
		if err != nil && err != io.EOF {
			return t, size, links, nil // a long header: no more links come
		}
		if l, ok := bytes.CutPrefix(line, []byte(want)); ok {
			links = append(links, strings.TrimSpace(string(l)))
		} else if !bytes.HasPrefix(line, []byte("tree ")) {
			return t, size, links, nil // git writes them right after tree
		}
		if err == io.EOF {
			return t, size, links, nil
		}
	}
}

// packedCommitsOver is NewCommitsOver where the quarantine q holds a pack:
// git lists q's objects, without the repository's (no alternates).
func (r Repo) packedCommitsOver(ctx context.Context, q string, n int64) ([]string, error) {
	cmd := r.With("GIT_OBJECT_DIRECTORY="+q, "GIT_ALTERNATE_OBJECT_DIRECTORIES=").Command(ctx,
		"cat-file", "--batch-all-objects", "--unordered", "--batch-check=%(objecttype) %(objectsize) %(objectname)")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("git cat-file: %w", err)
	}
	var oids []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		typ, rest, _ := strings.Cut(sc.Text(), " ")
		if typ != "commit" {
			continue
		}
		size, oid, _ := strings.Cut(rest, " ")
		if s, err := strconv.ParseInt(size, 10, 64); err == nil && s > n && IsOID(oid) {
			oids = append(oids, oid)
		}
	}
	if err := cmd.Wait(); err != nil {
		return nil, failed([]string{"cat-file", "--batch-all-objects"}, stderr.String(), err)
	}
	return oids, sc.Err()
}

// MessageBytes is the length of commit oid's message (what follows its
// headers), read as a stream: a message may be far larger than any limit.
func (r Repo) MessageBytes(ctx context.Context, oid string) (int64, error) {
	if !IsOID(oid) {
		return 0, fmt.Errorf("message of %q: not an object id", oid)
	}
	cmd := r.Command(ctx, "cat-file", "commit", oid)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("git cat-file: %w", err)
	}
	br := bufio.NewReader(out)
	var n int64
	inBody, lineStart := false, true
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case inBody:
			n += int64(len(line))
		case lineStart && len(line) == 1 && line[0] == '\n':
			inBody = true
		}
		lineStart = err != bufio.ErrBufferFull // a long header goes on
		if err != nil && err != bufio.ErrBufferFull {
			break
		}
	}
	if err := cmd.Wait(); err != nil {
		return 0, failed([]string{"cat-file", "commit", oid}, stderr.String(), err)
	}
	return n, nil
}
