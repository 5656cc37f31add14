package diff

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// maxBigFiles bounds how many oversized files are cut out of git's diff by
// pathspec; past it git shows them itself.
const maxBigFiles = 200

// bigChanges returns the changes of a..b that involve a blob larger than
// limit. git diff reads both sides of an added or deleted file whole just
// to call it binary, so a pushed 2 GB blob would cost 2 GB on every view;
// these are left out of git's diff and described without being read.
func (g git) bigChanges(ctx context.Context, a, b string, limit int64) ([]change, error) {
	cs, err := g.changes(ctx, a, b)
	if err != nil {
		return nil, err
	}
	return g.oversized(ctx, cs, limit)
}

// oversized returns the changes of cs that involve a blob larger than limit.
func (g git) oversized(ctx context.Context, cs []change, limit int64) ([]change, error) {
	var oids []string
	for _, c := range cs {
		for _, e := range []entry{c.old, c.new} {
			if isBlob(e.mode) {
				oids = append(oids, e.oid)
			}
		}
	}
	if len(oids) == 0 {
		return nil, nil
	}
	out, err := g.run(ctx, strings.NewReader(strings.Join(oids, "\n")+"\n"), "cat-file", "--batch-check=%(objectname) %(objectsize)")
	if err != nil {
		return nil, err
	}
	size := map[string]int64{}
	for _, l := range strings.Split(out, "\n") {
		if oid, n, ok := strings.Cut(l, " "); ok {
			if v, err := strconv.ParseInt(n, 10, 64); err == nil {
				size[oid] = v
			}
		}
	}
	var big []change
	for _, c := range cs {
		if (isBlob(c.old.mode) && size[c.old.oid] > limit) || (isBlob(c.new.mode) && size[c.new.oid] > limit) {
			big = append(big, c)
		}
	}
	return big, nil
}

func isBlob(mode string) bool { return strings.HasPrefix(mode, "100") || mode == "120000" }

// excludes are the pathspecs that leave cs out of a diff.
func excludes(cs []change) []string {
	var out []string
	for _, c := range cs {
		out = append(out, ":(exclude,literal)"+c.src)
		if c.dst != c.src {
			out = append(out, ":(exclude,literal)"+c.dst)
		}
	}
	return out
}

// binaryStanza is what git diff prints for a binary change, written
// without reading either blob.
func binaryStanza(c change) string {
	var b strings.Builder
	src, dst := "a/"+c.src, "b/"+c.dst
	fmt.Fprintf(&b, "diff --git %s %s\n", quote(src), quote(dst))
	switch {
	case c.old.mode == "":
		fmt.Fprintf(&b, "new file mode %s\n", c.new.mode)
		src = "/dev/null"
	case c.new.mode == "":
		fmt.Fprintf(&b, "deleted file mode %s\n", c.old.mode)
		dst = "/dev/null"
	default:
		if c.src != c.dst {
			if c.old.oid == c.new.oid {
				b.WriteString("similarity index 100%\n")
			}
			fmt.Fprintf(&b, "rename from %s\nrename to %s\n", quote(c.src), quote(c.dst))
		}
		if c.old.mode != c.new.mode {
			fmt.Fprintf(&b, "old mode %s\nnew mode %s\n", c.old.mode, c.new.mode)
		}
	}
	if c.old.oid == c.new.oid {
		return b.String()
	}
	idx := fmt.Sprintf("index %s..%s", abbrev(c.old.oid), abbrev(c.new.oid))
	if c.old.mode != "" && c.old.mode == c.new.mode {
		idx += " " + c.old.mode
	}
	fmt.Fprintf(&b, "%s\nBinary files %s and %s differ\n", idx, quote(src), quote(dst))
	return b.String()
}

func abbrev(oid string) string {
	if oid == "" {
		return "0000000"
	}
	return oid[:7] // git's default abbreviation
}

// quote quotes a path the way git does with core.quotePath (the default):
// C-style, in double quotes, when it holds a quote, a backslash, a control
// character or a non-ASCII byte.
func quote(p string) string {
	need := false
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			need = true
			break
		}
	}
	if !need {
		return p
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\v':
			b.WriteString(`\v`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if c < 0x20 || c >= 0x7f {
				fmt.Fprintf(&b, `\%03o`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
