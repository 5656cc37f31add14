package web

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"html/template"
	"path"
	"strconv"
	"strings"

	"github.com/collab-forge/collab/internal/cache"
	"github.com/collab-forge/collab/internal/diff"
	"github.com/collab-forge/collab/internal/highlight"
	"github.com/collab-forge/collab/internal/patches"
)

// dfile is one file of a diff as the patch page shows it.
type dfile struct {
	N       int    // 1-based; the file's anchor is #f-N
	Path    string // the new path (the old one for a deletion)
	OldPath string // set when the file was renamed or copied
	Status  string // added, deleted, renamed, copied, modified
	Added   int
	Removed int
	Binary  bool
	Meta    []string // git's extended header lines worth showing
	Hunks   []dhunk
	// Skipped says why the diff leaves the file out ("" when shown).
	Skipped string
}

// Anchor is the id of the file's header in the diff.
func (f dfile) Anchor() string { return "f-" + strconv.Itoa(f.N) }

type dhunk struct {
	Header string
	Lines  []*dline // in the unified view's order
	Rows   []drow   // the side-by-side view
}

// dline is a line of a hunk: numbered on the old side (del, ctx), the new
// side (add, ctx), or neither (a "\ No newline" note).
type dline struct {
	Kind     string // add, del, ctx, note
	Old, New int
	Sign     string
	Text     string
	HTML     template.HTML
	// Threads are the inline threads anchored here (either side).
	Threads []*thread
	// FormOld and FormNew: the page opens the comment form here, for
	// that side's line (?cf=FILE&cs=SIDE&cl=LINE).
	FormOld, FormNew bool
}

// thread is an inline comment and its replies, in order.
type thread struct {
	Root    patches.Review
	Replies []patches.Review
}

// Comments are the thread's comments, the first one first.
func (t *thread) Comments() []patches.Review {
	return append([]patches.Review{t.Root}, t.Replies...)
}

// drow is a row of the side-by-side view: a deleted line beside the added
// line that replaced it, or a context line on both sides.
type drow struct {
	Left, Right *dline
}

// Threads are the inline threads of the row, either side's.
func (r drow) Threads() []*thread {
	var out []*thread
	if r.Left != nil {
		out = append(out, r.Left.Threads...)
	}
	if r.Right != nil && r.Right != r.Left {
		out = append(out, r.Right.Threads...)
	}
	return out
}

// Form says whether the row carries the comment form.
func (r drow) Form() bool {
	return r.Left != nil && (r.Left.FormOld || r.Left.FormNew) || r.Right != nil && (r.Right.FormOld || r.Right.FormNew)
}

