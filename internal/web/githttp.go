package web

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/collab-forge/collab"
	"github.com/collab-forge/collab/internal/fault"
	stockgit "github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/hookenv"
	"github.com/collab-forge/collab/internal/hookhost"
	"github.com/collab-forge/collab/internal/ops"
)

// Git over HTTP: collab-web authenticates the request, checks access with
// the same use case as for SSH (ops.Service.Git) and runs stock git's own
// CGI, git http-backend, with the hooks' hand-off in its environment, so a
// push over HTTP is decided by the same pre-receive, proc-receive and
// post-receive as one over SSH. Smart HTTP only: the dumb protocol would
// serve files around the hooks' view of the repository.

// Git's smart HTTP services, as they end a request's path.
const (
	uploadPack  = "git-upload-pack"
	receivePack = "git-receive-pack"
)

// Budgets of a git request.
const (
	// gitQueue is how long a git request waits for a slot before 503.
	gitQueue = 10 * time.Second
	// maxNegotiation bounds the body of a fetch (its wants and haves).
	maxNegotiation = 64 << 20
	// pushSlack is what a push body may carry beyond its pack bound: the
	// commands and push options before the pack.
	pushSlack = 1 << 20
)

// gitRoute is a git request: the repository named by the path before the
// service's suffix, the service, and whether it is the ref advertisement.
type gitRoute struct {
	repo     string
	service  string
	infoRefs bool
	// refused is why a request that looks like git's is not served ("" when
	// it is served): the dumb protocol, git-upload-archive.
	refused string
}

// gitRequest recognises git's smart HTTP requests by their path's end
// (/info/refs, /git-upload-pack, /git-receive-pack) and the dumb
// protocol's and git-upload-archive's, which it refuses.
func gitRequest(r *http.Request) (gitRoute, bool) {
	p := r.URL.Path
	if strings.Contains(p, "/-/") || strings.HasPrefix(p, "/api/") {
		// A page or the API: a file named info/refs in a tree is a blob.
		return gitRoute{}, false
	}
	switch {
	case strings.HasSuffix(p, "/info/refs"):
		g := gitRoute{repo: strings.TrimSuffix(p, "/info/refs"), infoRefs: true}
		switch svc := r.URL.Query().Get("service"); svc {
		case uploadPack, receivePack:
			g.service = svc
		default:
			g.refused = "collab serves git over the smart HTTP protocol only (git 1.6.6 or later)"
		}
		return g.trim(), true
	case strings.HasSuffix(p, "/"+uploadPack):
		return gitRoute{repo: strings.TrimSuffix(p, "/"+uploadPack), service: uploadPack}.trim(), true
	case strings.HasSuffix(p, "/"+receivePack):
		return gitRoute{repo: strings.TrimSuffix(p, "/"+receivePack), service: receivePack}.trim(), true
	case strings.HasSuffix(p, "/git-upload-archive"):
		return gitRoute{repo: strings.TrimSuffix(p, "/git-upload-archive"), refused: "git-upload-archive is not served"}.trim(), true
	}
	return gitRoute{}, false
}

func (g gitRoute) trim() gitRoute {
	g.repo = strings.TrimPrefix(g.repo, "/")
	return g
}

// gitCaller reads a git client's credential: HTTP Basic with any user name
// and a token as the password (what git's credential helpers send), or a
// Bearer token. The web session cookie does not count: a page's visitor
// must not push by visiting a link. "" is anonymous.
func (s *Server) gitCaller(r *http.Request) (string, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", nil
	}
	scheme, cred, _ := strings.Cut(h, " ")
	cred = strings.TrimSpace(cred)
	var secret string
	switch {
	case strings.EqualFold(scheme, "Bearer"):
		secret = cred
	case strings.EqualFold(scheme, "Basic"):
		raw, err := base64.StdEncoding.DecodeString(cred)
		if err != nil {
			return "", fault.New(fault.Unauthenticated, "bad Authorization header")
		}
		_, secret, _ = strings.Cut(string(raw), ":")
	default:
		return "", fault.New(fault.Unauthenticated, "bad Authorization header: want Basic or Bearer")
	}
	if secret == "" {
		return "", fault.New(fault.Unauthenticated, "no token given")
	}
	return s.ops.Authenticate(r.Context(), secret)
}

