package diff

import (
	"fmt"
	"strings"
)

// maxBigFiles bounds how many oversized files are cut out of git's diff by
// pathspec; past it git shows them itself.
const maxBigFiles = 200

// oversized returns the changes of cs that involve a blob larger than
// limit (sizes from git.sizes). git diff reads both sides of an added or
// deleted file whole just to call it binary, so a pushed 2 GB blob would
// cost 2 GB on every view; these are described without being read.
func oversized(cs []change, sizes map[string]int64, limit int64) []change {
	var big []change
	for _, c := range cs {
		if (isBlob(c.old.mode) && sizes[c.old.oid] > limit) || (isBlob(c.new.mode) && sizes[c.new.oid] > limit) {
			big = append(big, c)
		}
	}
	return big
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
