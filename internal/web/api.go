package web

import (
	"context"
	"crypto/ed25519"
	"database/sql"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/events"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/issues"
	"github.com/collab-forge/collab/internal/leases"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/principals"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/repos"
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

// readable returns the repositories the caller may read, by name, with
// the caller's access: the objects `repo list --json` prints.
func (s *Server) readable(ctx context.Context, principal string) ([]principals.Readable, error) {
	return principals.ReadableRepos(ctx, s.cfg.DB.R(), principal)
}

func (s *Server) apiRepos(w http.ResponseWriter, r *http.Request) error {
	list, err := s.readable(r.Context(), principalOf(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}

func (s *Server) apiRepo(w http.ResponseWriter, r *http.Request) error {
	key, _, err := s.repoAccess(r, access.Read)
	if err != nil {
		return err
	}
	rp, err := repos.Get(r.Context(), s.cfg.DB.R(), key)
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

func (s *Server) apiIssues(w http.ResponseWriter, r *http.Request) error {
	key, _, err := s.repoAccess(r, access.Read)
	if err != nil {
		return err
	}
	limit, after, err := page(r)
	if err != nil {
		return err
	}
	state := r.URL.Query().Get("state")
	var list []issues.Issue
	if q := strings.TrimSpace(r.URL.Query().Get("q")); q != "" {
		list, err = s.searchIssues(r.Context(), key, state, q, limit, after)
	} else {
		list, err = issues.List(r.Context(), s.cfg.DB.R(), key, state, limit, after, s.now())
	}
	if err != nil {
		return err
	}
	if len(list) > 0 {
		setNext(w, r, len(list), limit, list[len(list)-1].ID)
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}

type issueBody struct {
	Title *string `json:"title"`
	Body  *string `json:"body"`
	State *string `json:"state"`
}

func (s *Server) apiFileIssue(w http.ResponseWriter, r *http.Request) error {
	key, _, err := s.repoAccess(r, access.Read)
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
	is, err := s.fileIssue(r.Context(), key, principalOf(r), deref(b.Title), deref(b.Body))
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/v1/repos/"+url.PathEscape(reponame.Display(key))+"/issues/"+is.ID)
	writeJSON(w, http.StatusCreated, is)
	return nil
}

func (s *Server) fileIssue(ctx context.Context, key, author, title, body string) (issues.Issue, error) {
	var is issues.Issue
	err := s.cfg.DB.Write(ctx, func(tx *sql.Tx) error {
		var err error
		is, err = issues.New(ctx, tx, key, author, title, body, s.now())
		return err
	})
	return is, err
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func (s *Server) apiIssue(w http.ResponseWriter, r *http.Request) error {
	t, err := s.target(r, access.Read, issues.Resolve)
	if err != nil {
		return err
	}
	d, err := issues.Get(r.Context(), s.cfg.DB.R(), t.key, t.id, s.now())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, d)
	return nil
}

func (s *Server) apiPatchIssue(w http.ResponseWriter, r *http.Request) error {
	t, err := s.target(r, access.Read, issues.Resolve)
	if err != nil {
		return err
	}
	token, _, err := leaseToken(r)
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
	is, err := s.changeIssue(r.Context(), t.key, t.id, issues.Edit{
		Principal: principalOf(r), Level: t.lvl, State: b.State, Title: b.Title, LeaseToken: token,
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, is)
	return nil
}

// changeIssue changes an issue's state and/or title in one transaction,
// by the rule of issues.Change that the verbs follow too.
func (s *Server) changeIssue(ctx context.Context, key, id string, e issues.Edit) (issues.Issue, error) {
	var is issues.Issue
	err := s.cfg.DB.Write(ctx, func(tx *sql.Tx) error {
		var err error
		is, _, err = issues.Change(ctx, tx, key, id, e, s.now())
		return err
	})
	return is, err
}

func (s *Server) apiComments(w http.ResponseWriter, r *http.Request) error {
	t, err := s.target(r, access.Read, issues.Resolve)
	if err != nil {
		return err
	}
	limit, after, err := page(r)
	if err != nil {
		return err
	}
	cs, more, err := issues.CommentPage(r.Context(), s.cfg.DB.R(), t.key, t.id, after, "", limit, apiCommentsBytes)
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
	t, err := s.target(r, access.Read, issues.Resolve)
	if err != nil {
		return err
	}
	token, fenced, err := leaseToken(r)
	if err != nil {
		return err
	}
	var b struct {
		Body string `json:"body"`
	}
	if err := decode(r, &b); err != nil {
		return err
	}
	c, err := s.addComment(r.Context(), t.key, t.id, principalOf(r), b.Body, token, fenced)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, c)
	return nil
}

func (s *Server) addComment(ctx context.Context, key, id, principal, body string, token int64, fenced bool) (issues.Comment, error) {
	var c issues.Comment
	err := s.cfg.DB.Write(ctx, func(tx *sql.Tx) error {
		now := s.now()
		if fenced {
			if err := leases.Fence(ctx, tx, key, id, principal, token, now); err != nil {
				return err
			}
		}
		var err error
		c, err = issues.AddComment(ctx, tx, key, id, principal, body, now)
		return err
	})
	return c, err
}

func (s *Server) apiAcquire(w http.ResponseWriter, r *http.Request) error {
	t, err := s.target(r, access.Write, issues.Resolve)
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
	var ttl time.Duration
	if b.TTLSeconds != nil {
		if *b.TTLSeconds < 1 || *b.TTLSeconds > int64(leases.MaxTTL/time.Second) {
			return fault.New(fault.Usage, "bad ttl_seconds %d: want 1 to %d, or leave it out for an open-ended assignment", *b.TTLSeconds, int64(leases.MaxTTL/time.Second))
		}
		ttl = time.Duration(*b.TTLSeconds) * time.Second
	}
	if err := mayForce(b.Force, t); err != nil {
		return err
	}
	var l leases.Lease
	err = s.cfg.DB.Write(r.Context(), func(tx *sql.Tx) error {
		var err error
		l, err = leases.Acquire(r.Context(), tx, t.key, t.id, principalOf(r), ttl, b.Force, s.now())
		return err
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, l)
	return nil
}

func (s *Server) apiRelease(w http.ResponseWriter, r *http.Request) error {
	t, err := s.target(r, access.Write, issues.ResolveIssueOrLease)
	if err != nil {
		return err
	}
	force := r.URL.Query().Get("force") == "true"
	if err := mayForce(force, t); err != nil {
		return err
	}
	var released bool
	err = s.cfg.DB.Write(r.Context(), func(tx *sql.Tx) error {
		var err error
		released, err = leases.Release(r.Context(), tx, t.key, t.id, principalOf(r), force, s.now())
		return err
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]bool{"released": released})
	return nil
}

// mayForce refuses an override of someone else's lease to non-admins.
func mayForce(force bool, t target) error {
	if force && t.lvl < access.Admin {
		return fault.New(fault.Denied, "permission denied: admin access to %s needed to override a lease", reponame.Display(t.key))
	}
	return nil
}

func (s *Server) apiLeases(w http.ResponseWriter, r *http.Request) error {
	key, _, err := s.repoAccess(r, access.Read)
	if err != nil {
		return err
	}
	ls, err := leases.List(r.Context(), s.cfg.DB.R(), key, s.now())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ls)
	return nil
}

func (s *Server) apiPatches(w http.ResponseWriter, r *http.Request) error {
	key, _, err := s.repoAccess(r, access.Read)
	if err != nil {
		return err
	}
	limit, after, err := page(r)
	if err != nil {
		return err
	}
	var out []review.Listed
	err = s.cfg.DB.Read(r.Context(), func(tx *sql.Tx) error {
		list, err := patches.List(r.Context(), tx, key, r.URL.Query().Get("state"), limit, after)
		if err != nil {
			return err
		}
		out = make([]review.Listed, 0, len(list))
		for _, p := range list {
			if p.Reviews, err = patches.Reviews(r.Context(), tx, key, p.ID); err != nil {
				return err
			}
			out = append(out, s.patchView(p))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(out) > 0 {
		setNext(w, r, len(out), limit, out[len(out)-1].ID)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// patchView is the patch object as `patch list --json` prints it.
func (s *Server) patchView(p patches.Patch) review.Listed {
	v := review.Listed{Patch: review.Describe(p)}
	if s.cfg.URL != "" {
		v.URL = s.cfg.URL + pagePath(p.Repo, "patches", p.ID)
	}
	return v
}

func (s *Server) apiPatch(w http.ResponseWriter, r *http.Request) error {
	_, p, tl, err := s.patch(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, review.Shown{Listed: s.patchView(p), Timeline: tl})
	return nil
}

// apiEvents returns the outbox oldest first, only events of repositories
// the caller may read, after the event id ?after=.
func (s *Server) apiEvents(w http.ResponseWriter, r *http.Request) error {
	limit, afterS, err := page(r)
	if err != nil {
		return err
	}
	var after int64
	if afterS != "" {
		after, err = strconv.ParseInt(afterS, 10, 64)
		if err != nil || after < 0 {
			return fault.New(fault.Usage, "bad after %q: want an event id", text.Clip(afterS))
		}
	}
	list, err := s.readable(r.Context(), principalOf(r))
	if err != nil {
		return err
	}
	names := make([]string, len(list))
	for i, rp := range list {
		names[i] = rp.Name
	}
	out, err := events.List(r.Context(), s.cfg.DB.R(), after, names, limit)
	if err != nil {
		return err
	}
	if len(out) > 0 {
		setNext(w, r, len(out), limit, strconv.FormatInt(out[len(out)-1].ID, 10))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) apiReview(w http.ResponseWriter, r *http.Request) error {
	var b struct {
		Verdict  string `json:"verdict"`
		Body     string `json:"body"`
		Revision int    `json:"revision"`
		File     string `json:"file"`
		Line     int    `json:"line"`
	}
	if err := decode(r, &b); err != nil {
		return err
	}
	if b.Verdict == "" {
		b.Verdict = review.Comment
	}
	t, rv, err := s.postReviewOf(r, review.Input{
		Verdict: b.Verdict, Body: b.Body, Revision: b.Revision, File: b.File, Line: b.Line,
		LeaseToken: strings.TrimSpace(r.Header.Get("X-Lease-Token")),
	})
	if err != nil {
		return err
	}
	// As `patch review --json`: the review marked outdated or not.
	revs, err := patches.Revisions(r.Context(), s.cfg.DB.R(), t.key, t.id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, review.Views([]patches.Review{rv}, revs[len(revs)-1].Number)[0])
	return nil
}

// patch reads patch {id} of {repo} with its timeline, for the caller who
// may read it.
func (s *Server) patch(r *http.Request) (target, patches.Patch, []review.Entry, error) {
	t, err := s.target(r, access.Read, patches.Resolve)
	if err != nil {
		return target{}, patches.Patch{}, nil, err
	}
	var p patches.Patch
	var tl []review.Entry
	err = s.cfg.DB.Read(r.Context(), func(tx *sql.Tx) error {
		var err error
		if p, err = patches.Get(r.Context(), tx, t.key, t.id); err != nil {
			return err
		}
		tl, err = review.Timeline(r.Context(), tx, p)
		return err
	})
	return t, p, tl, err
}

// postReviewOf posts in (its verdict, body, anchor and token) as the
// caller's review of patch {id}, after checking the verdict and the access
// it needs; the API and the patch page's form both come through here.
func (s *Server) postReviewOf(r *http.Request, in review.Input) (target, patches.Review, error) {
	if err := review.CheckVerdict(in.Verdict); err != nil {
		return target{}, patches.Review{}, err
	}
	t, err := s.target(r, review.Need(in.Verdict), patches.Resolve)
	if err != nil {
		return target{}, patches.Review{}, err
	}
	dir, err := reponame.Dir(s.cfg.Root.ReposDir(), t.key)
	if err != nil {
		return target{}, patches.Review{}, err
	}
	in.Repo, in.PatchID, in.Author, in.Words = t.key, t.id, principalOf(r), review.Fields
	rv, err := review.Post(r.Context(), s.cfg.DB, dir, in, s.now())
	return t, rv, err
}