// parseDiff reads git's unified diff into files, numbering both sides.
func parseDiff(text string) []*dfile {
	var files []*dfile
	var f *dfile
	var h *dhunk
	oldN, newN := 0, 0
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "diff --git "):
			f = &dfile{N: len(files) + 1, Status: "modified"}
			f.OldPath, f.Path = gitPaths(strings.TrimPrefix(l, "diff --git "))
			files = append(files, f)
			h = nil
			continue
		case f == nil:
			continue // text before the first file
		}
		if h == nil {
			switch {
			case strings.HasPrefix(l, "@@"):
			case strings.HasPrefix(l, "--- "):
				if p := strings.TrimPrefix(l, "--- "); p != "/dev/null" {
					f.OldPath = stripPrefix(unquoteGit(p), "a/")
				}
				continue
			case strings.HasPrefix(l, "+++ "):
				if p := strings.TrimPrefix(l, "+++ "); p != "/dev/null" {
					f.Path = stripPrefix(unquoteGit(p), "b/")
				}
				continue
			case strings.HasPrefix(l, "new file mode"):
				f.Status = "added"
				f.Meta = append(f.Meta, l)
				continue
			case strings.HasPrefix(l, "deleted file mode"):
				f.Status = "deleted"
				f.Meta = append(f.Meta, l)
				continue
			case strings.HasPrefix(l, "rename from "):
				f.Status, f.OldPath = "renamed", unquoteGit(strings.TrimPrefix(l, "rename from "))
				continue
			case strings.HasPrefix(l, "rename to "):
				f.Path = unquoteGit(strings.TrimPrefix(l, "rename to "))
				continue
			case strings.HasPrefix(l, "copy from "):
				f.Status, f.OldPath = "copied", unquoteGit(strings.TrimPrefix(l, "copy from "))
				continue
			case strings.HasPrefix(l, "copy to "):
				f.Path = unquoteGit(strings.TrimPrefix(l, "copy to "))
				continue
			case strings.HasPrefix(l, "Binary files "):
				f.Binary = true
				f.Meta = append(f.Meta, "binary file")
				continue
			case strings.HasPrefix(l, "index "):
				continue
			default:
				f.Meta = append(f.Meta, l) // mode changes, similarity
				continue
			}
		}
		if strings.HasPrefix(l, "@@") {
			f.Hunks = append(f.Hunks, dhunk{Header: l})
			h = &f.Hunks[len(f.Hunks)-1]
			oldN, newN = hunkStart(l)
			continue
		}
		d := &dline{Text: l}
		switch {
		case strings.HasPrefix(l, "+"):
			d.Kind, d.Sign, d.New, d.Text = "add", "+", newN, l[1:]
			newN++
			f.Added++
		case strings.HasPrefix(l, "-"):
			d.Kind, d.Sign, d.Old, d.Text = "del", "-", oldN, l[1:]
			oldN++
			f.Removed++
		case strings.HasPrefix(l, " "):
			d.Kind, d.Sign, d.Old, d.New, d.Text = "ctx", " ", oldN, newN, l[1:]
			oldN++
			newN++
		default:
			d.Kind = "note" // "\ No newline at end of file"
		}
		h.Lines = append(h.Lines, d)
	}
	for _, f := range files {
		if f.Status == "modified" && f.OldPath != "" && f.OldPath != f.Path {
			f.Status = "renamed"
		}
		if f.OldPath == f.Path {
			f.OldPath = ""
		}
	}
	return files
}

// hunkStart reads "@@ -a,b +c,d @@": the first old and new line numbers.
func hunkStart(h string) (oldN, newN int) {
	f := strings.Fields(h)
	num := func(s, sign string) int {
		s = strings.TrimPrefix(s, sign)
		s, _, _ = strings.Cut(s, ",")
		n, _ := strconv.Atoi(s)
		return n
	}
	if len(f) >= 3 {
		oldN, newN = num(f[1], "-"), num(f[2], "+")
	}
	return oldN, newN
}

// gitPaths reads the paths of a "diff --git a/X b/Y" line. They are only
// a fallback (---/+++ and rename lines say it better): with spaces in
// names the split is a guess, exact when both paths are equal.
func gitPaths(s string) (oldPath, newPath string) {
	if strings.HasPrefix(s, `"`) {
		if a, rest, ok := cutQuoted(s); ok {
			b := strings.TrimPrefix(rest, " ")
			if strings.HasPrefix(b, `"`) {
				b, _, _ = cutQuoted(b)
			}
			return stripPrefix(a, "a/"), stripPrefix(b, "b/")
		}
	}
	if n := len(s); n%2 == 1 && s[:n/2] == "a"+s[n/2+2:] && strings.HasPrefix(s[n/2+1:], "b/") {
		p := s[2 : n/2]
		return p, p
	}
	a, b, _ := strings.Cut(s, " b/")
	return stripPrefix(a, "a/"), b
}

func stripPrefix(s, p string) string { return strings.TrimPrefix(s, p) }

// cutQuoted unquotes the C-style quoted string s starts with and returns
// the rest after it.
func cutQuoted(s string) (string, string, bool) {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return unquoteGit(s[:i+1]), s[i+1:], true
		}
	}
	return s, "", false
}

