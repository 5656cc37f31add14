// Package markdown renders user-written bodies (issues, comments, reviews)
// to HTML that is safe to put on a page: goldmark without raw HTML, then
// bluemonday's user-content policy, so no markup from a user survives.
// REPO#PREFIX cross-references become links, and so does #PREFIX, a
// reference within the repository the body was written in.
package markdown

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"html/template"
	"slices"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"

	"github.com/collab-forge/collab/internal/cache"
	"github.com/collab-forge/collab/internal/issues"
)

// Ref is a REPO#PREFIX cross-reference found in a body (found by
// issues.FindRefs, so that what is stored is what is linked).
type Ref = issues.Ref

// Renderer turns markdown into sanitised HTML. It is safe for concurrent use.
type Renderer struct {
	md     goldmark.Markdown
	policy *bluemonday.Policy
	cache  *cache.Cache[template.HTML]
}

// New returns a renderer whose cross-references link to link(ref).
func New(link func(Ref) string) *Renderer {
	md := goldmark.New(
		goldmark.WithExtensions(extension.GFM),
		goldmark.WithParserOptions(parser.WithASTTransformers(util.Prioritized(&xrefs{link: link}, 500))),
	)
	p := bluemonday.UGCPolicy()
	p.RequireNoReferrerOnLinks(true)
	p.AllowAttrs("type", "checked", "disabled").OnElements("input")
	return &Renderer{md: md, policy: p}
}

// WithCache makes Cached keep up to maxBytes of rendered HTML in memory.
func (r *Renderer) WithCache(maxBytes int64) *Renderer {
	r.cache = cache.New[template.HTML](maxBytes)
	return r
}

// Cached is Render, remembered under key (say "comment:ID") and the hash
// of src, so that a page shown again does not pay for its Markdown again
// (a 1 MiB comment costs a good part of a second) and an edited body is
// never served stale; viewers asking at the same time share one render.
// Without WithCache it is Render.
func (r *Renderer) Cached(repo, key, src string) template.HTML {
	if r.cache == nil {
		return r.Render(repo, src)
	}
	sum := sha256.Sum256([]byte(src))
	k := repo + "\x00" + key + "\x00" + hex.EncodeToString(sum[:])
	return r.cache.Do(k, func() (template.HTML, int64, bool) {
		h := r.Render(repo, src)
		return h, int64(len(h) + len(k)), true
	})
}

// repoKey is the parser context's entry for the repository a body was
// written in.
var repoKey = parser.NewContextKey()

// Render returns the safe HTML of src, written in the repository with key
// repo (#PREFIX links there; "": it is not linked). A body that fails to
// render is shown as escaped text.
func (r *Renderer) Render(repo, src string) template.HTML {
	var b bytes.Buffer
	pc := parser.NewContext()
	pc.Set(repoKey, repo)
	if err := r.md.Convert([]byte(src), &b, parser.WithContext(pc)); err != nil {
		return template.HTML("<pre>" + template.HTMLEscapeString(src) + "</pre>")
	}
	return template.HTML(r.policy.SanitizeBytes(b.Bytes())) //nolint:gosec // sanitised by bluemonday just above
}

// xrefs turns REPO#PREFIX in text nodes into links, leaving code, links
// and autolinks alone.
type xrefs struct{ link func(Ref) string }

func (x *xrefs) Transform(doc *ast.Document, reader text.Reader, pc parser.Context) {
	repo, _ := pc.Get(repoKey).(string)
	src := reader.Source()
	var texts []*ast.Text
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n.Kind() {
		case ast.KindCodeSpan, ast.KindLink, ast.KindAutoLink, ast.KindCodeBlock, ast.KindFencedCodeBlock, ast.KindHTMLBlock, ast.KindRawHTML, ast.KindImage:
			return ast.WalkSkipChildren, nil
		}
		if t, ok := n.(*ast.Text); ok {
			texts = append(texts, t)
		}
		return ast.WalkContinue, nil
	})
	for _, t := range texts {
		x.split(t, src, repo)
	}
}

func (x *xrefs) split(t *ast.Text, src []byte, repo string) {
	seg := t.Segment
	val := seg.Value(src)
	refs := issues.FindRefs(string(val))
	refs = slices.DeleteFunc(refs, func(r issues.RefAt) bool { return r.Repo == "" && repo == "" })
	if len(refs) == 0 {
		return
	}
	parent := t.Parent()
	if parent == nil {
		return
	}
	var nodes []ast.Node
	pos := 0
	for _, r := range refs {
		if r.Start > pos {
			nodes = append(nodes, ast.NewTextSegment(text.NewSegment(seg.Start+pos, seg.Start+r.Start)))
		}
		if r.Repo == "" {
			r.Repo = repo
		}
		l := ast.NewLink()
		l.Destination = []byte(x.link(r.Ref))
		l.AppendChild(l, ast.NewTextSegment(text.NewSegment(seg.Start+r.Start, seg.Start+r.End)))
		nodes = append(nodes, l)
		pos = r.End
	}
	if len(nodes) == 0 {
		return
	}
	last := ast.NewTextSegment(text.NewSegment(seg.Start+pos, seg.Stop))
	last.SetSoftLineBreak(t.SoftLineBreak())
	last.SetHardLineBreak(t.HardLineBreak())
	nodes = append(nodes, last)
	for _, n := range nodes {
		parent.InsertBefore(parent, t, n)
	}
	parent.RemoveChild(parent, t)
}
