// Package serve is the forced command of every forge key: it reads the
// command the client asked for (SSH_ORIGINAL_COMMAND), decides whether the
// principal may run it, and then either replaces itself with stock git
// (upload-pack, upload-archive) on a repository under the root, or runs a
// collab verb. receive-pack it runs as its child, started beside the
// decision and heard by neither side until it is made (receivePack). No
// shell ever sees the client's command.
//
// The early start (git beside the check, for a principal who pushed to
// the repository before: hint.go) is worth 2-8 ms wall a push and costs
// 0.5-4 ms CPU: bench/builds -old . -old-env COLLAB_EARLY_GIT=off -n 61,
// two runs, medians of the paired rounds, on against off: a branch push
// -8.5 and -4.9 ms wall, a refs/for push -2.6 and -6.2 ms, a push to a
// branch no patch targets -2.1 and -3.6 ms. It stays; EarlyOffVar turns
// it off.
package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/argv"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/hookenv"
	"github.com/collab-forge/collab/internal/ops"
	"github.com/collab-forge/collab/internal/pushcheck"
	"github.com/collab-forge/collab/internal/pushlimit"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/shellwords"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/text"
	"github.com/collab-forge/collab/internal/verbs"
)

// DefaultPath is the PATH git gets when serve's own environment has none.
const DefaultPath = git.DefaultPath

// Request is one run of the forced command.
type Request struct {
	Root      forge.Root
	Principal string
	// Command is SSH_ORIGINAL_COMMAND; "" is an interactive login.
	Command string
	// UserAuth is SSH_USER_AUTH: the file in which sshd (ExposeAuthInfo)
	// names the key used; "" when sshd does not expose it.
	UserAuth string
	// Environ is serve's own environment, the source of PATH, HOME,
	// GIT_PROTOCOL and COLLAB_* for git and the hooks.
	Environ []string
	// URL overrides the root's url setting (--url, COLLAB_URL).
	URL    string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Log    *slog.Logger
	Now    func() time.Time
	// Exec replaces the process with git (syscall.Exec); it returns only on
	// failure. Tests record the call instead.
	Exec func(path string, argv, env []string) error
	// Start starts git as a child with stdin and stdout as given, serve's
	// stderr, and files as its fds 3 and up; wait waits for it and
	// returns its exit code. Where it is set, serve starts
	// git-receive-pack so, before its access check, and stays to run the
	// push's hooks on their behalf (internal/relay); nil: serve execs
	// receive-pack too. A cancelled ctx (serve's SIGTERM, or serve
	// refusing the push) passes the signal on to git, as if serve had
	// exec'd it.
	Start func(ctx context.Context, path string, argv, env []string, stdin, stdout *os.File, files []*os.File) (wait func() (int, error), err error)
	// Binary is collab-hook's absolute path, which the repositories' hook
	// shims name. Where it is set and a repository's hooks are exactly
	// those shims, git runs the hook script (relay.Script), which serve
	// answers, as the hooks, from the root's hooks directory
	// (internal/hookdir).
	Binary string
}

func (r *Request) now() time.Time {
	if r.Now == nil {
		return time.Now()
	}
	return r.Now()
}

// gitPrograms maps what clients send to git's subcommand and the access
// it needs.
var gitPrograms = map[string]struct {
	sub  string
	need access.Level
}{
	"git-upload-pack":    {"upload-pack", access.Read},
	"git-upload-archive": {"upload-archive", access.Read},
	"git-receive-pack":   {"receive-pack", access.Write},
}