// unquoteGit undoes git's core.quotePath quoting ("…" with C escapes and
// octal bytes); an unquoted path is returned as it is.
func unquoteGit(s string) string {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return s
	}
	in := s[1 : len(s)-1]
	var b strings.Builder
	for i := 0; i < len(in); i++ {
		c := in[i]
		if c != '\\' || i+1 == len(in) {
			b.WriteByte(c)
			continue
		}
		i++
		switch e := in[i]; e {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'v':
			b.WriteByte('\v')
		case 'f':
			b.WriteByte('\f')
		case 'r':
			b.WriteByte('\r')
		default:
			if e >= '0' && e <= '7' && i+2 < len(in) {
				if n, err := strconv.ParseUint(in[i:i+3], 8, 8); err == nil {
					b.WriteByte(byte(n))
					i += 2
					continue
				}
			}
			b.WriteByte(e)
		}
	}
	return b.String()
}

// maxDiffColour bounds the text a patch page colours (chroma reads a few
// hundred KiB a second); the rest of the diff is shown plain.
const maxDiffColour = 128 << 10

// colourer colours text with a Highlighter and remembers the result by
// the text's hash and the lexer's file name, so that a diff or a file
// viewed again costs no lexing.
type colourer struct {
	hl    *highlight.Highlighter
	cache *cache.Cache[template.HTML]
}

func (c colourer) lines(ctx context.Context, name, src string) []template.HTML {
	sum := sha256.Sum256([]byte(src))
	k := "colour\x00" + path.Base(name) + "\x00" + hex.EncodeToString(sum[:])
	return splitHTML(c.cache.Do(k, func() (template.HTML, int64, bool) {
		ls := c.hl.Lines(ctx, path.Base(name), src)
		joined := make([]string, len(ls))
		for i, l := range ls {
			joined[i] = string(l)
		}
		h := template.HTML(strings.Join(joined, "\n")) //nolint:gosec // highlight's escaped lines
		return h, int64(len(h) + len(k)), ctx.Err() == nil
	}))
}

// splitHTML undoes the join above: highlighted lines hold no newline.
func splitHTML(h template.HTML) []template.HTML {
	parts := strings.Split(string(h), "\n")
	out := make([]template.HTML, len(parts))
	for i, p := range parts {
		out[i] = template.HTML(p) //nolint:gosec // cut from highlight's escaped lines
	}
	return out
}

// diffView is a rendered diff: its files (those the text shows, then
// those it skipped), and the inline comments no shown line took.
type diffView struct {
	Files    []*dfile
	Added    int
	Removed  int
	Rest     []patches.Review
	Coloured bool // false once the highlighting budget ran out
}

// buildDiff parses res, colours its lines within highlight.MaxBytes for
// the whole page, places the inline comments under their new-side lines
// and pairs lines for the side-by-side view.
func buildDiff(ctx context.Context, hl colourer, res diff.Result, inline []patches.Review) diffView {
	files := parseDiff(res.Text)
	v := diffView{Coloured: true}
	budget := maxDiffColour
	for _, f := range files {
		budget -= colour(ctx, hl, f, budget)
		if budget <= 0 {
			v.Coloured = false
		}
		v.Added += f.Added
		v.Removed += f.Removed
	}
	v.Rest = place(files, inline)
	for _, f := range files {
		for i := range f.Hunks {
			f.Hunks[i].Rows = pair(f.Hunks[i].Lines)
		}
	}
	for _, sk := range res.Skipped {
		f := &dfile{N: len(files) + 1, Path: sk.Path, Status: "skipped", Skipped: sk.Reason}
		if sk.OldPath != sk.Path {
			f.OldPath = sk.OldPath
		}
		files = append(files, f)
	}
	v.Files = files
	return v
}

