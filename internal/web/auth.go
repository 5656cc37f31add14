package web

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

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
		p, err := s.ops.Authenticate(r.Context(), strings.TrimSpace(secret))
		if err != nil {
			s.fail(w, r, err)
			return r, false
		}
		caller.principal = p
	} else if c, err := r.Cookie(SessionCookie); err == nil && !isAPI(r) {
		sess, err := s.ops.Session(r.Context(), c.Value)
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
	c := whoOf(r)
	if c.session == nil {
		return fault.New(fault.Unauthenticated, "sign in first")
	}
	if !tokens.CSRFEqual(r.PostFormValue("csrf"), c.session.CSRF) {
		return fault.New(fault.Denied, "the form's CSRF token is missing or stale; reload the page and try again")
	}
	return nil
}

// LoginCookie carries the sign-in form's CSRF token (double submit): a
// page on another site can neither read it nor make the browser send it
// (SameSite=Strict), so its forged post arrives without the token.
const LoginCookie = "collab_login"

// loginData is what the sign-in page shows.
func (s *Server) loginData(r *http.Request, next, csrf string) map[string]any {
	return map[string]any{"Title": "Sign in", "Next": next, "LoginCSRF": csrf, "SSH": s.sshCommand(r.Context())}
}

// loginToken returns the browser's sign-in CSRF token, setting a new one
// when it has none (or a malformed one).
func (s *Server) loginToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(LoginCookie); err == nil && len(c.Value) == 43 {
		return c.Value
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error()) // never happens on Linux
	}
	v := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: LoginCookie, Value: v, Path: "/login", MaxAge: 3600,
		HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteStrictMode})
	return v
}

func (s *Server) pageLogin(w http.ResponseWriter, r *http.Request) {
	csrf := s.loginToken(w, r)
	s.render(w, r, http.StatusOK, "login", s.loginData(r, safeNext(r.URL.Query().Get("next")), csrf))
}

// postLogin signs a browser in with a token. Login CSRF (a page elsewhere
// signing the visitor in as its author) is refused three ways: the
// Origin must be this site's (not another, not "null"), Sec-Fetch-Site
// must not say cross-site or same-site, and the form must carry the
// token of the LoginCookie it was served with.
func (s *Server) postLogin(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := s.checkOrigin(r); err != nil {
		s.fail(w, r, err)
		return
	}
	next := safeNext(r.PostFormValue("next"))
	c, err := r.Cookie(LoginCookie)
	if err != nil || !tokens.CSRFEqual(r.PostFormValue("csrf"), c.Value) {
		s.render(w, r, http.StatusForbidden, "login", s.withError(s.loginData(r, next, s.loginToken(w, r)),
			"The sign-in form was stale or came from another site. Sign in again from this page."))
		return
	}
	cookie, _, err := s.ops.SignIn(r.Context(), r.PostFormValue("token"))
	if err != nil {
		if fault.KindOf(err) == fault.Unauthenticated {
			s.render(w, r, http.StatusUnauthorized, "login", s.withError(s.loginData(r, next, c.Value),
				"That token is not valid. Make one with: "+s.sshCommand(r.Context())+" token new"))
			return
		}
		s.fail(w, r, err)
		return
	}
	s.setCookie(w, cookie)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (s *Server) withError(data map[string]any, msg string) map[string]any {
	data["Error"] = msg
	return data
}

func (s *Server) postLogout(w http.ResponseWriter, r *http.Request) {
	if err := s.checkForm(r); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.ops.SignOut(r.Context(), whoOf(r).cookie); err != nil {
		s.fail(w, r, err)
		return
	}
	s.clearCookie(w)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// checkOrigin refuses a post that a browser says came from elsewhere: an
// Origin of another host or "null" (sandboxed frames, data: URLs, some
// redirects), or Sec-Fetch-Site cross-site or same-site (a sibling
// subdomain is another party too). Clients that send neither (curl,
// older browsers) pass; the CSRF token is the check they meet.
func (s *Server) checkOrigin(r *http.Request) error {
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if o == "null" || err != nil || u.Host != r.Host {
			return fault.New(fault.Denied, "cross-origin form post refused")
		}
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "cross-site", "same-site":
		return fault.New(fault.Denied, "cross-origin form post refused")
	}
	return nil
}

// safeNext keeps a post-login redirect on this site: a local path with
// one leading "/", no "/" or "\" right after it (browsers read "//x" and
// "/\x" as another host), and no control character, also once
// percent-decoded (browsers drop tabs and newlines from URLs, so
// "/<TAB>/evil.example" would become "//evil.example"). Anything else
// is "/".
func safeNext(n string) string {
	if !localPath(n) {
		return "/"
	}
	if d, err := url.PathUnescape(n); err != nil || !localPath(d) {
		return "/"
	}
	return n
}

func localPath(n string) bool {
	if len(n) < 1 || n[0] != '/' || (len(n) > 1 && (n[1] == '/' || n[1] == '\\')) {
		return false
	}
	for _, r := range n {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == utf8.RuneError {
			return false
		}
	}
	return true
}