// Run serves one request and returns the exit code; on success for a git
// command it does not return (Exec replaces the process).
func Run(ctx context.Context, r *Request) int {
	start := time.Now()
	log := r.Log.With("PRINCIPAL", r.Principal)
	jsonOut := false // a verb line asked for --json: refusals are JSON too
	refuse := func(err error, attrs ...any) int {
		msg := fault.Public(err)
		fmt.Fprintf(r.Stderr, "collab: %s\n", text.Line(msg))
		if jsonOut {
			if b, err := json.Marshal(map[string]string{"error": msg}); err == nil {
				_, _ = r.Stdout.Write(append(text.JSON(b), '\n'))
			}
		}
		attrs = append(attrs, "OUTCOME", "refused", "error", err.Error(), "DURATION_MS", time.Since(start).Milliseconds())
		attrs = append(attrs, store.LockUseOf(ctx).Attrs()...)
		log.WarnContext(ctx, "ssh command refused", attrs...)
		return fault.ExitCode(err)
	}
	if err := access.CheckName(r.Principal); err != nil {
		return refuse(err)
	}
	words, err := shellwords.Split(r.Command)
	if err != nil {
		return refuse(err, "command", clip(r.Command))
	}
	if len(words) > 0 {
		if _, isGit := gitProgram(words); !isGit {
			jsonOut = verbs.WantsJSON(words)
		}
	}
	// One request, one wait for the writer lock however often it writes.
	ctx = store.WithWaitBudget(ctx)
	if len(words) > 0 && r.Start != nil {
		if prog, ok := gitProgram(words); ok && gitPrograms[prog].sub == "receive-pack" {
			if code, ok := receivePack(ctx, r, log, words, start, refuse); ok {
				return code
			}
		}
	}
	// One request, one connection: see store.OpenShort.
	db, err := r.Root.OpenShort(ctx)
	if err != nil {
		return refuse(fault.Default(err, "forge database unavailable"))
	}
	defer db.Close()
	if err := checkPrincipal(ctx, db, r.Principal, r.UserAuth); err != nil {
		return refuse(err)
	}
	if len(words) > 0 && words[0] == "scp" {
		return runSCP(r, log, words, start, refuse)
	}
	if len(words) > 0 {
		if prog, ok := gitProgram(words); ok {
			return runGit(ctx, r, db, log, prog, words, start, refuse)
		}
		if strings.HasPrefix(words[0], "git-") || words[0] == "git" {
			return refuse(fault.New(fault.Usage, "unknown git command %q: only git-upload-pack, git-receive-pack and git-upload-archive are served", clip(strings.Join(first2(words), " "))))
		}
	}
	env, err := verbEnv(ctx, r, db, log)
	if err != nil {
		return refuse(err)
	}
	if len(words) == 0 {
		if err := greet(ctx, env); err != nil {
			return refuse(err)
		}
		log.InfoContext(ctx, "ssh greeting", "OUTCOME", "ok", "DURATION_MS", time.Since(start).Milliseconds())
		return 0
	}
	attrs := []any{"verb", strings.Join(first2(words), " ")}
	if key := verbRepo(verbs.App(env), words); key != "" {
		attrs = append(attrs, "REPO", key)
		env.Log = log.With("REPO", key)
	}
	code := verbs.Run(ctx, env, words)
	attrs = append(attrs, env.Notes...)
	attrs = append(attrs, "OUTCOME", outcome(code), "exit", code, "DURATION_MS", time.Since(start).Milliseconds())
	attrs = append(attrs, store.LockUseOf(ctx).Attrs()...)
	log.InfoContext(ctx, "ssh verb", attrs...)
	return code
}

// repoVerbs take the repository as their first positional argument.
var repoVerbs = map[string]bool{"issue": true, "lease": true, "patch": true, "branch": true, "webhook": true}

// verbRepo finds the repository a verb line is about, for the log's REPO
// field, or "" when there is none or it is malformed (the verb itself
// reports that).
func verbRepo(app *cli.App, words []string) string {
	if len(words) < 3 || !repoVerbs[words[0]] {
		return ""
	}
	pos := argv.Positional(app, words)
	if len(pos) == 0 {
		return ""
	}
	return keyOrEmpty(pos[0])
}

func keyOrEmpty(name string) string {
	key, err := reponame.Key(name)
	if err != nil {
		return ""
	}
	return key
}

