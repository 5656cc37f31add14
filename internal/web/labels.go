package web

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/labels"
	"github.com/collab-forge/collab/internal/leases"
	"github.com/collab-forge/collab/internal/ops"
)

// apiSetLabels is PUT …/issues/ID/labels: {"labels": [...]}, the whole set.
func (s *Server) apiSetLabels(w http.ResponseWriter, r *http.Request) error {
	ref, err := idRef(r)
	if err != nil {
		return err
	}
	token, err := leaseToken(r)
	if err != nil {
		return err
	}
	var b struct {
		Labels *[]string `json:"labels"`
	}
	if err := decode(r, &b); err != nil {
		return err
	}
	if b.Labels == nil {
		return fault.New(fault.Usage, `give "labels": the issue's whole new set, e.g. {"labels": ["bug", "ready"]}`)
	}
	ev, err := s.ops.LabelIssue(r.Context(), actor(r), ops.LabelIssue{Issue: ref, Set: b.Labels, LeaseToken: token})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ev)
	return nil
}

// apiNextLease is POST …/leases/next: {"ttl_seconds", "labels"}, the work
// queue's claim (lease acquire --next), keyed by an Idempotency-Key header
// (--request).
func (s *Server) apiNextLease(w http.ResponseWriter, r *http.Request) error {
	name, err := repoName(r)
	if err != nil {
		return err
	}
	var b struct {
		TTLSeconds *int64   `json:"ttl_seconds"`
		Labels     []string `json:"labels"`
	}
	if err := decode(r, &b); err != nil {
		return err
	}
	ttl, err := ttlSeconds(b.TTLSeconds)
	if err != nil {
		return err
	}
	key, keyed := r.Header["Idempotency-Key"]
	in := ops.AcquireNext{Repo: name, Labels: b.Labels, TTL: ttl, Keyed: keyed}
	if keyed {
		if len(key) != 1 {
			return fault.NewField(fault.Usage, leases.FieldRequest, "bad %s: give it once", fault.Field(leases.FieldRequest))
		}
		in.Request = key[0]
	}
	l, err := s.ops.AcquireNext(r.Context(), actor(r), in)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, l)
	return nil
}

// ttlSeconds is a lease request's ttl_seconds as a TTL: absent is
// open-ended; bounded before the conversion can overflow.
func ttlSeconds(n *int64) (time.Duration, error) {
	if n == nil {
		return 0, nil
	}
	if *n < 1 || *n > int64(leases.MaxTTL/time.Second) {
		return 0, fault.New(fault.Usage, "bad ttl_seconds %d: want 1 to %d, or leave it out for an open-ended assignment", *n, int64(leases.MaxTTL/time.Second))
	}
	return time.Duration(*n) * time.Second, nil
}

// issueFilter is what the issue list shows, as its links and forms carry
// it: the state, the search text and the labels every issue must carry.
type issueFilter struct {
	State  string
	Q      string
	Labels []string
}

// filterOf reads ?state=, ?q= and ?label= (repeatable); the labels are
// checked by labels.Set.
func filterOf(r *http.Request, state, text string) (issueFilter, error) {
	ls, err := labels.Set(r.URL.Query()["label"])
	return issueFilter{State: state, Q: text, Labels: ls}, err
}

func (f issueFilter) query(state string, ls []string, after string) string {
	q := url.Values{}
	q.Set("state", state)
	if f.Q != "" {
		q.Set("q", f.Q)
	}
	for _, l := range ls {
		q.Add("label", l)
	}
	if after != "" {
		q.Set("after", after)
	}
	return "?" + q.Encode()
}

// WithState is the list in state s, the rest of the filter kept.
func (f issueFilter) WithState(s string) string { return f.query(s, f.Labels, "") }

// WithLabel narrows the list to issues that also carry l.
func (f issueFilter) WithLabel(l string) string {
	if slices.Contains(f.Labels, l) {
		return f.query(f.State, f.Labels, "")
	}
	return f.query(f.State, append(slices.Clone(f.Labels), l), "")
}

// WithoutLabel drops l from the filter.
func (f issueFilter) WithoutLabel(l string) string {
	return f.query(f.State, slices.DeleteFunc(slices.Clone(f.Labels), func(x string) bool { return x == l }), "")
}

// After is the next page, after the issue id.
func (f issueFilter) After(id string) string { return f.query(f.State, f.Labels, id) }

// First is the first page.
func (f issueFilter) First() string { return f.query(f.State, f.Labels, "") }

// postLabels is the issue page's label form: the whole set, as words
// separated by spaces or commas (write access).
func (s *Server) postLabels(w http.ResponseWriter, r *http.Request) error {
	ref, err := s.formRef(w, r)
	if err != nil {
		return err
	}
	set := strings.FieldsFunc(r.PostFormValue("labels"), func(c rune) bool { return c == ',' || unicode.IsSpace(c) })
	ev, err := s.ops.LabelIssue(r.Context(), actor(r), ops.LabelIssue{Issue: ref, Set: &set})
	if err != nil {
		return s.refusedPost(w, r, "labels", err, s.pageIssue)
	}
	http.Redirect(w, r, pagePath(ev.Repo, "issues", ev.ID), http.StatusSeeOther)
	return nil
}
