package web

import (
	"context"
	"net/http"
	"net/url"

	"github.com/collab-forge/collab/internal/fault"
)

// refused is a page's form that the forge refused for what was typed in
// it (bad input, an unknown name, a body over its budget, a lease held by
// another): the page is shown again with status 422, the form holding
// what was typed and saying what was wrong, rather than an error page that
// loses the text.
type refused struct {
	form   string
	values url.Values
	msg    string
}

type refusedKey struct{}

// refusedKinds are the refusals about what a form held; others (the
// forge failing, a caller who may not) answer with the error page.
var refusedKinds = map[fault.Kind]bool{fault.Usage: true, fault.TooLarge: true, fault.NotFound: true, fault.Conflict: true, fault.Unprocessable: true}

// refusedPost answers the post of form, refused with err, with page shown
// again in its place (its query the pairs kv, such as the revision the
// form was on); an error of another kind is returned as it is.
func (s *Server) refusedPost(w http.ResponseWriter, r *http.Request, form string, err error, page func(http.ResponseWriter, *http.Request) error, kv ...string) error {
	fe := fault.As(err)
	if !refusedKinds[fe.Kind] {
		return err
	}
	g := r.Clone(context.WithValue(r.Context(), refusedKey{}, &refused{form: form, values: r.PostForm, msg: fe.Msg}))
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	g.Method, g.URL.RawQuery = http.MethodGet, q.Encode()
	w.Header().Set("X-Collab-Refused", "1")
	return page(statusWriter{ResponseWriter: w, status: http.StatusUnprocessableEntity}, g)
}

// refusedOf is the refused form a page is shown again for, or nil.
func refusedOf(r *http.Request) *refused {
	f, _ := r.Context().Value(refusedKey{}).(*refused)
	return f
}

// typed is the template's value of a form's field: what was typed when
// that form was refused, else def.
func typed(f *refused, form, field, def string) string {
	if f == nil || f.form != form {
		return def
	}
	return f.values.Get(field)
}

// refusal is the template's refusal of form ("" when not refused).
func refusal(f *refused, form string) string {
	if f == nil || f.form != form {
		return ""
	}
	return f.msg
}
