// Package web serves collab's pages and JSON API over the forge database.
//
// Pages are server-rendered html/template that work without JavaScript;
// the JSON API under /api/v1 follows CONTRACT.md. Repository paths on pages
// end at /-/ (as on GitLab), so nested names need no escaping there; the
// API takes them URL-escaped (org%2Ffoo.git), which is why the router
// matches on the encoded path.
package web

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/mux"

	"github.com/collab-forge/collab/internal/browse"
	"github.com/collab-forge/collab/internal/cache"
	"github.com/collab-forge/collab/internal/diff"
	"github.com/collab-forge/collab/internal/events"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/forge"
	stockgit "github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/highlight"
	"github.com/collab-forge/collab/internal/hookhost"
	"github.com/collab-forge/collab/internal/markdown"
	"github.com/collab-forge/collab/internal/ops"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/store"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Limits of a request.
const (
	// MaxBody bounds a request body: a 1 MiB text body plus JSON escaping.
	// docs/web.md names it.
	MaxBody = 2 << 20
	// MaxLimit bounds ?limit= on lists.
	MaxLimit = 200
	// DefaultLimit is a list page's length without ?limit=.
	DefaultLimit = 50
	// DefaultGitSlots is how many git requests run at once by default.
	DefaultGitSlots = 16
	// DefaultGitIdle is how long a git request may make no progress.
	DefaultGitIdle = 60 * time.Second
)

// Config is what the web handler needs.
type Config struct {
	Root forge.Root
	DB   *store.DB
	// URL is the forge's public base URL (no trailing slash); when it is
	// https, session cookies are Secure.
	URL string
	Log *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Deadline bounds the work of one request (0: DefaultDeadline).
	Deadline time.Duration
	// Expensive is how many expensive pages may run at once (0:
	// DefaultExpensive), one client holding at most half of them; past
	// it they wait SlotWait, then answer 503 with Retry-After.
	Expensive int
	// SlotWait is how long an expensive page waits for a slot (0:
	// DefaultSlotWait; negative: not at all).
	SlotWait time.Duration
	// GitSlots is how many git requests (clone, fetch, push over HTTP) may
	// run at once (0: DefaultGitSlots); more wait briefly, then answer 503.
	// They have slots of their own, so pages and git do not starve each
	// other.
	GitSlots int
	// GitIdle cuts a git request that made no progress (no byte from the
	// client nor to it) for this long (0: DefaultGitIdle). There is no
	// total deadline: a large clone that moves is never cut.
	GitIdle time.Duration
	// HookBinary is collab-hook, whose shims a repository's hooks are:
	// where they are exactly those, a push over HTTP runs the root's
	// hooks directory as serve does (internal/hookhost). "": never.
	HookBinary string
	// HookLog is where the hooks of pushes over HTTP log (journal.Open:
	// where they log over SSH too); nil: Log.
	HookLog *slog.Logger
	// NoBranchOrder turns off remembering the branch order of a
	// repository with many (browse.Orders; browse.OrderOffVar).
	NoBranchOrder bool
	// NoCodeMemo turns off remembering the code pages' reads from git
	// (browse.Memo; browse.MemoOffVar).
	NoCodeMemo bool
	// CacheBytes bounds each in-memory cache of rendered text (Markdown,
	// highlighted files); 0 means 16 MiB.
	CacheBytes int64
	// BranchRules, when set, says which branches are protected and how, as
	// one short line per branch name; the overview shows it beside the
	// branch. Nil: no branch shows a rule.
	BranchRules func(ctx context.Context, q store.Querier, repo string) (map[string]string, error)
}

// Server is the web handler.
type Server struct {
	cfg    Config
	ops    *ops.Service
	md     *markdown.Renderer
	pages  *pages
	router *mux.Router
	secure bool
	// slots are the expensive pages' places (costly).
	slots *slots
	// orders remembers the branch order of repositories with many.
	orders *browse.Orders
	// memo remembers the code pages' reads from git (nil: off).
	memo *browse.Memo
	// gitSlots holds a token per git request running (serveGit).
	gitSlots chan struct{}
	// backend is git's http-backend program ("": git's wrapper finds it).
	backend string
	// hooks runs the hooks of pushes over HTTP that relay themselves here.
	hooks *hookhost.Host
	// code caches highlighted files by blob id (immutable, so never stale).
	code *cache.Cache[template.HTML]
	// css is the highlighting stylesheet, made once from chroma's style.
	css []byte
	hl  *highlight.Highlighter
	// ids are the event ids API readers see (eventIDs), keyed by the
	// forge key, read once.
	idsOnce sync.Once
	ids     events.PublicIDs
	idsErr  error
}

