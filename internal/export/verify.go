package export

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/collab-forge/collab/internal/collabref"
)

// Report is what Verify found.
type Report struct {
	Refs     int      `json:"refs"`     // record refs checked
	Commits  int      `json:"commits"`  // commits whose signatures were checked
	Problems []string `json:"problems"` // one line each; empty when all is well
}

// OK reports whether verification found nothing wrong.
func (r Report) OK() bool { return len(r.Problems) == 0 }

// Verify checks every record ref of the bare repository gitDir: each
// commit in its history must carry a valid SSH signature by pub over its
// content, and the tip's issue.json or patch.json must name the record the
// ref names. It reads objects through one git cat-file process; git
// verify-commit with an allowed-signers file (AllowedSigners) gives the
// same answer commit by commit with stock tools.
func Verify(ctx context.Context, gitDir string, pub ed25519.PublicKey) (Report, error) {
	g := gitCmd{dir: gitDir}
	tips, err := g.records(ctx)
	if err != nil || len(tips) == 0 {
		return Report{Problems: []string{}}, err
	}
	cat, err := g.catFile(ctx)
	if err != nil {
		return Report{Problems: []string{}}, err
	}
	defer cat.close()
	return verify(cat, tips, []ed25519.PublicKey{pub}, true)
}

// verify is Verify of the record refs tips, where a commit signed by any
// of keys is good; with content it also checks that each tip's record
// file names its ref's record. Objects are asked for a generation at a
// time (every ref's next commit in one pipelined batch), not one by one:
// 11 000 records are 11 000 round trips to git otherwise.
func verify(cat *catFile, tips map[string]tip, keys []ed25519.PublicKey, content bool) (Report, error) {
	rep := Report{Problems: []string{}}
	refs := make([]string, 0, len(tips))
	for r := range tips {
		refs = append(refs, r)
	}
	sort.Strings(refs)
	rep.Refs = len(refs)
	bad := func(ref, problem string) { rep.Problems = append(rep.Problems, ref+": "+problem) }
	type checked struct{ problem, parent string }
	done := map[string]checked{}
	cur := make(map[string]string, len(refs))
	for _, ref := range refs {
		cur[ref] = tips[ref].commit
	}
	for active := refs; len(active) > 0; {
		var need []string
		asked := map[string]bool{}
		for _, ref := range active {
			if oid := cur[ref]; !asked[oid] {
				if _, ok := done[oid]; !ok {
					asked[oid] = true
					need = append(need, oid)
				}
			}
		}
		objs, err := cat.getMany(need)
		if err != nil {
			return rep, err
		}
		for i, oid := range need {
			p, parent := checkCommit(oid, objs[i].typ, objs[i].data, keys)
			done[oid] = checked{p, parent}
			rep.Commits++
		}
		next := active[:0]
		for _, ref := range active {
			oid := cur[ref]
			c := done[oid]
			if c.problem != "" {
				bad(ref, c.problem)
				continue
			}
			// A commit another ref's walk reached first was walked by it.
			if !asked[oid] || c.parent == "" {
				continue
			}
			delete(asked, oid)
			cur[ref] = c.parent
			next = append(next, ref)
		}
		active = next
	}
	if content {
		if err := checkContents(cat, refs, tips, &rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// checkCommit returns a problem ("" if none) and the commit's first
// parent; a signature by any of keys is good.
func checkCommit(oid, typ string, raw []byte, keys []ed25519.PublicKey) (problem, parent string) {
	if typ == "missing" {
		return fmt.Sprintf("commit %s is missing", oid), ""
	}
	if typ != "commit" {
		return fmt.Sprintf("%s is a %s, not a commit", oid, typ), ""
	}
	payload, sig := splitSignature(raw)
	headers := payload
	if i := bytes.Index(payload, []byte("\n\n")); i >= 0 {
		headers = payload[:i]
	}
	for _, l := range strings.Split(string(headers), "\n") {
		if p, ok := strings.CutPrefix(l, "parent "); ok {
			if parent != "" {
				return fmt.Sprintf("commit %s has more than one parent", oid), ""
			}
			parent = p
		}
	}
	if sig == "" {
		return fmt.Sprintf("commit %s is not signed", oid), ""
	}
	err := errors.New("no key to check it against")
	for _, pub := range keys {
		if err = sshVerify(pub, payload, sig); err == nil {
			return "", parent
		}
	}
	return fmt.Sprintf("commit %s: %v", oid, err), ""
}

// checkContents checks that the record file of each ref's tip tree
// names the record the ref names, in two batches (trees, then files).
func checkContents(cat *catFile, refs []string, tips map[string]tip, rep *Report) error {
	trees := make([]string, len(refs))
	for i, ref := range refs {
		trees[i] = tips[ref].tree
	}
	ts, err := cat.getMany(trees)
	if err != nil {
		return err
	}
	var blobs, of []string
	for i, ref := range refs {
		_, name := recordOf(ref)
		if ts[i].typ != "tree" {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s: tree %s unreadable", ref, trees[i]))
			continue
		}
		b := treeEntry(ts[i].data, name)
		if b == "" {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s: tree %s has no %s", ref, trees[i], name))
			continue
		}
		blobs, of = append(blobs, b), append(of, ref)
	}
	bs, err := cat.getMany(blobs)
	if err != nil {
		return err
	}
	for i, ref := range of {
		id, name := recordOf(ref)
		if bs[i].typ != "blob" {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s: %s unreadable", ref, name))
			continue
		}
		var v struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(bs[i].data, &v); err != nil {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s: %s: %v", ref, name, err))
			continue
		}
		if v.ID != id {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s: %s names %q", ref, name, v.ID))
		}
	}
	return nil
}

// recordOf returns the id a record ref names and its main file.
func recordOf(ref string) (id, file string) {
	r, _ := collabref.Parse(ref)
	if r.Kind == collabref.Issue {
		return r.ID, IssueFile
	}
	return r.ID, PatchFile
}

// treeEntry returns the oid of entry name in a raw tree, or "".
func treeEntry(raw []byte, name string) string {
	oid := ""
	eachEntry(raw, func(_, n, o string) bool {
		if n == name {
			oid = o
			return false
		}
		return true
	})
	return oid
}

// eachEntry calls fn with the mode, name and oid of each entry of a raw
// tree until fn returns false; it reports whether the tree was well
// formed as far as it read.
func eachEntry(raw []byte, fn func(mode, name, oid string) bool) bool {
	for len(raw) > 0 {
		sp := bytes.IndexByte(raw, ' ')
		nul := bytes.IndexByte(raw, 0)
		if sp < 0 || nul < sp || len(raw) < nul+21 {
			return false
		}
		if !fn(string(raw[:sp]), string(raw[sp+1:nul]), hex.EncodeToString(raw[nul+1:nul+21])) {
			return true
		}
		raw = raw[nul+21:]
	}
	return true
}

// catFile is one git cat-file --batch process, asked for batches of
// objects (getMany).
type catFile struct {
	in   io.WriteCloser
	out  *bufio.Reader
	wait func() error
}

func (g gitCmd) catFile(ctx context.Context) (*catFile, error) {
	c := g.cmd(ctx, "cat-file", "--batch")
	in, err := c.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := c.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := c.Start(); err != nil {
		return nil, fmt.Errorf("git cat-file: %w", err)
	}
	return &catFile{in: in, out: bufio.NewReaderSize(out, 1<<16), wait: c.Wait}, nil
}

// read reads one answer of cat-file --batch.
func (c *catFile) read() (string, []byte, error) {
	hdr, err := c.out.ReadString('\n')
	if err != nil {
		return "", nil, fmt.Errorf("git cat-file: %w", err)
	}
	f := strings.Fields(hdr)
	if len(f) == 2 && f[1] == "missing" {
		return "missing", nil, nil
	}
	if len(f) != 3 {
		return "", nil, fmt.Errorf("git cat-file: unexpected %q", hdr)
	}
	n, err := strconv.Atoi(f[2])
	if err != nil {
		return "", nil, fmt.Errorf("git cat-file: unexpected %q", hdr)
	}
	data := make([]byte, n+1) // the content and its newline
	if _, err := io.ReadFull(c.out, data); err != nil {
		return "", nil, fmt.Errorf("git cat-file: %w", err)
	}
	return f[1], data[:n], nil
}

// obj is an object cat-file gave: its type ("missing" when the
// repository lacks it) and content.
type obj struct {
	typ  string
	data []byte
}

// getMany returns the objects oids, in order, asking for all of them
// before reading the first answer, so that git streams them.
func (c *catFile) getMany(oids []string) ([]obj, error) {
	werr := make(chan error, 1)
	go func() {
		w := bufio.NewWriterSize(c.in, 1<<16)
		for _, oid := range oids {
			if _, err := io.WriteString(w, oid+"\n"); err != nil {
				werr <- err
				return
			}
		}
		werr <- w.Flush()
	}()
	out := make([]obj, len(oids))
	for i := range oids {
		typ, data, err := c.read()
		if err != nil {
			<-werr
			return nil, err
		}
		out[i] = obj{typ, data}
	}
	if err := <-werr; err != nil {
		return nil, fmt.Errorf("git cat-file: %w", err)
	}
	return out, nil
}

func (c *catFile) close() {
	c.in.Close()
	_ = c.wait()
}
