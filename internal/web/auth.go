package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/tokens"
)

// SessionCookie is the name of the web session cookie.
const SessionCookie = "collab_session"

type whoKey struct{}

// who is the caller of a request.
type who struct {
	principal string
	// session is set for a signed-in browser; its CSRF token guards forms.
	session *tokens.Session
	cookie  string
}

func whoOf(r *http.Request) who {
	w, _ := r.Context().Value(whoKey{}).(who)
	return w
}

func principalOf(r *http.Request) string { return whoOf(r).principal }

func isAPI(r *http.Request) bool {
	return r.URL.Path == "/api/v1" || strings.HasPrefix(r.URL.Path, "/api/v1/")
}

// authenticate finds the caller: a bearer token anywhere, or the session
// cookie on pages. The API ignores cookies, so a page on another site
// cannot make a signed-in browser call it. A bad bearer token is refused
// outright rather than treated as anonymous, so a script with a revoked
// token learns so instead of seeing less.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	var caller who
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, secret, _ := strings.Cut(h, " ")
		if !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(secret) == "" {
			s.fail(w, r, fault.New(fault.Unauthenticated, "bad Authorization header: want Bearer TOKEN"))
			return r, false
		}
		p, err := tokens.Authenticate(r.Context(), s.cfg.DB, strings.TrimSpace(secret), s.now())
		if err != nil {
			s.fail(w, r, err)
			return r, false
		}
		caller.principal = p
	} else if c, err := r.Cookie(SessionCookie); err == nil && !isAPI(r) {
		sess, err := tokens.LookupSession(r.Context(), s.cfg.DB.R(), c.Value, s.now())
		if err == nil {
			caller = who{principal: sess.Principal, session: &sess, cookie: c.Value}
		} else if fault.KindOf(err) == fault.Unauthenticated {
			s.clearCookie(w)
		} else {
			s.fail(w, r, err)
			return r, false
		}
	}
	return r.WithContext(context.WithValue(r.Context(), whoKey{}, caller)), true
}

func (s *Server) setCookie(w http.ResponseWriter, value string) {
	http.SetCookie(w, &http.Cookie{
		Name: SessionCookie, Value: value, Path: "/",
		MaxAge:   int(tokens.SessionTTL.Seconds()),
		HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteStrictMode,
	})
}

func (s *Server) clearCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{
		Name: SessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteStrictMode,
	})
}

// requireAuth refuses an anonymous API write.
func requireAuth(r *http.Request) error {
	if principalOf(r) == "" {
		return fault.New(fault.Unauthenticated, "authentication required: send Authorization: Bearer TOKEN (make one with 'token new')")
	}
	return nil
}

// checkForm guards a page's form post: a signed-in session, the session's
// CSRF token in the form, and (defence in depth) no foreign Origin.
func (s *Server) checkForm(r *http.Request) error {
	if err := s.checkOrigin(r); err != nil {
		return err
	}
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return fault.New(fault.Denied, "cross-origin form post refused")
	}
	c := whoOf(r)
	if c.session == nil {
		return fault.New(fault.Unauthenticated, "sign in first")
	}
	if !tokens.CSRFEqual(r.PostFormValue("csrf"), c.session.CSRF) {
		return fault.New(fault.Denied, "the form's CSRF token is missing or stale; reload the page and try again")
	}
	return nil
}

func (s *Server) pageLogin(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "login", map[string]any{"Title": "Sign in", "Next": safeNext(r.URL.Query().Get("next"))})
}

func (s *Server) postLogin(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := s.checkOrigin(r); err != nil {
		s.fail(w, r, err)
		return
	}
	secret := r.PostFormValue("token")
	next := safeNext(r.PostFormValue("next"))
	cookie, _, err := tokens.Login(r.Context(), s.cfg.DB, secret, s.now())
	if err != nil {
		if fault.KindOf(err) == fault.Unauthenticated {
			s.render(w, r, http.StatusUnauthorized, "login", map[string]any{"Title": "Sign in", "Next": next,
				"Error": "That token is not valid. Make one with: ssh git@HOST token new"})
			return
		}
		s.fail(w, r, err)
		return
	}
	s.setCookie(w, cookie)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (s *Server) postLogout(w http.ResponseWriter, r *http.Request) {
	if err := s.checkForm(r); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := tokens.Logout(r.Context(), s.cfg.DB, whoOf(r).cookie); err != nil {
		s.fail(w, r, err)
		return
	}
	s.clearCookie(w)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (s *Server) checkOrigin(r *http.Request) error {
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return fault.New(fault.Denied, "cross-origin form post refused")
		}
	}
	return nil
}

// safeNext keeps a post-login redirect on this site.
func safeNext(n string) string {
	if n == "" || !strings.HasPrefix(n, "/") || strings.HasPrefix(n, "//") || strings.HasPrefix(n, "/\\") || strings.ContainsAny(n, "\r\n") {
		return "/"
	}
	return n
}