// serveGit answers one git request and returns r with its caller noted
// for the access log.
func (s *Server) serveGit(w http.ResponseWriter, r *http.Request, g gitRoute) *http.Request {
	principal, err := s.gitCaller(r)
	if err != nil {
		gitChallenge(w, "authentication failed")
		return r
	}
	r = r.WithContext(context.WithValue(r.Context(), whoKey{}, who{principal: principal}))
	if g.refused != "" {
		http.Error(w, g.refused, http.StatusForbidden)
		return r
	}
	push := g.service == receivePack
	if push && principal == "" {
		gitChallenge(w, "authentication required to push")
		return r
	}
	sess, err := s.ops.Git(r.Context(), ops.Actor{Principal: principal}, g.repo, push)
	if err != nil {
		// To the anonymous, a repository that is not public is missing or
		// needs a credential alike: ask for one, so git's helpers send it.
		if principal == "" && fault.KindOf(err) == fault.NotFound {
			gitChallenge(w, "authentication required")
			return r
		}
		s.gitFail(w, r, err)
		return r
	}
	wantType := "application/x-" + g.service + "-request"
	if !g.infoRefs && (r.Method != http.MethodPost || r.Header.Get("Content-Type") != wantType) {
		http.Error(w, "want a POST of "+wantType, http.StatusBadRequest)
		return r
	}
	if g.infoRefs && r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "want GET", http.StatusMethodNotAllowed)
		return r
	}
	select {
	case s.gitSlots <- struct{}{}:
		defer func() { <-s.gitSlots }()
	case <-time.After(gitQueue):
		w.Header().Set("Retry-After", "5")
		http.Error(w, "the forge is busy with other git requests; try again later", http.StatusServiceUnavailable)
		return r
	case <-r.Context().Done():
		return r
	}
	if err := s.runBackend(w, r, g, sess, principal); err != nil {
		s.cfg.Log.WarnContext(r.Context(), "git over http", "REPO", sess.Repo, "service", g.service, "PRINCIPAL", principal, "error", err)
	}
	return r
}

// gitChallenge answers 401 with the challenge git's credential helpers
// answer.
func gitChallenge(w http.ResponseWriter, msg string) {
	w.Header().Set("WWW-Authenticate", `Basic realm="collab"`)
	http.Error(w, msg, http.StatusUnauthorized)
}

// gitFail answers a refusal in plain text, which git prints.
func (s *Server) gitFail(w http.ResponseWriter, r *http.Request, err error) {
	status := fault.HTTPStatus(err)
	if status >= 500 {
		s.cfg.Log.ErrorContext(r.Context(), "git request failed", "path", r.URL.EscapedPath(), "error", err.Error())
	}
	if n := fault.RetryAfterSeconds(err); n > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(n))
	}
	http.Error(w, fault.As(err).Msg, status)
}

