package git

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
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
