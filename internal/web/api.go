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
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/repos"
	"github.com/collab-forge/collab/internal/review"
)

func (s *Server) apiSigningKey(w http.ResponseWriter, r *http.Request) {
	k, err := s.cfg.Root.Key()
	if err != nil {
		s.fail(w, r, fault.Wrap(err, "signing key unavailable"))
		return
	}
	pub := k.Public().(ed25519.PublicKey)
	writeJSON(w, http.StatusOK, map[string]string{"algorithm": "ed25519", "public_key": base64.StdEncoding.EncodeToString(pub)})
}

// readable returns the repositories the caller may read, by name.
func (s *Server) readable(ctx context.Context, principal string) ([]repos.Repo, error) {
	all, err := repos.List(ctx, s.cfg.DB.R())
	if err != nil {
		return nil, err
	}
	out := []repos.Repo{}
	for _, rp := range all {
		lvl, err := access.Of(ctx, s.cfg.DB.R(), principal, rp.Name)
		if err != nil {
			return nil, err
		}
		if lvl >= access.Read {
			out = append(out, rp)
		}
	}
	return out, nil
}

func (s *Server) apiRepos(w http.ResponseWriter, r *http.Request) {
	list, err := s.readable(r.Context(), principalOf(r))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *Server) apiRepo(w http.ResponseWriter, r *http.Request) {
	key, _, err := s.repoAccess(r, access.Read)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rp, err := repos.Get(r.Context(), s.cfg.DB.R(), key)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rp)
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
	u := url.URL{Path: r.URL.EscapedPath(), RawQuery: q.Encode()}
	w.Header().Set("Link", fmt.Sprintf("<%s>; rel=\"next\"", u.String()))
}