func runGit(ctx context.Context, r *Request, db *store.DB, log *slog.Logger, prog string, words []string, start time.Time, refuse func(error, ...any) int) int {
	p := gitPrograms[prog]
	args := gitArgs(words)
	if len(args) != 1 {
		return refuse(fault.New(fault.Usage, "usage: %s REPOSITORY (exactly one repository)", prog), "command", prog)
	}
	key, err := reponame.Key(args[0])
	if err != nil {
		return refuse(err, "command", prog)
	}
	log = log.With("REPO", key)
	level, err := (&ops.Service{DB: db}).GitAccess(ctx, r.Principal, key, p.need)
	if err != nil {
		return refuse(err, "command", prog, "REPO", key)
	}
	dir, err := reponame.Dir(r.Root.ReposDir(), key)
	if err != nil {
		return refuse(err, "command", prog, "REPO", key)
	}
	// What was just checked, for pre-receive (Handoff.WriteChecked); set
	// here, never taken from any environment (hookenv.GitEnv drops the hand-off's
	// variables).
	h := hookenv.Handoff{Principal: r.Principal, Root: r.Root.Dir, URL: r.URL,
		Checked: hookenv.Check{Level: level, Repo: key, At: r.now()}}
	argv := []string{"git", p.sub, dir}
	if p.sub == "receive-pack" {
		lim, err := pushLimits(ctx, db)
		if err != nil {
			return refuse(err, "command", prog, "REPO", key)
		}
		rules, err := pushRules(ctx, db, key)
		if err != nil {
			return refuse(err, "command", prog, "REPO", key)
		}
		h.Limits, h.Rules = &lim, rules
		argv = withInputSize(argv, lim.InputSize)
	}
	env := hookenv.GitEnv(r.Environ, h)
	git, err := lookPath("git", hookenv.Getenv(env)("PATH"))
	if err != nil {
		return refuse(fault.Wrap(err, "git is not installed on the forge"), "command", prog, "REPO", key)
	}
	log.InfoContext(ctx, "ssh git", "command", prog, "OUTCOME", "exec", "DURATION_MS", time.Since(start).Milliseconds())
	// Nothing of ours may stay open in git: the database goes first.
	db.Close()
	err = r.Exec(git, argv, env)
	return refuse(fault.Wrap(err, "cannot start git"), "command", prog, "REPO", key)
}

// gitArgs are the arguments of git's transport command words, in either
// spelling.
func gitArgs(words []string) []string {
	if words[0] == "git" {
		return words[2:]
	}
	return words[1:]
}

// pushLimits are the push limits, read beside the access check:
// pre-receive takes them from the hand-off, and git bounds the pack with
// one (receive.maxInputSize, always the current setting).
func pushLimits(ctx context.Context, db *store.DB) (pushlimit.Limits, error) {
	return (&ops.Service{DB: db}).PushLimits(ctx)
}

// pushRules are the repository's branch rules, read beside the access
// check so that pre-receive decides a push without opening the database
// (hookenv.Handoff.Stamped).
func pushRules(ctx context.Context, db *store.DB, key string) (map[string]pushcheck.Rule, error) {
	return (&ops.Service{DB: db}).PushRules(ctx, key)
}

// withInputSize bounds the pack git receives (receive.maxInputSize);
// 0 is no bound.
func withInputSize(argv []string, n int64) []string {
	if n <= 0 {
		return argv
	}
	return withConfig(argv, "receive.maxInputSize="+strconv.FormatInt(n, 10))
}

// withConfig returns git's argv with "-c KV" for each kv before its
// subcommand.
func withConfig(argv []string, kv ...string) []string {
	out := append(make([]string, 0, len(argv)+2*len(kv)), argv[0])
	for _, c := range kv {
		out = append(out, "-c", c)
	}
	return append(out, argv[1:]...)
}

// gitProgram recognises git's own transport commands, in both spellings.
func gitProgram(words []string) (string, bool) {
	if _, ok := gitPrograms[words[0]]; ok {
		return words[0], true
	}
	if words[0] == "git" && len(words) > 1 {
		if _, ok := gitPrograms["git-"+words[1]]; ok {
			return "git-" + words[1], true
		}
	}
	return "", false
}

