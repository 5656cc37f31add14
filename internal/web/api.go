package web

import (
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/issues"
	"github.com/collab-forge/collab/internal/ops"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/review"
	"github.com/collab-forge/collab/internal/text"
)

func (s *Server) apiSigningKey(w http.ResponseWriter, r *http.Request) error {
	k, err := s.cfg.Root.Key()
	if err != nil {
		return fault.Wrap(err, "signing key unavailable")
	}
	pub := k.Public().(ed25519.PublicKey)
	writeJSON(w, http.StatusOK, map[string]string{"algorithm": "ed25519", "public_key": base64.StdEncoding.EncodeToString(pub)})
	return nil
}

func (s *Server) apiRepos(w http.ResponseWriter, r *http.Request) error {
	list, err := s.ops.Repos(r.Context(), actor(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}

func (s *Server) apiRepo(w http.ResponseWriter, r *http.Request) error {
	name, err := repoName(r)
	if err != nil {
		return err
	}
	rp, err := s.ops.Repo(r.Context(), actor(r), name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rp)
	return nil
}

// setNext adds a Link: rel="next" header (as GitHub does) when a full page
// came back, so clients can follow it without building URLs.
func setNext(w http.ResponseWriter, r *http.Request, n, limit int, after string) {
	if n < limit || after == "" {
		return
	}
	q := r.URL.Query()
	q.Set("after", after)
	q.Set("limit", strconv.Itoa(limit))
	// The path as it came, still escaped: a nested name's %2F must stay.
	w.Header().Set("Link", fmt.Sprintf("<%s?%s>; rel=\"next\"", r.URL.EscapedPath(), q.Encode()))
}

// listIssues reads the issue list of {repo} as ?state=, ?q=, ?label=
// (repeatable: all must match) and the page ask, with the comment counts when counts; state is the state asked for
// ("" when none).
func (s *Server) listIssues(r *http.Request, state string, counts bool) (list ops.IssueList, limit int, after string, err error) {
	name, err := repoName(r)
	if err != nil {
		return ops.IssueList{}, 0, "", err
	}
	if limit, after, err = page(r); err != nil {
		return ops.IssueList{}, 0, "", err
	}
	list, err = s.ops.ListIssues(r.Context(), actor(r), ops.ListIssues{
		Repo: name, State: state, Limit: limit, After: after, Query: strings.TrimSpace(r.URL.Query().Get("q")), Counts: counts,
		Labels: r.URL.Query()["label"],
	})
	return list, limit, after, err
}

func (s *Server) apiIssues(w http.ResponseWriter, r *http.Request) error {
	list, limit, _, err := s.listIssues(r, r.URL.Query().Get("state"), false)
	if err != nil {
		return err
	}
	if n := len(list.Issues); n > 0 {
		setNext(w, r, n, limit, list.Issues[n-1].ID)
	}
	writeJSON(w, http.StatusOK, list.Issues)
	return nil
}

type issueBody struct {
	Title *string       `json:"title"`
	Body  *string       `json:"body"`
	State *issues.State `json:"state"`
}

func (s *Server) apiFileIssue(w http.ResponseWriter, r *http.Request) error {
	name, err := repoName(r)
	if err != nil {
		return err
	}
	var b issueBody
	if err := decode(r, &b); err != nil {
		return err
	}
	if b.State != nil {
		return fault.New(fault.Usage, "a new issue is open; leave out state")
	}
	is, err := s.ops.FileIssue(r.Context(), actor(r), ops.FileIssue{Repo: name, Title: deref(b.Title), Body: deref(b.Body)})
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/v1/repos/"+url.PathEscape(reponame.Display(is.Repo))+"/issues/"+is.ID)
	writeJSON(w, http.StatusCreated, is)
	return nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func (s *Server) apiIssue(w http.ResponseWriter, r *http.Request) error {
	ref, err := idRef(r)
	if err != nil {
		return err
	}
	limit, after, err := page(r)
	if err != nil {
		return err
	}
	d, err := s.ops.ShowIssue(r.Context(), actor(r), ops.ShowIssue{Issue: ref, After: after, Limit: limit})
	if err != nil {
		return err
	}
	if d.CommentsNext != nil {
		setNext(w, r, limit, limit, *d.CommentsNext)
	}
	writeJSON(w, http.StatusOK, d)
	return nil
}

func (s *Server) apiPatchIssue(w http.ResponseWriter, r *http.Request) error {
	ref, err := idRef(r)
	if err != nil {
		return err
	}
	token, err := leaseToken(r)
	if err != nil {
		return err
	}
	var b issueBody
	if err := decode(r, &b); err != nil {
		return err
	}
	if b.Body != nil {
		return fault.New(fault.Usage, "the body of an issue cannot be edited; add a comment")
	}
	if b.State == nil && b.Title == nil {
		return fault.New(fault.Usage, "nothing to change: give state (open, closed) or title")
	}
	is, _, err := s.ops.EditIssue(r.Context(), actor(r), ops.EditIssue{Issue: ref, State: b.State, Title: b.Title, LeaseToken: token})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, is)
	return nil
}

func (s *Server) apiComments(w http.ResponseWriter, r *http.Request) error {
	ref, err := idRef(r)
	if err != nil {
		return err
	}
	limit, after, err := page(r)
	if err != nil {
		return err
	}
	cs, more, err := s.ops.Comments(r.Context(), actor(r), ops.Comments{Issue: ref, After: after, Limit: limit, MaxBytes: apiCommentsBytes})
	if err != nil {
		return err
	}
	if more {
		setNext(w, r, limit, limit, cs[len(cs)-1].ID)
	}
	writeJSON(w, http.StatusOK, cs)
	return nil
}

// apiCommentsBytes bounds the bodies of one page of the API's comments; a
// page cut short by it still carries the Link to the next.
const apiCommentsBytes = 4 << 20

func (s *Server) apiComment(w http.ResponseWriter, r *http.Request) error {
	ref, err := idRef(r)
	if err != nil {
		return err
	}
	token, err := leaseToken(r)
	if err != nil {
		return err
	}
	var b struct {
		Body string `json:"body"`
	}
	if err := decode(r, &b); err != nil {
		return err
	}
	c, err := s.ops.Comment(r.Context(), actor(r), ops.Comment{Issue: ref, Body: b.Body, LeaseToken: token})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, c)
	return nil
}

func (s *Server) apiAcquire(w http.ResponseWriter, r *http.Request) error {
	ref, err := idRef(r)
	if err != nil {
		return err
	}
	var b struct {
		TTLSeconds *int64 `json:"ttl_seconds"`
		Force      bool   `json:"force"`
	}
	if err := decode(r, &b); err != nil {
		return err
	}
	ttl, err := ttlSeconds(b.TTLSeconds)
	if err != nil {
		return err
	}
	l, err := s.ops.AcquireLease(r.Context(), actor(r), ops.Acquire{Issue: ref, TTL: ttl, Force: b.Force})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, l)
	return nil
}

