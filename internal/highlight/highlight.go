// Package highlight colours source code for the web pages with chroma,
// line by line, as HTML spans that carry classes only: the colours live in
// one stylesheet (CSS) served as a file, so pages keep a CSP without
// 'unsafe-inline' and no style= attribute is ever written.
package highlight

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"html/template"
	"path"
	"strings"
	"sync"

	"github.com/alecthomas/chroma/v2"
	chtml "github.com/alecthomas/chroma/v2/formatters/html"
	"github.com/alecthomas/chroma/v2/lexers"
	"github.com/alecthomas/chroma/v2/styles"
)

// Prefix starts every class chroma's spans carry, so that they cannot
// clash with the site's own.
const Prefix = "hl-"

// Wrapper is the class of the element that holds highlighted code; the
// stylesheet's rules apply inside it.
const Wrapper = Prefix + "chroma"

// MaxBytes is the most source Lines colours at once; longer text is
// escaped without colour (a lexer's cost grows with its input, and a
// hostile file must not buy seconds of CPU).
const MaxBytes = 256 << 10

// styleName is the chroma style the stylesheet is made from.
const styleName = "github"

// CSS is the stylesheet of the classes Lines emits.
func CSS() ([]byte, error) {
	st := styles.Get(styleName)
	f := chtml.New(chtml.WithClasses(true), chtml.ClassPrefix(Prefix), chtml.WithCSSComments(false))
	var b bytes.Buffer
	if err := f.WriteCSS(&b, st); err != nil {
		return nil, fmt.Errorf("chroma css: %w", err)
	}
	return b.Bytes(), nil
}

// Highlighter finds the lexer of a file name and colours text with it.
// chroma's own lookup matches the name against every glob of every lexer
// (tens of milliseconds a call); a Highlighter asks it once per file
// extension, and once per name only for names that a glob other than
// "*.EXT" could claim (Makefile, CMakeLists.txt). It is safe for
// concurrent use.
type Highlighter struct {
	special []string // globs other than "*.EXT"
	mu      sync.Mutex
	byExt   map[string]chroma.Lexer
	byName  map[string]chroma.Lexer
}

// maxNames bounds the per-name lookups remembered.
const maxNames = 4096

// New returns a Highlighter over chroma's registered lexers.
func New() *Highlighter {
	h := &Highlighter{byExt: map[string]chroma.Lexer{}, byName: map[string]chroma.Lexer{}}
	for _, l := range lexers.GlobalLexerRegistry.Lexers {
		cfg := l.Config()
		for _, g := range append(append([]string(nil), cfg.Filenames...), cfg.AliasFilenames...) {
			if ext, ok := strings.CutPrefix(g, "*."); ok && !strings.ContainsAny(ext, "*?[\\.") {
				continue
			}
			h.special = append(h.special, g)
		}
	}
	return h
}

// lexer is chroma's lexer for file name, or nil.
func (h *Highlighter) lexer(name string) chroma.Lexer {
	base := path.Base(name)
	special := false
	for _, g := range h.special {
		if ok, _ := path.Match(g, base); ok {
			special = true
			break
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if special {
		l, ok := h.byName[base]
		if !ok {
			if len(h.byName) >= maxNames {
				clear(h.byName)
			}
			l = lexers.Match(base)
			h.byName[base] = l
		}
		return l
	}
	ext := path.Ext(base)
	if ext == "" {
		return nil
	}
	l, ok := h.byExt[ext]
	if !ok {
		if len(h.byExt) >= maxNames {
			clear(h.byExt)
		}
		l = lexers.Match("x" + ext)
		h.byExt[ext] = l
	}
	return l
}

// Lines returns src split into lines ("\n" ends a line; a last line
// without one counts), each as safe HTML: escaped text in spans whose
// classes name chroma's token types, for the language of file name name.
// A name no lexer claims, text over MaxBytes, or a done ctx gives the
// escaped text without colour. Lines never holds a newline.
func (h *Highlighter) Lines(ctx context.Context, name, src string) []template.HTML {
	lexer := h.lexer(name)
	if lexer == nil || len(src) > MaxBytes {
		return plain(src)
	}
	out, err := tokens(ctx, chroma.Coalesce(lexer), src)
	if err != nil {
		return plain(src)
	}
	return out
}

// Plain is Lines without colour.
func Plain(src string) []template.HTML { return plain(src) }

func plain(src string) []template.HTML {
	ls := split(src)
	out := make([]template.HTML, len(ls))
	for i, l := range ls {
		out[i] = template.HTML(html.EscapeString(l)) //nolint:gosec // escaped just here
	}
	return out
}

// split cuts src into lines without their "\n"; "" is no line at all.
func split(src string) []string {
	if src == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(src, "\n"), "\n")
}

// tokens runs lexer over src and writes each line's spans. A lexer that
// panics (chroma's iterators may) or a ctx that ends stops it.
func tokens(ctx context.Context, lexer chroma.Lexer, src string) (out []template.HTML, err error) {
	defer func() {
		if v := recover(); v != nil {
			out, err = nil, fmt.Errorf("lexer %s panicked: %v", lexer.Config().Name, v)
		}
	}()
	it, err := lexer.Tokenise(nil, src)
	if err != nil {
		return nil, err
	}
	want := len(split(src))
	out = make([]template.HTML, 0, want)
	var line strings.Builder
	n := 0
	for t := it(); t != chroma.EOF; t = it() {
		if n++; n%1024 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		v := t.Value
		for {
			head, rest, nl := strings.Cut(v, "\n")
			span(&line, t.Type, head)
			if !nl {
				break
			}
			out = append(out, template.HTML(line.String())) //nolint:gosec // spans of escaped text
			line.Reset()
			v = rest
		}
	}
	if line.Len() > 0 {
		out = append(out, template.HTML(line.String())) //nolint:gosec // spans of escaped text
	}
	// Lexers add a final newline; never return more lines than src has.
	for len(out) < want {
		out = append(out, "")
	}
	return out[:want], nil
}

func span(b *strings.Builder, tt chroma.TokenType, v string) {
	if v == "" {
		return
	}
	cls := class(tt)
	if cls == "" {
		b.WriteString(html.EscapeString(v))
		return
	}
	b.WriteString(`<span class="`)
	b.WriteString(cls)
	b.WriteString(`">`)
	b.WriteString(html.EscapeString(v))
	b.WriteString(`</span>`)
}

// class is chroma's class of a token type (its own or its nearest
// ancestor's), as its HTML formatter names them.
func class(t chroma.TokenType) string {
	for t != 0 {
		if cls, ok := chroma.StandardTypes[t]; ok {
			if cls == "" {
				return ""
			}
			return Prefix + cls
		}
		t = t.Parent()
	}
	return ""
}