func (s *Server) apiIssues(w http.ResponseWriter, r *http.Request) {
	key, _, err := s.repoAccess(r, access.Read)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	limit, after, err := page(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	state := r.URL.Query().Get("state")
	var list []issues.Issue
	if q := strings.TrimSpace(r.URL.Query().Get("q")); q != "" {
		list, err = s.searchIssues(r.Context(), key, state, q, limit, after)
	} else {
		list, err = issues.List(r.Context(), s.cfg.DB.R(), key, state, limit, after, s.now())
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if len(list) > 0 {
		setNext(w, r, len(list), limit, list[len(list)-1].ID)
	}
	writeJSON(w, http.StatusOK, list)
}

type issueBody struct {
	Title *string `json:"title"`
	Body  *string `json:"body"`
	State *string `json:"state"`
}

func (s *Server) apiFileIssue(w http.ResponseWriter, r *http.Request) {
	if err := requireAuth(r); err != nil {
		s.fail(w, r, err)
		return
	}
	key, _, err := s.repoAccess(r, access.Read)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var b issueBody
	if err := decode(r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	if b.State != nil {
		s.fail(w, r, fault.New(fault.Usage, "a new issue is open; leave out state"))
		return
	}
	is, err := s.fileIssue(r.Context(), key, principalOf(r), deref(b.Title), deref(b.Body))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/api/v1/repos/"+url.PathEscape(reponame.Display(key))+"/issues/"+is.ID)
	writeJSON(w, http.StatusCreated, is)
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

// issueID resolves {id} against the issues of key.
func (s *Server) issueID(r *http.Request, key string) (string, error) {
	return issues.Resolve(r.Context(), s.cfg.DB.R(), key, pathVar(r, "id"))
}

func (s *Server) apiIssue(w http.ResponseWriter, r *http.Request) {
	key, _, err := s.repoAccess(r, access.Read)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var d issues.Detail
	err = s.cfg.DB.Read(r.Context(), func(tx *sql.Tx) error {
		id, err := issues.Resolve(r.Context(), tx, key, pathVar(r, "id"))
		if err != nil {
			return err
		}
		d, err = issues.Get(r.Context(), tx, key, id, s.now())
		return err
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

func (s *Server) apiPatchIssue(w http.ResponseWriter, r *http.Request) {
	if err := requireAuth(r); err != nil {
		s.fail(w, r, err)
		return
	}
	key, lvl, err := s.repoAccess(r, access.Read)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	token, _, err := leaseToken(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var b issueBody
	if err := decode(r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	if b.Body != nil {
		s.fail(w, r, fault.New(fault.Usage, "the body of an issue cannot be edited; add a comment"))
		return
	}
	if b.State == nil && b.Title == nil {
		s.fail(w, r, fault.New(fault.Usage, "nothing to change: give state (open, closed) or title"))
		return
	}
	id, err := s.issueID(r, key)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	is, err := s.changeIssue(r.Context(), key, id, issues.Edit{
		Principal: principalOf(r), Level: lvl, State: b.State, Title: b.Title, LeaseToken: token,
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, is)
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

func (s *Server) apiComments(w http.ResponseWriter, r *http.Request) {
	key, _, err := s.repoAccess(r, access.Read)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	id, err := s.issueID(r, key)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	cs, err := issues.Comments(r.Context(), s.cfg.DB.R(), key, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, cs)
}

func (s *Server) apiComment(w http.ResponseWriter, r *http.Request) {
	if err := requireAuth(r); err != nil {
		s.fail(w, r, err)
		return
	}
	key, _, err := s.repoAccess(r, access.Read)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	token, fenced, err := leaseToken(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var b struct {
		Body string `json:"body"`
	}
	if err := decode(r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	id, err := s.issueID(r, key)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	c, err := s.addComment(r.Context(), key, id, principalOf(r), b.Body, token, fenced)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, c)
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

func (s *Server) apiAcquire(w http.ResponseWriter, r *http.Request) {
	if err := requireAuth(r); err != nil {
		s.fail(w, r, err)
		return
	}
	key, lvl, err := s.repoAccess(r, access.Write)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var b struct {
		TTLSeconds *int64 `json:"ttl_seconds"`
		Force      bool   `json:"force"`
	}
	if err := decode(r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	var ttl time.Duration
	if b.TTLSeconds != nil {
		if *b.TTLSeconds < 1 || *b.TTLSeconds > int64(leases.MaxTTL/time.Second) {
			s.fail(w, r, fault.New(fault.Usage, "bad ttl_seconds %d: want 1 to %d, or leave it out for an open-ended assignment", *b.TTLSeconds, int64(leases.MaxTTL/time.Second)))
			return
		}
		ttl = time.Duration(*b.TTLSeconds) * time.Second
	}
	if b.Force && lvl < access.Admin {
		s.fail(w, r, fault.New(fault.Denied, "permission denied: admin access to %s needed to override a lease", reponame.Display(key)))
		return
	}
	id, err := s.issueID(r, key)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var l leases.Lease
	err = s.cfg.DB.Write(r.Context(), func(tx *sql.Tx) error {
		var err error
		l, err = leases.Acquire(r.Context(), tx, key, id, principalOf(r), ttl, b.Force, s.now())
		return err
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, l)
}

func (s *Server) apiRelease(w http.ResponseWriter, r *http.Request) {
	if err := requireAuth(r); err != nil {
		s.fail(w, r, err)
		return
	}
	key, lvl, err := s.repoAccess(r, access.Write)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	force := r.URL.Query().Get("force") == "true"
	if force && lvl < access.Admin {
		s.fail(w, r, fault.New(fault.Denied, "permission denied: admin access to %s needed to override a lease", reponame.Display(key)))
		return
	}
	id, err := issues.ResolveIssueOrLease(r.Context(), s.cfg.DB.R(), key, pathVar(r, "id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var released bool
	err = s.cfg.DB.Write(r.Context(), func(tx *sql.Tx) error {
		var err error
		released, err = leases.Release(r.Context(), tx, key, id, principalOf(r), force, s.now())
		return err
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"released": released})
}

func (s *Server) apiLeases(w http.ResponseWriter, r *http.Request) {
	key, _, err := s.repoAccess(r, access.Read)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ls, err := leases.List(r.Context(), s.cfg.DB.R(), key, s.now())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ls)
}

func (s *Server) apiPatches(w http.ResponseWriter, r *http.Request) {
	key, _, err := s.repoAccess(r, access.Read)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	limit, after, err := page(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	state := r.URL.Query().Get("state")
	if state != "" {
		if err := patches.CheckState(state); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	list, err := patches.List(r.Context(), s.cfg.DB.R(), key, state, limit, after)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if len(list) > 0 {
		setNext(w, r, len(list), limit, list[len(list)-1].ID)
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *Server) apiPatch(w http.ResponseWriter, r *http.Request) {
	key, _, err := s.repoAccess(r, access.Read)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var p patches.Patch
	err = s.cfg.DB.Read(r.Context(), func(tx *sql.Tx) error {
		id, err := patches.Resolve(r.Context(), tx, key, pathVar(r, "id"))
		if err != nil {
			return err
		}
		p, err = patches.Get(r.Context(), tx, key, id)
		return err
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

// apiEvents returns the outbox oldest first, only events of repositories
// the caller may read, after the event id ?after=.
func (s *Server) apiEvents(w http.ResponseWriter, r *http.Request) {
	limit, afterS, err := page(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var after int64
	if afterS != "" {
		after, err = strconv.ParseInt(afterS, 10, 64)
		if err != nil || after < 0 {
			s.fail(w, r, fault.New(fault.Usage, "bad after %q: want an event id", clip(afterS)))
			return
		}
	}
	list, err := s.readable(r.Context(), principalOf(r))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := []events.Event{}
	if len(list) > 0 {
		args := []any{after}
		marks := make([]string, len(list))
		for i, rp := range list {
			marks[i] = "?"
			args = append(args, rp.Name)
		}
		args = append(args, limit)
		rows, err := s.cfg.DB.R().QueryContext(r.Context(), `SELECT id, event, repo, actor, at, data FROM events
			WHERE id > ? AND repo IN (`+strings.Join(marks, ",")+`) ORDER BY id LIMIT ?`, args...)
		if err != nil {
			s.fail(w, r, fmt.Errorf("list events: %w", err))
			return
		}
		defer rows.Close()
		for rows.Next() {
			var e events.Event
			var data string
			if err := rows.Scan(&e.ID, &e.Event, &e.Repo, &e.Actor, &e.At, &data); err != nil {
				s.fail(w, r, fmt.Errorf("list events: %w", err))
				return
			}
			e.Data = []byte(data)
			out = append(out, e)
		}
		if err := rows.Err(); err != nil {
			s.fail(w, r, fmt.Errorf("list events: %w", err))
			return
		}
	}
	if len(out) > 0 {
		setNext(w, r, len(out), limit, strconv.FormatInt(out[len(out)-1].ID, 10))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) apiReview(w http.ResponseWriter, r *http.Request) {
	if err := requireAuth(r); err != nil {
		s.fail(w, r, err)
		return
	}
	var b struct {
		Verdict  string `json:"verdict"`
		Body     string `json:"body"`
		Revision int    `json:"revision"`
		File     string `json:"file"`
		Line     int    `json:"line"`
	}
	if err := decode(r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	if b.Verdict == "" {
		b.Verdict = review.Comment
	}
	if err := review.CheckVerdict(b.Verdict); err != nil {
		s.fail(w, r, err)
		return
	}
	key, _, err := s.repoAccess(r, review.Need(b.Verdict))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	id, err := patches.Resolve(r.Context(), s.cfg.DB.R(), key, pathVar(r, "id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	dir, err := reponame.Dir(s.cfg.Root.ReposDir(), key)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rv, err := review.Post(r.Context(), s.cfg.DB, dir, review.Input{
		Repo: key, PatchID: id, Author: principalOf(r), Verdict: b.Verdict, Body: b.Body,
		Revision: b.Revision, File: b.File, Line: b.Line,
		LeaseToken: strings.TrimSpace(r.Header.Get("X-Lease-Token")),
	}, s.now())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, rv)
}