func (s *Server) apiRelease(w http.ResponseWriter, r *http.Request) error {
	ref, err := idRef(r)
	if err != nil {
		return err
	}
	rel, err := s.ops.ReleaseLease(r.Context(), actor(r), ops.Release{Issue: ref, Force: r.URL.Query().Get("force") == "true"})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]bool{"released": rel.Released})
	return nil
}

func (s *Server) apiLeases(w http.ResponseWriter, r *http.Request) error {
	name, err := repoName(r)
	if err != nil {
		return err
	}
	ls, err := s.ops.Leases(r.Context(), actor(r), name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ls)
	return nil
}

func (s *Server) apiPatches(w http.ResponseWriter, r *http.Request) error {
	name, err := repoName(r)
	if err != nil {
		return err
	}
	limit, after, err := page(r)
	if err != nil {
		return err
	}
	out, err := s.ops.ListPatches(r.Context(), actor(r), ops.ListPatches{Repo: name, State: r.URL.Query().Get("state"), Limit: limit, After: after,
		Reviewer: r.URL.Query().Get("reviewer")})
	if err != nil {
		return err
	}
	if len(out) > 0 {
		setNext(w, r, len(out), limit, out[len(out)-1].ID)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) apiPatch(w http.ResponseWriter, r *http.Request) error {
	ref, err := idRef(r)
	if err != nil {
		return err
	}
	p, err := s.ops.ShowPatch(r.Context(), actor(r), ref)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, p)
	return nil
}