// eventIDs is the permutation of event ids /api/v1/events shows, keyed by
// a secret derived from the forge key (a restored backup keeps its ids).
func (s *Server) eventIDs() (events.PublicIDs, error) {
	s.idsOnce.Do(func() {
		k, err := s.cfg.Root.Key()
		if err != nil {
			s.idsErr = fault.Wrap(err, "forge key unavailable")
			return
		}
		s.ids = events.NewPublicIDs(k.Seed())
	})
	return s.ids, s.idsErr
}

// New builds the handler.
func New(cfg Config) (*Server, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Deadline <= 0 {
		cfg.Deadline = DefaultDeadline
	}
	if cfg.Expensive <= 0 {
		cfg.Expensive = DefaultExpensive
	}
	if cfg.SlotWait == 0 {
		cfg.SlotWait = DefaultSlotWait
	}
	if cfg.CacheBytes <= 0 {
		cfg.CacheBytes = 16 << 20
	}
	if cfg.GitSlots <= 0 {
		cfg.GitSlots = DefaultGitSlots
	}
	if cfg.GitIdle <= 0 {
		cfg.GitIdle = DefaultGitIdle
	}
	s := &Server{cfg: cfg, secure: strings.HasPrefix(cfg.URL, "https://"),
		ops:   &ops.Service{DB: cfg.DB, Root: cfg.Root, Now: cfg.Now, Log: cfg.Log, URL: cfg.URL, BranchRules: cfg.BranchRules},
		slots: newSlots(cfg.Expensive), gitSlots: make(chan struct{}, cfg.GitSlots), code: cache.New[template.HTML](cfg.CacheBytes), hl: highlight.New()}
	if !cfg.NoBranchOrder {
		s.orders = &browse.Orders{Now: cfg.Now}
	}
	if !cfg.NoCodeMemo {
		s.memo = browse.NewMemo(cfg.CacheBytes, cfg.Now)
		s.ops.Diffs = diff.NewMemo(cfg.CacheBytes)
	}
	hookLog := cfg.HookLog
	if hookLog == nil {
		hookLog = cfg.Log
	}
	s.hooks = &hookhost.Host{Root: cfg.Root, DB: cfg.DB, URL: cfg.URL, Log: hookLog, Binary: cfg.HookBinary, Via: 1}
	if p, err := stockgit.HTTPBackendPath(context.Background()); err != nil {
		cfg.Log.Warn("git http-backend", "error", err.Error())
	} else {
		s.backend = p
	}
	s.md = markdown.New(func(r markdown.Ref) string {
		return "/" + reponame.Display(r.Repo) + "/-/ref/" + r.Prefix
	}).WithCache(cfg.CacheBytes)
	css, err := highlight.CSS()
	if err != nil {
		return nil, err
	}
	s.css = css
	p, err := loadPages(s)
	if err != nil {
		return nil, err
	}
	s.pages = p
	s.router = s.routes()
	return s, nil
}

// ServeHTTP runs every request through the security headers, panic
// recovery, access log and authentication before the router.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	h := w.Header()
	// Scripts only from /-/static/ (the patch page's keys.js): raw files
	// of repositories are served text/plain with nosniff, so never run.
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; script-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	rec := &statusRecorder{ResponseWriter: w, status: 200}
	// The request as authenticated, for the log (set by within's handler).
	var authed atomic.Pointer[http.Request]
	defer func() {
		if a := authed.Load(); a != nil {
			r = a
		}
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.cfg.Log.ErrorContext(r.Context(), "panic", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v))
			if !rec.wrote {
				s.fail(rec, r, fmt.Errorf("panic: %v", v))
			}
		}
		attrs := []any{"method", r.Method, "path", r.URL.EscapedPath(),
			"status", rec.status, "principal", principalOf(r), "DURATION_MS", time.Since(start).Milliseconds()}
		if u := store.LockUseOf(r.Context()); u.Writes > 0 {
			attrs = append(attrs, u.Attrs()...)
		}
		s.cfg.Log.InfoContext(r.Context(), "request", attrs...)
	}()
	if s.overBudget(rec, r) {
		return
	}
	// Git has its own credentials (no cookie), slots and idle deadline.
	if g, ok := gitRequest(r); ok {
		r = s.serveGit(rec, r, g)
		return
	}
	// One request, one wait for the writer lock however often it writes.
	r = r.WithContext(store.WithWaitBudget(r.Context()))
	r, cancel := s.withDeadline(r)
	defer cancel()
	s.within(rec, r, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, ok := s.authenticate(w, r)
		if !ok {
			return
		}
		authed.Store(r)
		s.router.ServeHTTP(w, r)
	}))
}