// runBackend runs git http-backend for the checked session: the CGI
// variables collab decided (the checked repository's own directory, so git
// resolves no name of its own; the service; the client's protocol version
// and body encoding and nothing else of its request), and for a push the
// hooks' hand-off.
func (s *Server) runBackend(w http.ResponseWriter, r *http.Request, g gitRoute, sess ops.GitSession, principal string) error {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	rc := http.NewResponseController(w)
	idle := newIdleTimer(s.cfg.GitIdle, cancel, rc)
	defer idle.stop()

	own := withoutVar(os.Environ(), "GIT_PROTOCOL")
	var env []string
	var relayed *hookhost.Push
	if g.service == receivePack && !g.infoRefs {
		// The push's hooks run in this process, as serve runs them for
		// SSH: they relay themselves here (hookhost).
		p, err := s.hooks.Start(ctx, principal, sess.Repo, sess.Dir)
		if err != nil {
			s.cfg.Log.WarnContext(ctx, "hook relay", "REPO", sess.Repo, "error", err)
		}
		relayed = p
		defer relayed.Close()
	}
	if g.service == receivePack {
		env = hookenv.GitEnv(own, sess.Handoff)
		env = append(env, relayed.Env()...)
		config := relayed.Config()
		if sess.InputSize > 0 {
			config = append(config, "receive.maxInputSize="+strconv.FormatInt(sess.InputSize, 10))
		}
		env = append(env, gitConfigEnv(config)...)
	} else {
		env = stockgit.CleanEnv(own)
	}
	suffix := "/" + g.service
	if g.infoRefs {
		suffix = "/info/refs"
	}
	env = append(env, "GIT_PROJECT_ROOT="+sess.Dir, "PATH_INFO="+suffix, "GIT_HTTP_EXPORT_ALL=1",
		"REQUEST_METHOD="+r.Method)
	if g.infoRefs {
		env = append(env, "QUERY_STRING=service="+g.service)
	} else {
		env = append(env, "CONTENT_TYPE=application/x-"+g.service+"-request")
	}
	if principal != "" {
		env = append(env, "REMOTE_USER="+principal)
	}
	if v := r.Header.Get("Git-Protocol"); hookenv.ValidProtocol(v) {
		env = append(env, "GIT_PROTOCOL="+v)
	}
	if enc := r.Header.Get("Content-Encoding"); enc == "gzip" || enc == "x-gzip" {
		env = append(env, "HTTP_CONTENT_ENCODING="+enc)
	}

	limit := int64(maxNegotiation)
	if g.service == receivePack && sess.InputSize > 0 {
		limit = sess.InputSize + pushSlack
	}
	cmd := stockgit.HTTPBackend(ctx, s.backend, env)
	cmd.ExtraFiles = relayed.Files()
	var stdin io.WriteCloser
	if !g.infoRefs {
		var err error
		if stdin, err = cmd.StdinPipe(); err != nil {
			return err
		}
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr strings.Builder
	cmd.Stderr = &limitedWriter{w: &stderr, n: 4096}
	if err := cmd.Start(); err != nil {
		s.gitFail(w, r, fault.Wrap(err, "cannot start git"))
		return err
	}
	// The body is copied here rather than by exec, so that this handler
	// knows whether a read of it is still waiting when git is done.
	copied := make(chan struct{})
	if stdin != nil {
		body := &idleReader{r: http.MaxBytesReader(w, r.Body, limit), idle: idle}
		go func() {
			defer close(copied)
			_, _ = io.Copy(stdin, body)
			stdin.Close()
		}()
	} else {
		close(copied)
	}
	werr := relayCGI(w, rc, bufio.NewReaderSize(out, 32<<10), idle)
	err = cmd.Wait()
	select {
	case <-copied:
	default:
		// git is done but a read of the client's body still waits: a body
		// read holds the body's lock, which the server needs to finish the
		// request, so end it.
		idle.unblock()
		<-copied
	}
	if err != nil {
		return fmt.Errorf("git http-backend: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return werr
}

// relayCGI copies a CGI program's answer to w: its header block (a Status
// header sets the code), then the body, flushed as it comes so that git's
// progress and the hooks' messages reach the client while the push runs.
func relayCGI(w http.ResponseWriter, rc *http.ResponseController, out *bufio.Reader, idle *idleTimer) error {
	hdr, err := textproto.NewReader(out).ReadMIMEHeader()
	if err != nil && !(errors.Is(err, io.EOF) && len(hdr) > 0) {
		http.Error(w, "git gave no answer", http.StatusBadGateway)
		return fmt.Errorf("read CGI header: %w", err)
	}
	status := http.StatusOK
	if st := hdr.Get("Status"); st != "" {
		code, _, _ := strings.Cut(st, " ")
		if n, err := strconv.Atoi(code); err == nil && n >= 100 && n < 600 {
			status = n
		}
	}
	for k, vs := range hdr {
		if k == "Status" {
			continue
		}
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(status)
	buf := make([]byte, 32<<10)
	for {
		n, rerr := out.Read(buf)
		if n > 0 {
			idle.touch()
			if _, err := w.Write(buf[:n]); err != nil {
				return err
			}
			if err := rc.Flush(); err != nil {
				return err
			}
		}
		if errors.Is(rerr, io.EOF) {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// idleTimer cancels a git request that made no progress for d, and keeps
// the connection's read and write deadlines (the server's, meant for
// pages) moving with the progress it makes.
type idleTimer struct {
	d  time.Duration
	t  *time.Timer
	rc *http.ResponseController
}

func newIdleTimer(d time.Duration, cancel func(), rc *http.ResponseController) *idleTimer {
	it := &idleTimer{d: d, rc: rc}
	it.t = time.AfterFunc(d, func() {
		cancel()
		it.unblock()
	})
	it.touch()
	return it
}

// unblock ends a read of the client's body that is waiting for bytes (the
// connection is lost for later requests: only for a client that stalled).
func (it *idleTimer) unblock() { _ = it.rc.SetReadDeadline(time.Now()) }

// touch notes progress. The deadlines are pushed out by twice the idle
// bound so that the timer, not the connection, decides.
func (it *idleTimer) touch() {
	it.t.Reset(it.d)
	at := time.Now().Add(2 * it.d)
	_ = it.rc.SetReadDeadline(at)
	_ = it.rc.SetWriteDeadline(at)
}

func (it *idleTimer) stop() { it.t.Stop() }

// idleReader notes progress on every read of the client's body.
type idleReader struct {
	r    io.Reader
	idle *idleTimer
}

func (ir *idleReader) Read(p []byte) (int, error) {
	n, err := ir.r.Read(p)
	if n > 0 {
		ir.idle.touch()
	}
	return n, err
}

// limitedWriter keeps the first n bytes written to it (git's stderr, for
// the log) and drops the rest.
type limitedWriter struct {
	w io.Writer
	n int
}

func (lw *limitedWriter) Write(p []byte) (int, error) {
	if lw.n > 0 {
		k := min(len(p), lw.n)
		lw.n -= k
		_, _ = lw.w.Write(p[:k])
	}
	return len(p), nil
}

// gitConfigEnv is git's configuration kv ("key=value") as the
// environment git reads it from (GIT_CONFIG_COUNT), which git
// http-backend passes on to receive-pack.
func gitConfigEnv(kv []string) []string {
	if len(kv) == 0 {
		return nil
	}
	env := []string{"GIT_CONFIG_COUNT=" + strconv.Itoa(len(kv))}
	for i, c := range kv {
		k, v, _ := strings.Cut(c, "=")
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, k), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, v))
	}
	return env
}

// withoutVar is environ without variable name.
func withoutVar(environ []string, name string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// commitMsgHook serves the commit-msg hook where Gerrit serves it, so that
// git-review -s against an https remote installs it.
func (s *Server) commitMsgHook(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="commit-msg"`)
	_, _ = io.WriteString(w, collab.CommitMsgHook)
}