// apiEvents returns the outbox oldest first, only events of repositories
// the caller may read, after the event id ?after=. Ids are public ids
// (events.PublicIDs), so that they show no gap where a repository the
// caller may not read had activity.
func (s *Server) apiEvents(w http.ResponseWriter, r *http.Request) error {
	limit, afterS, err := page(r)
	if err != nil {
		return err
	}
	ids, err := s.eventIDs()
	if err != nil {
		return err
	}
	var after int64
	if afterS != "" && afterS != "0" {
		pub, err := strconv.ParseInt(afterS, 10, 64)
		ok := err == nil
		if ok {
			after, ok = ids.Log(pub)
		}
		if !ok {
			return fault.New(fault.Usage, "bad after %q: want the id of an event this list gave", text.Clip(afterS))
		}
	}
	out, err := s.ops.Events(r.Context(), actor(r), after, limit)
	if err != nil {
		return err
	}
	for i := range out {
		out[i].ID = ids.Public(out[i].ID)
	}
	if len(out) > 0 {
		setNext(w, r, len(out), limit, strconv.FormatInt(out[len(out)-1].ID, 10))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) apiReview(w http.ResponseWriter, r *http.Request) error {
	ref, err := idRef(r)
	if err != nil {
		return err
	}
	var b struct {
		Verdict  string `json:"verdict"`
		Body     string `json:"body"`
		Revision int    `json:"revision"`
		File     string `json:"file"`
		Line     int    `json:"line"`
		Side     string `json:"side"`
		Reply    string `json:"reply"`
		Draft    bool   `json:"draft"`
	}
	if err := decode(r, &b); err != nil {
		return err
	}
	if b.Verdict == "" {
		b.Verdict = review.Comment
	}
	posted, err := s.ops.Review(r.Context(), actor(r), ops.Review{
		Patch: ref, Verdict: b.Verdict, Body: b.Body, Revision: b.Revision, File: b.File, Line: b.Line,
		Side: b.Side, Reply: b.Reply, Draft: b.Draft,
		LeaseToken: strings.TrimSpace(r.Header.Get("X-Lease-Token")),
	})
	if err != nil {
		return err
	}
	// As `patch review --json`: the review marked outdated or not.
	writeJSON(w, http.StatusCreated, posted.Review)
	return nil
}

// apiPublish is POST …/patches/ID/publish: the caller's drafts, with an
// optional verdict and body, as one review; 201 with what was posted.
func (s *Server) apiPublish(w http.ResponseWriter, r *http.Request) error {
	ref, err := idRef(r)
	if err != nil {
		return err
	}
	var b struct {
		Verdict string `json:"verdict"`
		Body    string `json:"body"`
	}
	if err := decode(r, &b); err != nil {
		return err
	}
	out, err := s.ops.PublishDrafts(r.Context(), actor(r), ops.Publish{Patch: ref, Verdict: b.Verdict, Body: b.Body})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, out.Posted)
	return nil
}

// apiResolve is POST …/patches/ID/reviews/COMMENT/resolve (body
// {"resolved": false} reopens): the thread's new state.
func (s *Server) apiResolve(w http.ResponseWriter, r *http.Request) error {
	ref, err := idRef(r)
	if err != nil {
		return err
	}
	b := struct {
		Resolved *bool `json:"resolved"`
	}{}
	if err := decode(r, &b); err != nil {
		return err
	}
	out, err := s.ops.ResolveThread(r.Context(), actor(r), ops.Resolve{Patch: ref, Comment: pathVar(r, "comment"), Unresolve: b.Resolved != nil && !*b.Resolved})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
