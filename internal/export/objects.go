package export

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strconv"
	"strings"
)

// Object types, numbered as in a pack header.
const (
	typeCommit = 1
	typeTree   = 2
	typeBlob   = 3
)

var typeNames = map[int]string{typeCommit: "commit", typeTree: "tree", typeBlob: "blob"}

// object is a git object built in memory: its hash is computed exactly as
// git does (SHA-1 of "TYPE SIZE\x00" + data), so an export knows every oid
// before git sees a byte and can compare trees without asking git.
type object struct {
	typ  int
	data []byte
	oid  string
}

func newObject(typ int, data []byte) object {
	h := sha1.New()
	fmt.Fprintf(h, "%s %d\x00", typeNames[typ], len(data))
	h.Write(data)
	return object{typ: typ, data: data, oid: hex.EncodeToString(h.Sum(nil))}
}

// file is one path of a record's tree and its content.
type file struct {
	path string // slash-separated, e.g. comments/000001-ID.json
	data []byte
}

// buildTree turns files into blobs and (nested) trees; it returns the root
// tree's oid and every object, children before parents.
func buildTree(files []file) (string, []object) {
	type entry struct {
		name  string
		dir   bool
		oid   string
		files []file // for a directory, its files relative to it
	}
	byName := map[string]*entry{}
	var entries []*entry
	for _, f := range files {
		name, rest, isDir := strings.Cut(f.path, "/")
		e := byName[name]
		if e == nil {
			e = &entry{name: name, dir: isDir}
			byName[name] = e
			entries = append(entries, e)
		}
		if isDir {
			e.files = append(e.files, file{path: rest, data: f.data})
		} else {
			e.files = append(e.files, f)
		}
	}
	var objs []object
	for _, e := range entries {
		if e.dir {
			oid, sub := buildTree(e.files)
			e.oid = oid
			objs = append(objs, sub...)
			continue
		}
		b := newObject(typeBlob, e.files[0].data)
		e.oid = b.oid
		objs = append(objs, b)
	}
	// git orders entries by name, a directory's name compared as if it
	// ended in "/".
	key := func(e *entry) string {
		if e.dir {
			return e.name + "/"
		}
		return e.name
	}
	sort.Slice(entries, func(i, j int) bool { return key(entries[i]) < key(entries[j]) })
	var buf bytes.Buffer
	for _, e := range entries {
		mode := "100644"
		if e.dir {
			mode = "40000"
		}
		raw, _ := hex.DecodeString(e.oid)
		buf.WriteString(mode + " " + e.name + "\x00")
		buf.Write(raw)
	}
	t := newObject(typeTree, buf.Bytes())
	return t.oid, append(objs, t)
}

// packBatch is how many objects one compression job takes.
const packBatch = 256

// writePack writes objs to w as a pack without deltas, for git index-pack
// or unpack-objects to check and store: one process for any number of
// objects. Compressing small objects costs more than anything else an
// export does, so batches are compressed on every CPU while earlier ones
// are written, in order.
func writePack(w io.Writer, objs []object) error {
	h := sha1.New()
	mw := io.MultiWriter(w, h)
	hdr := []byte("PACK\x00\x00\x00\x02\x00\x00\x00\x00")
	binary.BigEndian.PutUint32(hdr[8:], uint32(len(objs)))
	if _, err := mw.Write(hdr); err != nil {
		return err
	}
	n := (len(objs) + packBatch - 1) / packBatch
	results := make([]chan []byte, n)
	for i := range results {
		results[i] = make(chan []byte, 1)
	}
	// At most 2×CPUs batches are in flight, so memory stays bounded when
	// git reads slower than we compress.
	slots := make(chan struct{}, 2*runtime.GOMAXPROCS(0))
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for i := 0; i < n; i++ {
			select {
			case slots <- struct{}{}:
			case <-stop:
				return
			}
			go func(i int) {
				results[i] <- compressBatch(objs[i*packBatch : min((i+1)*packBatch, len(objs))])
			}(i)
		}
	}()
	for i := 0; i < n; i++ {
		b := <-results[i]
		<-slots
		if _, err := mw.Write(b); err != nil {
			return err
		}
	}
	_, err := w.Write(h.Sum(nil))
	return err
}

// compressBatch returns the pack entries of objs: each a type-and-size
// header and the zlib stream of the object.
func compressBatch(objs []object) []byte {
	var out bytes.Buffer
	z, _ := zlib.NewWriterLevel(&out, zlib.BestSpeed) // a valid level: no error
	for _, o := range objs {
		var hdr [16]byte
		size := uint64(len(o.data))
		n := 0
		c := byte(o.typ<<4) | byte(size&0x0f)
		size >>= 4
		for size > 0 {
			hdr[n] = c | 0x80
			n++
			c = byte(size & 0x7f)
			size >>= 7
		}
		hdr[n] = c
		out.Write(hdr[:n+1])
		z.Reset(&out)
		z.Write(o.data) // writes to a bytes.Buffer cannot fail
		z.Close()
	}
	return out.Bytes()
}

// Commit identity: the export is the forge speaking, not any user.
const (
	committerName  = "collab forge"
	committerEmail = "forge@collab.invalid"
)

// commitPayload is the unsigned text of a commit; the signature covers it.
func commitPayload(tree, parent string, when int64, message string) []byte {
	var b bytes.Buffer
	b.WriteString("tree " + tree + "\n")
	if parent != "" {
		b.WriteString("parent " + parent + "\n")
	}
	ident := committerName + " <" + committerEmail + "> " + strconv.FormatInt(when, 10) + " +0000\n"
	b.WriteString("author " + ident)
	b.WriteString("committer " + ident)
	b.WriteString("\n")
	b.WriteString(message)
	return b.Bytes()
}

// withSignature inserts a gpgsig header (armored, one line per header
// continuation) after the other headers of payload, as git commit -S does.
func withSignature(payload []byte, armored string) []byte {
	i := bytes.Index(payload, []byte("\n\n"))
	var b bytes.Buffer
	b.Write(payload[:i+1])
	lines := strings.Split(strings.TrimSuffix(armored, "\n"), "\n")
	b.WriteString("gpgsig " + lines[0] + "\n")
	for _, l := range lines[1:] {
		b.WriteString(" " + l + "\n")
	}
	b.Write(payload[i+1:])
	return b.Bytes()
}

// splitSignature separates a raw commit into the payload that was signed
// and the armored signature of its gpgsig header ("" when unsigned).
func splitSignature(raw []byte) (payload []byte, armored string) {
	end := bytes.Index(raw, []byte("\n\n"))
	if end < 0 {
		end = len(raw)
	}
	var out bytes.Buffer
	var sig strings.Builder
	lines := strings.SplitAfter(string(raw[:end+1]), "\n")
	inSig := false
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "gpgsig "):
			inSig = true
			sig.WriteString(strings.TrimPrefix(l, "gpgsig "))
		case inSig && strings.HasPrefix(l, " "):
			sig.WriteString(l[1:])
		default:
			inSig = false
			out.WriteString(l)
		}
	}
	if end < len(raw) {
		out.Write(raw[end+1:])
	}
	return out.Bytes(), sig.String()
}

// commitTree returns the tree oid named in a raw commit.
func commitTree(raw []byte) string {
	if t, ok := strings.CutPrefix(string(raw), "tree "); ok && len(t) >= 40 {
		return t[:40]
	}
	return ""
}
