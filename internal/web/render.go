package web

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/text"
)

// pages holds one parsed template set per page, each with the layout.
type pages struct {
	sets map[string]*template.Template
}

var pageNames = []string{"error", "login", "repos", "issues", "issue", "patches", "patch", "leases", "repo", "tree", "blob", "commits", "branches", "commit", "dashboard"}

// withDiff are the pages that show a diff (templates/diff.html).
var withDiff = map[string]bool{"patch": true, "commit": true}

func loadPages(s *Server) (*pages, error) {
	funcs := template.FuncMap{
		"display":  reponame.Display,
		"repoPath": repoPath,
		"short": func(id string) string {
			if len(id) > 10 {
				return id[:10]
			}
			return id
		},
		"when":   when,
		"whenp":  when,
		"deref":  deref,
		"derefi": derefInt,
		"query": func(kv ...string) string {
			q := url.Values{}
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i+1] != "" {
					q.Set(kv[i], kv[i+1])
				}
			}
			if len(q) == 0 {
				return ""
			}
			return "?" + q.Encode()
		},
		"add": func(a, b int) int { return a + b },
		// args hands a sub-template the page and one item of it.
		"args": func(page, item any) map[string]any { return map[string]any{"Page": page, "T": item} },
		// A relation chain reads newest first, as on Gerrit.
		"reverse": func(rs []patches.Related) []patches.Related {
			out := slices.Clone(rs)
			slices.Reverse(out)
			return out
		},
		"size":    size,
		"mdc":     s.md.Cached,
		"typed":   typed,
		"join":    func(ss []string) string { return strings.Join(ss, " ") },
		"refusal": refusal,
	}
	p := &pages{sets: map[string]*template.Template{}}
	for _, n := range pageNames {
		files := []string{"templates/layout.html", "templates/" + n + ".html"}
		if withDiff[n] {
			files = append(files, "templates/diff.html")
		}
		t, err := template.New(n).Funcs(funcs).ParseFS(assets, files...)
		if err != nil {
			return nil, fmt.Errorf("parse template %s: %w", n, err)
		}
		p.sets[n] = t
	}
	return p, nil
}

// pageTime is how pages show a time.
const pageTime = "2006-01-02 15:04 UTC"

// when shows a time as pages do: a store.Time, or a stored text time (what
// does not parse is shown as is); nil shows as nothing.
func when(v any) string {
	switch t := v.(type) {
	case store.Time:
		return t.Time().Format(pageTime)
	case *store.Time:
		if t == nil {
			return ""
		}
		return t.Time().Format(pageTime)
	case *string:
		if t == nil {
			return ""
		}
		return when(*t)
	case string:
		p, err := store.ParseTime(t)
		if err != nil {
			return t
		}
		return p.Format(pageTime)
	}
	return fmt.Sprint(v)
}

func derefInt(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// render writes page name with data, adding what the layout needs: the
// caller and the session's CSRF token for forms.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, data map[string]any) {
	c := whoOf(r)
	data["Who"] = c.principal
	if c.session != nil {
		data["CSRF"] = c.session.CSRF
	}
	data["Path"] = r.URL.RequestURI()
	data["Refused"] = refusedOf(r)
	data["Year"] = time.Now().Year()
	var b bytes.Buffer
	if err := s.pages.sets[name].ExecuteTemplate(&b, "layout", data); err != nil {
		s.cfg.Log.ErrorContext(r.Context(), "render page", "page", name, "error", err.Error())
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "private, no-cache")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		// Bidi controls and zero-width characters in anything shown
		// (bodies, titles of old, commit messages, file names, code) are
		// named where they stand, as GitHub warns of hidden characters.
		_, _ = w.Write(text.MarkHidden(b.Bytes()))
	}
}