// checkPrincipal refuses a principal that no longer exists or is disabled,
// and, where sshd names the key used, a key that is no longer the
// principal's (ops.Service.Admit).
func checkPrincipal(ctx context.Context, db *store.DB, name, userAuth string) error {
	var keys [][2]string
	if userAuth != "" {
		var err error
		if keys, err = authKeys(userAuth); err != nil {
			return &fault.Error{Kind: fault.Unauthenticated, Msg: "access denied: cannot read the key sshd used", Err: err}
		}
		if len(keys) == 0 {
			return fault.New(fault.Unauthenticated, "access denied: not authenticated with a public key")
		}
	}
	return (&ops.Service{DB: db}).Admit(ctx, name, keys)
}

// authKeys reads sshd's ExposeAuthInfo file: one "METHOD [DETAILS]" line per
// successful authentication, "publickey TYPE BASE64" for keys.
func authKeys(path string) ([][2]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open SSH_USER_AUTH: %w", err)
	}
	defer f.Close()
	var out [][2]string
	sc := bufio.NewScanner(io.LimitReader(f, 1<<20))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 3 && fields[0] == "publickey" {
			out = append(out, [2]string{fields[1], fields[2]})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read SSH_USER_AUTH: %w", err)
	}
	return out, nil
}

func verbEnv(ctx context.Context, r *Request, db *store.DB, log *slog.Logger) (*verbs.Env, error) {
	url, sshURL, err := (&ops.Service{DB: db}).SiteURLs(ctx)
	if err != nil {
		return nil, err
	}
	if r.URL != "" {
		url = r.URL
	}
	now := r.Now
	if now == nil {
		now = db.Now // the record's clock (store.DB.Now)
	}
	return &verbs.Env{
		Root:      r.Root,
		DB:        db,
		Principal: r.Principal,
		Stdin:     r.Stdin,
		Stdout:    r.Stdout,
		Stderr:    r.Stderr,
		Now:       now,
		URL:       strings.TrimRight(url, "/"),
		SSH:       sshURL,
		Log:       log,
	}, nil
}

// greet answers an interactive login the way gitolite's info does: who you
// are, and what you may do where.
func greet(ctx context.Context, env *verbs.Env) error {
	rs, err := env.Ops().Repos(ctx, ops.Actor{Principal: env.Principal})
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "hello %s, this is collab; you have no shell here.\n\n", env.Principal)
	if len(rs) == 0 {
		b.WriteString("You cannot read any repository yet; ask the forge's admin for a grant.\n")
	} else {
		b.WriteString("Your repositories:\n")
		for _, repo := range rs {
			fmt.Fprintf(&b, "  %-6s %s\n", repo.Access, reponame.Display(repo.Name))
		}
	}
	fmt.Fprintf(&b, "\nVerbs (%s VERB …): %s; 'help' lists them.\n",
		forge.SSHCommand(env.SSH, env.URL), verbs.Overview())
	if len(rs) > 0 && env.SSH != "" {
		fmt.Fprintf(&b, "Clone: git clone %s\n", forge.CloneURL(env.SSH, rs[0].Name))
	}
	if len(rs) > 0 && env.URL != "" {
		fmt.Fprintf(&b, "Over HTTPS, with a token (token new) as the password: git clone %s\n", forge.HTTPCloneURL(env.URL, rs[0].Name))
	}
	fmt.Fprintf(&b, "Gerrit's git-review logs in as you unless told: %s\n", verbs.GitReviewUser(env.SSH))
	_, err = io.WriteString(env.Stdout, b.String())
	return err
}

// lookPath finds an executable named file in the colon-separated list path.
func lookPath(file, path string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue // a relative PATH entry would depend on the cwd
		}
		p := filepath.Join(dir, file)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New(file + " not found in PATH " + path)
}

func outcome(code int) string {
	if code == 0 {
		return "ok"
	}
	return "refused"
}

func first2(w []string) []string {
	if len(w) > 2 {
		return w[:2]
	}
	return w
}

func clip(s string) string {
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}
