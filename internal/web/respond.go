package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gorilla/mux"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/leases"
	"github.com/collab-forge/collab/internal/ops"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/text"
)

var errMethod = &fault.Error{Kind: fault.Usage, Msg: "method not allowed"}

func notFound(what string) error { return fault.New(fault.NotFound, "%s not found", what) }

// fail answers with err: JSON {"error": …} with the contract's status on
// the API, an error page elsewhere. Internal detail goes to the log only.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	err = pastDeadline(r, err)
	err = asHTTP(r, err)
	err = store.Damaged(err)
	fe := fault.As(err)
	msg := fe.Say(fieldWord)
	status := fault.HTTPStatus(err)
	if fe == errMethod {
		status = http.StatusMethodNotAllowed
	}
	if status >= 500 {
		s.cfg.Log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.EscapedPath(), "error", err.Error())
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="collab"`)
	}
	if n := fault.RetryAfterSeconds(err); n > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(n))
	}
	if isAPI(r) || r.URL.Path == "/healthz" {
		obj := map[string]any{}
		for k, v := range fe.Fields {
			obj[k] = v
		}
		obj["error"] = msg
		writeJSON(w, status, obj)
		return
	}
	if status == http.StatusUnauthorized && r.Method == http.MethodGet {
		http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		return
	}
	s.render(w, r, status, "error", map[string]any{"Title": http.StatusText(status), "Status": status, "Message": msg})
}

// handler is an HTTP handler that returns its refusal instead of
// answering it, so that every refusal is answered the same way.
type handler func(w http.ResponseWriter, r *http.Request) error

// h adapts f to http.HandlerFunc: an error f returns is answered by fail.
func (s *Server) h(f handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := f(w, r); err != nil {
			s.fail(w, r, err)
		}
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(true)
	if err := enc.Encode(v); err != nil {
		http.Error(w, `{"error":"internal error"}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// apiBody enforces the API's body rules before any handler runs: a body
// must be application/json (415) and at most MaxBody bytes (413). A
// body-less request of any method is fine. Every write must then be
// signed in (401).
func (s *Server) apiBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > MaxBody {
			s.fail(w, r, fault.New(fault.TooLarge, "request body too large: %d bytes, at most %d", r.ContentLength, MaxBody))
			return
		}
		hasBody := r.ContentLength > 0 || (r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody)
		if hasBody {
			mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
			if err != nil || mt != "application/json" {
				s.fail(w, r, fault.New(fault.Unsupported, "request body must be application/json"))
				return
			}
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if err := requireAuth(r); err != nil {
				s.fail(w, r, err)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// decode reads the JSON body into v. An empty body leaves v as it is;
// unknown fields are refused, so that a misspelt "ttl_seconds" cannot
// silently turn into an open-ended lease.
func decode(r *http.Request, v any) error {
	if r.Body == nil {
		return nil
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return fault.New(fault.TooLarge, "request body too large: at most %d bytes", mbe.Limit)
		}
		return fault.New(fault.Usage, "read request body: %v", err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fault.New(fault.Usage, "bad JSON body: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return fault.New(fault.Usage, "bad JSON body: more than one value")
	}
	return nil
}

// repoName reads the {repo} variable: escaped in the API (org%2Ffoo.git),
// plain on pages, with or without .git.
func repoName(r *http.Request) (string, error) {
	name, err := url.PathUnescape(mux.Vars(r)["repo"])
	if err != nil {
		// A malformed name cannot exist; say so as a missing one would.
		return "", notFound("repository")
	}
	return name, nil
}

func pathVar(r *http.Request, name string) string {
	v, err := url.PathUnescape(mux.Vars(r)[name])
	if err != nil {
		return mux.Vars(r)[name]
	}
	return v
}

// idRef reads the issue or patch {id} of repository {repo}.
func idRef(r *http.Request) (ops.Ref, error) {
	name, err := repoName(r)
	if err != nil {
		return ops.Ref{}, err
	}
	return ops.Ref{Repo: name, ID: pathVar(r, "id")}, nil
}

// actor is the caller, for ops, with whom it acts for (X-On-Behalf-Of,
// X-Via: CONTRACT.md "Writes may carry --on-behalf-of"; ops decides
// whether it may).
func actor(r *http.Request) ops.Actor {
	return ops.Actor{Principal: principalOf(r), OnBehalfOf: r.Header.Get("X-On-Behalf-Of"), Via: r.Header.Get("X-Via")}
}

// fieldWord words an input field the way the API takes it: a JSON field
// (which the pages' forms share), the lease token's header.
func fieldWord(field string) string {
	switch field {
	case ops.FieldLeaseToken:
		return "X-Lease-Token:"
	case ops.FieldOnBehalfOf:
		return "X-On-Behalf-Of:"
	case ops.FieldVia:
		return "X-Via:"
	case leases.FieldRequest:
		return "Idempotency-Key"
	}
	return `"` + field + `"`
}

// asHTTP turns a refusal about the repository into the web's answer: a
// malformed name is a repository that does not exist (404), and an
// anonymous caller who needs more than read is asked to sign in (401).
func asHTTP(r *http.Request, err error) error {
	fe := fault.As(err)
	if fe.Field != ops.FieldRepo {
		return err
	}
	switch {
	case fe.Kind == fault.Usage:
		return notFound("repository")
	case fe.Kind == fault.Denied && principalOf(r) == access.Anonymous:
		return requireAuth(r)
	}
	return err
}

// page reads ?limit= and ?after=.
func page(r *http.Request) (limit int, after string, err error) {
	limit = DefaultLimit
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return 0, "", fault.New(fault.Usage, "bad limit %q: want a positive number", text.Clip(v))
		}
		limit = min(n, MaxLimit)
	}
	return limit, r.URL.Query().Get("after"), nil
}

// leaseToken reads X-Lease-Token: 0 when absent.
func leaseToken(r *http.Request) (int64, error) {
	v := strings.TrimSpace(r.Header.Get("X-Lease-Token"))
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		return 0, fault.New(fault.Usage, "bad X-Lease-Token %q: want a positive integer", text.Clip(v))
	}
	return n, nil
}