// colour highlights f's lines, each side as one text so that a lexer
// sees its context (a comment or string spanning lines), and returns the
// bytes it coloured; over budget the lines are escaped without colour.
func colour(ctx context.Context, hl colourer, f *dfile, budget int) int {
	var oldSide, newSide []*dline
	var oldText, newText strings.Builder
	for _, h := range f.Hunks {
		for _, d := range h.Lines {
			switch d.Kind {
			case "del":
				oldSide = append(oldSide, d)
				oldText.WriteString(d.Text + "\n")
			case "add":
				newSide = append(newSide, d)
				newText.WriteString(d.Text + "\n")
			case "ctx":
				newSide = append(newSide, d)
				newText.WriteString(d.Text + "\n")
				oldSide = append(oldSide, &dline{})
				oldText.WriteString(d.Text + "\n")
			default:
				d.HTML = template.HTML(template.HTMLEscapeString(d.Text)) //nolint:gosec // escaped
			}
		}
	}
	used := oldText.Len() + newText.Len()
	name := f.Path
	lines := func(src string) []template.HTML {
		if used > budget {
			return highlight.Plain(src)
		}
		return hl.lines(ctx, name, src)
	}
	// Context lines take the new side's colours; the old side's copies
	// (empty placeholders above) only keep the two texts in step.
	for i, h := range lines(oldText.String()) {
		if i < len(oldSide) {
			oldSide[i].HTML = h
		}
	}
	for i, h := range lines(newText.String()) {
		if i < len(newSide) {
			newSide[i].HTML = h
		}
	}
	if used > budget {
		return 0
	}
	return used
}

// place puts each inline thread under the line its first comment names
// (on its side: the old side's line numbers are the base's) and returns
// the comments whose line the diff does not show. Replies follow their
// thread wherever it is.
func place(files []*dfile, inline []patches.Review) []patches.Review {
	type anchor struct {
		file string
		old  bool
		line int
	}
	at := map[anchor]*dline{}
	for _, f := range files {
		oldPath := f.Path
		if f.OldPath != "" {
			oldPath = f.OldPath
		}
		for _, h := range f.Hunks {
			for _, d := range h.Lines {
				if d.New > 0 {
					at[anchor{f.Path, false, d.New}] = d
				}
				if d.Old > 0 {
					at[anchor{oldPath, true, d.Old}] = d
				}
			}
		}
	}
	threads := map[string]*thread{}
	var rest []patches.Review
	for _, rv := range inline {
		if rv.Thread != nil && *rv.Thread != rv.ID {
			if t := threads[*rv.Thread]; t != nil {
				t.Replies = append(t.Replies, rv)
				continue
			}
		}
		old := rv.Side != nil && *rv.Side == patches.SideOld
		if d := at[anchor{deref(rv.File), old, derefInt(rv.Line)}]; d != nil {
			t := &thread{Root: rv}
			d.Threads = append(d.Threads, t)
			threads[rv.ID] = t
			continue
		}
		rest = append(rest, rv)
	}
	return rest
}

// openForm marks the line of file n, side (patches.SideOld or SideNew)
// and line number where the page shows the comment form; it reports the
// file's path, or "" when the diff has no such line.
func openForm(files []*dfile, n int, side string, line int) string {
	for _, f := range files {
		if f.N != n {
			continue
		}
		for _, h := range f.Hunks {
			for _, d := range h.Lines {
				switch {
				case side == patches.SideOld && d.Old == line:
					d.FormOld = true
					if f.OldPath != "" {
						return f.OldPath
					}
					return f.Path
				case side == patches.SideNew && d.New == line:
					d.FormNew = true
					return f.Path
				}
			}
		}
	}
	return ""
}

// pair lays a hunk's lines out side by side: a run of deletions beside
// the run of additions that follows it, context on both sides.
func pair(lines []*dline) []drow {
	var rows []drow
	for i := 0; i < len(lines); {
		d := lines[i]
		switch d.Kind {
		case "del", "add":
			var dels, adds []*dline
			for i < len(lines) && lines[i].Kind == "del" {
				dels = append(dels, lines[i])
				i++
			}
			for i < len(lines) && lines[i].Kind == "add" {
				adds = append(adds, lines[i])
				i++
			}
			for k := 0; k < max(len(dels), len(adds)); k++ {
				var r drow
				if k < len(dels) {
					r.Left = dels[k]
				}
				if k < len(adds) {
					r.Right = adds[k]
				}
				rows = append(rows, r)
			}
		case "ctx":
			rows = append(rows, drow{Left: d, Right: d})
			i++
		default:
			rows = append(rows, drow{Left: d})
			i++
		}
	}
	return rows
}