type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusRecorder) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection (git over
// HTTP flushes as it goes and moves its deadlines).
func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusRecorder) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

func (s *Server) routes() *mux.Router {
	r := mux.NewRouter().UseEncodedPath()
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		s.fail(w, req, notFound("page"))
	})
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		s.fail(w, req, errMethod)
	})

	r.HandleFunc("/healthz", s.healthz).Methods("GET", "HEAD")
	r.HandleFunc("/tools/hooks/commit-msg", s.commitMsgHook).Methods("GET", "HEAD")
	static, _ := fs.Sub(assets, "static")
	r.HandleFunc("/-/static/highlight.css", s.highlightCSS).Methods("GET", "HEAD")
	r.PathPrefix("/-/static/").Handler(http.StripPrefix("/-/static/", cacheStatic(http.FileServer(http.FS(static))))).Methods("GET", "HEAD")

	api := r.PathPrefix("/api/v1").Subrouter()
	api.MethodNotAllowedHandler = r.MethodNotAllowedHandler
	api.Use(s.apiBody)
	api.HandleFunc("/signing-key", s.h(s.apiSigningKey)).Methods("GET")
	api.HandleFunc("/repos", s.h(s.apiRepos)).Methods("GET")
	api.HandleFunc("/events", s.h(s.apiEvents)).Methods("GET")
	// The contract names nested repositories URL-escaped (org%2Ffoo.git);
	// the same paths with the slashes left in are served too, after every
	// escaped form, with the bare repository route last so that it cannot
	// swallow a longer path.
	for _, rp := range []string{"/repos/{repo}", "/repos/{repo:.+?}"} {
		api.HandleFunc(rp+"/issues", s.h(s.apiIssues)).Methods("GET")
		api.HandleFunc(rp+"/issues", s.h(s.apiFileIssue)).Methods("POST")
		api.HandleFunc(rp+"/issues/{id}", s.h(s.apiIssue)).Methods("GET")
		api.HandleFunc(rp+"/issues/{id}", s.h(s.apiPatchIssue)).Methods("PATCH")
		api.HandleFunc(rp+"/issues/{id}/comments", s.h(s.apiComments)).Methods("GET")
		api.HandleFunc(rp+"/issues/{id}/comments", s.h(s.apiComment)).Methods("POST")
		api.HandleFunc(rp+"/issues/{id}/lease", s.h(s.apiAcquire)).Methods("PUT")
		api.HandleFunc(rp+"/issues/{id}/lease", s.h(s.apiRelease)).Methods("DELETE")
		api.HandleFunc(rp+"/issues/{id}/labels", s.h(s.apiSetLabels)).Methods("PUT")
		api.HandleFunc(rp+"/issues/{id}/links", s.h(s.apiLink)).Methods("POST")
		api.HandleFunc(rp+"/issues/{id}/links", s.h(s.apiUnlink)).Methods("DELETE")
		api.HandleFunc(rp+"/leases/next", s.h(s.apiNextLease)).Methods("POST")
		api.HandleFunc(rp+"/leases", s.h(s.apiLeases)).Methods("GET")
		api.HandleFunc(rp+"/webhooks", s.h(s.apiWebhooks)).Methods("GET")
		api.HandleFunc(rp+"/webhooks", s.h(s.apiAddWebhook)).Methods("POST")
		api.HandleFunc(rp+"/webhooks/{id:[0-9]+}", s.h(s.apiRemoveWebhook)).Methods("DELETE")
		api.HandleFunc(rp+"/patches", s.h(s.apiPatches)).Methods("GET")
		api.HandleFunc(rp+"/patches/{id}", s.h(s.apiPatch)).Methods("GET")
		api.HandleFunc(rp+"/patches/{id}/reviews", s.h(s.apiReview)).Methods("POST")
		api.HandleFunc(rp+"/patches/{id}/publish", s.h(s.apiPublish)).Methods("POST")
		api.HandleFunc(rp+"/patches/{id}/reviews/{comment}/resolve", s.h(s.apiResolve)).Methods("POST")
		s.gateRoutes(api, rp)
	}
	api.HandleFunc("/repos/{repo}", s.h(s.apiRepo)).Methods("GET")
	api.HandleFunc("/repos/{repo:.+?}", s.h(s.apiRepo)).Methods("GET")
	api.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		s.fail(w, req, notFound("API endpoint"))
	})

	r.HandleFunc("/", s.h(s.pageRepos)).Methods("GET", "HEAD")
	r.HandleFunc("/login", s.pageLogin).Methods("GET", "HEAD")
	r.HandleFunc("/-/dashboard", s.h(s.pageDashboard)).Methods("GET", "HEAD")
	r.HandleFunc("/login", s.postLogin).Methods("POST")
	r.HandleFunc("/logout", s.postLogout).Methods("POST")

	// Repository names may hold slashes; every repository page sits under
	// /-/, a segment no repository name can have.
	pr := "/{repo:.+?}/-"
	r.HandleFunc(pr+"/issues", s.h(s.pageIssues)).Methods("GET", "HEAD")
	r.HandleFunc(pr+"/issues", s.h(s.postIssue)).Methods("POST")
	r.HandleFunc(pr+"/issues/{id}", s.h(s.pageIssue)).Methods("GET", "HEAD")
	r.HandleFunc(pr+"/issues/{id}/comments", s.h(s.postComment)).Methods("POST")
	r.HandleFunc(pr+"/issues/{id}/state", s.h(s.postIssueState)).Methods("POST")
	r.HandleFunc(pr+"/issues/{id}/claim", s.h(s.postIssueClaim)).Methods("POST")
	r.HandleFunc(pr+"/issues/{id}/edit", s.h(s.postIssueEdit)).Methods("POST")
	r.HandleFunc(pr+"/patches/{id}/edit", s.h(s.postPatchEdit)).Methods("POST")
	r.HandleFunc(pr+"/issues/{id}/labels", s.h(s.postLabels)).Methods("POST")
	r.HandleFunc(pr+"/issues/{id}/links", s.h(s.postLink)).Methods("POST")
	r.HandleFunc(pr+"/patches", s.h(s.pagePatches)).Methods("GET", "HEAD")
	r.HandleFunc(pr+"/patches/{id}", s.h(s.costly(s.pagePatch))).Methods("GET", "HEAD")
	r.HandleFunc(pr+"/patches/{id}/reviews", s.h(s.postReview)).Methods("POST")
	r.HandleFunc(pr+"/patches/{id}/reviews/{comment}/resolve", s.h(s.postResolve)).Methods("POST")
	r.HandleFunc(pr+"/patches/{id}/submit", s.h(s.postSubmit)).Methods("POST")
	r.HandleFunc(pr+"/leases", s.h(s.pageLeases)).Methods("GET", "HEAD")
	r.HandleFunc(pr+"/ref/{id}", s.h(s.pageRef)).Methods("GET", "HEAD")
	// The code pages share the expensive pages' slots (costly).
	r.HandleFunc(pr+"/tree", s.h(s.costly(s.pageTree))).Methods("GET", "HEAD")
	r.HandleFunc(pr+"/tree/{rest:.*}", s.h(s.costly(s.pageTree))).Methods("GET", "HEAD")
	r.HandleFunc(pr+"/blob/{rest:.*}", s.h(s.costly(s.pageBlob))).Methods("GET", "HEAD")
	r.HandleFunc(pr+"/raw/{rest:.*}", s.h(s.costly(s.pageRaw))).Methods("GET", "HEAD")
	r.HandleFunc(pr+"/branches", s.h(s.costly(s.pageBranches))).Methods("GET", "HEAD")
	r.HandleFunc(pr+"/commits", s.h(s.costly(s.pageCommits))).Methods("GET", "HEAD")
	r.HandleFunc(pr+"/commits/{rest:.*}", s.h(s.costly(s.pageCommits))).Methods("GET", "HEAD")
	r.HandleFunc(pr+"/commit/{oid}", s.h(s.costly(s.pageCommit))).Methods("GET", "HEAD")
	r.HandleFunc("/{repo:.+?}/-", s.h(s.redirectHome)).Methods("GET", "HEAD")
	r.HandleFunc("/{repo:.+?}/-/", s.h(s.redirectHome)).Methods("GET", "HEAD")
	r.HandleFunc("/{repo:[^-].*}", s.h(s.costly(s.pageRepoHome))).Methods("GET", "HEAD")
	return r
}

func cacheStatic(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		h.ServeHTTP(w, r)
	})
}

// highlightCSS serves the colours of highlighted code: a file, so that the
// CSP's style-src 'self' covers it and no page carries a style attribute.
func (s *Server) highlightCSS(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=3600")
	http.ServeContent(w, r, "highlight.css", time.Time{}, bytes.NewReader(s.css))
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	if err := s.ops.Health(r.Context()); err != nil {
		s.cfg.Log.ErrorContext(r.Context(), "health check", "error", err)
		http.Error(w, "database unavailable", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintln(w, "ok")
}

// NewHTTPServer wraps h in an http.Server with timeouts, so that slow
// clients cannot pin connections.
func NewHTTPServer(addr string, h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}
