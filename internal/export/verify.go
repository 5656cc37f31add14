package export

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
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
	rep := Report{Problems: []string{}}
	tips, err := g.records(ctx)
	if err != nil {
		return rep, err
	}
	refs := make([]string, 0, len(tips))
	for r := range tips {
		refs = append(refs, r)
	}
	sort.Strings(refs)
	rep.Refs = len(refs)
	if len(refs) == 0 {
		return rep, nil
	}
	cat, err := g.catFile(ctx)
	if err != nil {
		return rep, err
	}
	defer cat.close()
	checked := map[string]string{} // commit -> problem ("" when good)
	for _, ref := range refs {
		bad := func(format string, args ...any) {
			rep.Problems = append(rep.Problems, ref+": "+fmt.Sprintf(format, args...))
		}
		oid := tips[ref].commit
		first := true
		for oid != "" {
			if p, done := checked[oid]; done {
				if p != "" {
					bad("%s", p)
				}
				break
			}
			typ, raw, err := cat.get(oid)
			if err != nil {
				return rep, err
			}
			p, parent := checkCommit(oid, typ, raw, pub)
			checked[oid] = p
			rep.Commits++
			if p != "" {
				bad("%s", p)
				break
			}
			if first {
				if p := checkContent(cat, ref, commitTree(raw)); p != "" {
					bad("%s", p)
				}
				first = false
			}
			oid = parent
		}
	}
	return rep, nil
}

// checkCommit returns a problem ("" if none) and the commit's first parent.
func checkCommit(oid, typ string, raw []byte, pub ed25519.PublicKey) (problem, parent string) {
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
	if err := sshVerify(pub, payload, sig); err != nil {
		return fmt.Sprintf("commit %s: %v", oid, err), ""
	}
	return "", parent
}

// checkContent checks that the record file in tree names the record the
// ref names.
func checkContent(cat *catFile, ref, tree string) string {
	id, name := recordOf(ref)
	typ, raw, err := cat.get(tree)
	if err != nil || typ != "tree" {
		return fmt.Sprintf("tree %s unreadable", tree)
	}
	blob := treeEntry(raw, name)
	if blob == "" {
		return fmt.Sprintf("tree %s has no %s", tree, name)
	}
	typ, data, err := cat.get(blob)
	if err != nil || typ != "blob" {
		return fmt.Sprintf("%s unreadable", name)
	}
	var v struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return fmt.Sprintf("%s: %v", name, err)
	}
	if v.ID != id {
		return fmt.Sprintf("%s names %q", name, v.ID)
	}
	return ""
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
	for len(raw) > 0 {
		sp := bytes.IndexByte(raw, ' ')
		nul := bytes.IndexByte(raw, 0)
		if sp < 0 || nul < sp || len(raw) < nul+21 {
			return ""
		}
		if string(raw[sp+1:nul]) == name {
			return hex.EncodeToString(raw[nul+1 : nul+21])
		}
		raw = raw[nul+21:]
	}
	return ""
}

// catFile is one git cat-file --batch process answering object requests
// one at a time.
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

// get returns the type and content of oid ("missing" as the type when the
// repository lacks it).
func (c *catFile) get(oid string) (string, []byte, error) {
	if _, err := io.WriteString(c.in, oid+"\n"); err != nil {
		return "", nil, fmt.Errorf("git cat-file: %w", err)
	}
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

func (c *catFile) close() {
	c.in.Close()
	_ = c.wait()
}
