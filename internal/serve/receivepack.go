package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/hookdir"
	"github.com/collab-forge/collab/internal/hookenv"
	"github.com/collab-forge/collab/internal/hookhost"
	"github.com/collab-forge/collab/internal/hookrun"
	"github.com/collab-forge/collab/internal/ops"
	"github.com/collab-forge/collab/internal/pushcheck"
	"github.com/collab-forge/collab/internal/pushlimit"
	"github.com/collab-forge/collab/internal/relay"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/store"
)

// receivePack runs a push: git-receive-pack as serve's child, started
// before serve opens the database so that git's start runs beside the
// access check, with nothing passing between git and the client until
// the check has passed (held): git's output goes out once it has, the
// client's input goes in once the facts the hooks need are in the late
// hand-off (hookenv.Late) and it is sealed. Where it can
// (hookhost.OpenDirect), it has git run the hook script from the root's
// hooks directory, which hands serve all three hooks (relay.ScriptServer),
// run with serve's database: a push then starts no process that opens it.
// Otherwise (a repository whose hooks are not collab's shims) the
// repository's hooks run collab-hook, which reads the hand-off; so does a
// hook that cannot reach serve (serve killed).
//
// It goes in three steps, each of which may refuse: start (git held,
// beside the check where it may be), admit (the check, the push limits)
// and run (git heard, the hand-off sealed, the hooks served).
//
// ok is false, with nothing done, where git cannot be started so (a bad
// command line, no such repository, no memfd for the hand-off): Run then
// goes its ordinary way, which refuses or execs git.
func receivePack(ctx context.Context, r *Request, log *slog.Logger, words []string, start time.Time, refuse func(error, ...any) int) (code int, ok bool) {
	args := gitArgs(words)
	if len(args) != 1 {
		return 0, false
	}
	key, err := reponame.Key(args[0])
	if err != nil {
		return 0, false
	}
	p := &push{r: r, log: log.With("REPO", key), key: key, start: start}
	p.refuse = func(err error) int { return refuse(err, "command", receivePackProg, "REPO", key) }
	defer p.close()
	ok, err = p.startGit(ctx)
	switch {
	case err != nil:
		return p.refuse(err), true
	case !ok:
		return 0, false
	}
	lim, err := p.admit(ctx)
	if err != nil {
		return p.fail(err), true
	}
	return p.run(ctx, lim), true
}

const receivePackProg = "git-receive-pack"

// push is one receive-pack that serve runs.
type push struct {
	r      *Request
	log    *slog.Logger
	key    string
	start  time.Time
	refuse func(error) int

	dir     string
	db      *store.DB // nil until the access check
	checked hookenv.Check
	early   bool // git started before the access check
	gf      *gitFiles
	git     string // git's path
	hint    int64  // the pack's bound git was started with
	g       *held
}

func (p *push) close() {
	if p.g != nil {
		p.g.close()
	}
	if p.gf != nil {
		p.gf.close()
	}
	if p.db != nil {
		p.db.Close()
	}
}

// fail refuses the push once git has started: git, if it runs, is
// stopped first.
func (p *push) fail(err error) int {
	if p.g != nil {
		p.g.stop()
		p.g = nil
	}
	return p.refuse(err)
}

// argv is git's command line with the pack's bound inputSize.
func (p *push) argv(inputSize int64) []string {
	return withConfig(withInputSize([]string{"git", "receive-pack", p.dir}, inputSize), p.gf.config...)
}

// startGit starts git, held, with the bound the last push found (the
// bound is an argument of git's). git starts before the access check,
// beside it, only for a principal who passed it for this repository
// before (writers): no one else makes git start in a repository, and a
// stranger's refusal costs the same for a private repository as for a
// missing one. ok is false, with nothing done, where git cannot be
// started so; err is a refusal.
func (p *push) startGit(ctx context.Context) (ok bool, err error) {
	r := p.r
	p.early = wroteBefore(r.Root, r.Principal, p.key)
	if !p.early {
		var level access.Level
		if p.db, level, err = checkWriter(ctx, r, p.key); err != nil {
			return false, err
		}
		p.checked = hookenv.Check{Level: level, Repo: p.key}
		if err := noteWriter(r.Root, r.Principal, p.key); err != nil {
			p.log.WarnContext(ctx, "writers", "error", err.Error())
		}
	}
	if p.dir, err = reponame.Dir(r.Root.ReposDir(), p.key); err != nil {
		return false, nil
	}
	h := hookenv.Handoff{Principal: r.Principal, Root: r.Root.Dir, URL: r.URL}
	if p.gf, ok = openGitFiles(ctx, r, p.log, p.dir, hookenv.GitEnv(r.Environ, h)); !ok {
		return false, nil
	}
	if p.git, err = lookPath("git", hookenv.Getenv(p.gf.env)("PATH")); err != nil {
		return false, nil
	}
	p.hint = inputSizeHint(r.Root)
	if p.g, err = startHeld(ctx, r, p.git, p.argv(p.hint), p.gf.env, p.gf.files); err != nil {
		return false, nil
	}
	return true, nil
}

// admit makes the access check where startGit did not, and reads the push
// limits; git is started again where the pack's bound has changed since
// the last push.
func (p *push) admit(ctx context.Context) (pushlimit.Limits, error) {
	r := p.r
	if p.early {
		var level access.Level
		var err error
		if p.db, level, err = checkWriter(ctx, r, p.key); err != nil {
			return pushlimit.Limits{}, err
		}
		p.checked = hookenv.Check{Level: level, Repo: p.key}
	}
	p.checked.At = r.now()
	lim, err := pushLimits(ctx, p.db)
	if err != nil || lim.InputSize == p.hint {
		return lim, err
	}
	p.g.stop()
	if err := writeInputSizeHint(r.Root, lim.InputSize); err != nil {
		p.log.WarnContext(ctx, "push limits", "error", err.Error())
	}
	if p.g, err = startHeld(ctx, r, p.git, p.argv(lim.InputSize), p.gf.env, p.gf.files); err != nil {
		return lim, fault.Wrap(err, "cannot start git")
	}
	return lim, nil
}

// run lets the pusher push: git's ref advertisement goes out, and while
// the client answers it serve reads what the hooks need. The client's
// answer reaches git only once they have it (listen), so no hook runs
// before the hand-off is sealed. It returns git's exit code.
func (p *push) run(ctx context.Context, lim pushlimit.Limits) int {
	r, gf := p.r, p.gf
	p.g.speak(r.Stdout)
	h := hookenv.Handoff{Principal: r.Principal, Root: r.Root.Dir, URL: r.URL, Checked: p.checked, Limits: &lim}
	pairs, skips, err := gf.handOff(ctx, p.log, p.db, p.key, &h)
	if err != nil {
		return p.fail(err)
	}
	p.log.InfoContext(ctx, "ssh git", "command", receivePackProg, "OUTCOME", "exec", "HOOKS", gf.hooks, "DURATION_MS", time.Since(p.start).Milliseconds())
	prefetch := ops.NewPrefetch(context.WithoutCancel(ctx))
	input := io.Reader(r.Stdin)
	if gf.direct == nil && len(h.Rules) > 0 {
		if input, err = gateDownInput(ctx, p.log, r.Stdin, p.dir, p.key, h.Rules); err != nil {
			prefetch.Close()
			return p.fail(err)
		}
	}
	if gf.direct != nil {
		go gf.direct.Scripts.Serve(gf.hookRunner(ctx, r, p.db, p.key, pairs, prefetch, skips))
	}
	if err := p.g.listen(input, gf.handoff); err != nil {
		prefetch.Close()
		return p.fail(fault.Wrap(err, "cannot start git"))
	}
	code, err, cerr := p.g.finish()
	// A hook killed while serve ran it has its work finished here.
	if gf.direct != nil {
		gf.direct.Close()
	}
	prefetch.Close()
	if skips != nil {
		// The moves whose post-receive pre-receive skipped are scanned
		// as far as they went; recorded now that their refs have moved.
		skips.Record(context.WithoutCancel(ctx), &ops.Push{Root: r.Root, DB: p.db, Repo: p.key, Principal: r.Principal, Log: r.Log, Now: r.now})
	}
	if err != nil {
		fmt.Fprintf(r.Stderr, "collab: %s\n", fault.Public(fault.Wrap(err, "cannot start git")))
		p.log.ErrorContext(ctx, "ssh git", "OUTCOME", "error", "error", err.Error())
		return 1
	}
	if cerr != nil {
		p.log.WarnContext(ctx, "ssh git", "OUTCOME", "error", "error", fmt.Sprintf("copy git's output: %v", cerr))
	}
	if err := git.Open(p.dir).Detach("gc", "--auto", "--quiet"); err != nil {
		p.log.WarnContext(ctx, "gc", "OUTCOME", "error", "error", err.Error())
	}
	return code
}

// gitFiles are what serve hands git-receive-pack besides its command
// line: the late hand-off (fd 3), and the hook script, the post-receive
// gate and the script relay's pipes where serve runs the hooks itself
// (direct), and the environment and configuration that name them
// (docs/push.md has the table of fds and variables).
type gitFiles struct {
	handoff *hookenv.Late
	// direct is the hook script, the gate and their pipes; nil where the
	// repository's own hooks run (its shims).
	direct *hookhost.Direct
	files  []*os.File
	env    []string
	config []string
	hooks  string // "direct" or "shims", for the journal
}

// openGitFiles makes the files for a push into dir; ok is false where
// one cannot be made (serve then runs git its ordinary way).
func openGitFiles(ctx context.Context, r *Request, log *slog.Logger, dir string, env []string) (gf *gitFiles, ok bool) {
	gf = &gitFiles{env: env, hooks: "shims"}
	var err error
	if gf.handoff, err = hookenv.OpenLate(); err != nil {
		log.WarnContext(ctx, "hand-off", "error", err.Error())
		return nil, false
	}
	gf.files = []*os.File{gf.handoff.Git} // hookenv.LateFD
	// git's housekeeping check (gc --auto), which receive-pack would run
	// while the pusher waits, runs once git is done, detached.
	gf.config = []string{"receive.autogc=false"}
	gf.direct = hookhost.OpenDirect(r.Root.Dir, dir, r.Binary, 0, r.Log.With("PRINCIPAL", r.Principal))
	if gf.direct != nil {
		// Only with the script and the gate as its fds may git be
		// pointed at the directory: without them git would find no hooks
		// there, and skip them (so runGit's exec of git never names it).
		gf.files = append(gf.files, gf.direct.Script, gf.direct.Gate) // hookdir.FD, hookenv.GateFD
		// A shut gate is a hook git skips, which it would say to the
		// pusher.
		gf.config = append(gf.config, "core.hooksPath="+hookdir.Dir(r.Root.Dir), "advice.ignoredHook=false")
		gf.hooks = "direct"
	}
	gf.env = append(gf.env, hookenv.HandoffFDVar+"="+strconv.Itoa(hookenv.LateFD))
	if gf.direct != nil {
		gf.files = append(gf.files, gf.direct.Pipes[0], gf.direct.Pipes[1]) // relay.ReqFD, relay.AnsFD
	}
	return gf, true
}

func (gf *gitFiles) close() {
	if gf.direct != nil {
		gf.direct.Close()
	}
	if gf.handoff != nil {
		gf.handoff.Close()
	}
}

// handOff reads the branch rules and, where serve runs the hooks itself,
// the branches the merge scan follows, and writes them with h into the
// late hand-off, sealed; h gets the rules. It returns the hand-off's
// pairs, and the skips pre-receive may record (nil: post-receive always
// runs).
func (gf *gitFiles) handOff(ctx context.Context, log *slog.Logger, db *store.DB, key string, h *hookenv.Handoff) ([]string, *ops.Skips, error) {
	rules, err := pushRules(ctx, db, key)
	if err != nil {
		return nil, nil, err
	}
	h.Rules = rules
	pairs := h.Pairs()
	var skips *ops.Skips
	if gf.direct != nil {
		// Which branches post-receive scans, for pre-receive to shut the
		// gate where the push gives it nothing to do; without them the
		// gate stays open and post-receive runs.
		if following, err := (&ops.Service{DB: db}).Following(ctx, key); err != nil {
			log.WarnContext(ctx, "hooks", "error", err.Error())
		} else {
			pairs = append(pairs, hookenv.ScannedEnv(following.Branches)...)
			skips = ops.NewSkips(following)
		}
	}
	if err := gf.handoff.Seal(pairs); err != nil {
		return nil, nil, fault.Wrap(err, "cannot start git")
	}
	return pairs, skips, nil
}

// hookRunner is how serve runs a hook that git's hook script hands it
// over the script relay's pipes, with serve's database.
func (gf *gitFiles) hookRunner(ctx context.Context, r *Request, db *store.DB, key string, pairs []string, prefetch *ops.Prefetch, skips *ops.Skips) func(relay.Request, *os.File, *os.File, *os.File) int {
	return func(req relay.Request, stdin, stdout, stderr *os.File) int {
		if !relay.Served(req.Hook) {
			fmt.Fprintf(stderr, "collab: hook %q is not relayed\n", req.Hook)
			return 1
		}
		var gate func() error
		if req.Hook == "pre-receive" && skips != nil {
			gate = func() error { return hookenv.Shut(gf.direct.Gate) }
		}
		// Like a hook process, which serve's SIGTERM does not reach, a
		// relayed hook finishes its work. It reads the hand-off git's
		// hooks read: their environment and the late pairs.
		return hookrun.Run(context.WithoutCancel(ctx), hookrun.Hook{
			Name: req.Hook, Root: r.Root, URL: r.URL, Environ: append(slices.Clip(req.Env), pairs...), Dir: req.Dir,
			Stdin: stdin, Stdout: stdout, Stderr: stderr, Log: r.Log.With("RELAYED", true), DB: db, Repo: key,
			Prefetch: prefetch, Skips: skips, Gate: gate,
		})
	}
}

// gateDownInput is the slow path of a push whose repository's hooks serve
// cannot run and whose gate is down (gatedown.go): it reads the push's
// commands first and refuses one that moves a protected branch; else the
// input git reads, the commands put back in front.
func gateDownInput(ctx context.Context, log *slog.Logger, stdin io.Reader, dir, key string, rules map[string]pushcheck.Rule) (io.Reader, error) {
	why, since := hookdir.GateDown(dir)
	if why == "" {
		return stdin, nil
	}
	raw, refs, err := readCommands(stdin)
	if err != nil {
		return nil, fault.Wrap(err, "cannot read the push")
	}
	b, err := protectedTouched(ctx, git.Open(dir), refs, rules)
	if err != nil {
		return nil, fault.Wrap(err, "cannot read the push")
	}
	if b != "" {
		log.WarnContext(ctx, "gate down", "OUTCOME", "refused", "BRANCH", b, "why", why, "since", since.UTC().Format(time.RFC3339))
		return nil, gateDownRefusal(key, b, why)
	}
	return io.MultiReader(bytes.NewReader(raw), stdin), nil
}

// held is a git serve started with nothing passing between it and the
// client yet: serve holds a pipe to its stdin and one from its stdout,
// and copies each once the push may go on that far (speak, listen).
type held struct {
	in, out *os.File // serve's ends: git's stdin, git's stdout
	wait    func() (int, error)
	cancel  context.CancelFunc
	copied  chan error // speak's copy's end
}

// startHeld starts git through r.Start with pipes of its own as stdin and
// stdout.
func startHeld(ctx context.Context, r *Request, path string, argv, env []string, files []*os.File) (*held, error) {
	stdin, in, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("hold git's input: %w", err)
	}
	out, stdout, err := os.Pipe()
	if err != nil {
		stdin.Close()
		in.Close()
		return nil, fmt.Errorf("hold git's output: %w", err)
	}
	// Only git holds its ends once it runs, so the copy of out ends
	// where git's output does.
	defer stdin.Close()
	defer stdout.Close()
	gctx, cancel := context.WithCancel(ctx)
	wait, err := r.Start(gctx, path, argv, env, stdin, stdout, files)
	if err != nil {
		cancel()
		in.Close()
		out.Close()
		return nil, err
	}
	return &held{in: in, out: out, wait: wait, cancel: cancel}, nil
}

// stop ends a git whose push serve refused: nothing passed between it
// and the client.
func (g *held) stop() {
	g.cancel()
	_, _ = g.wait()
	g.close()
}

func (g *held) close() {
	g.in.Close()
	g.out.Close()
}

// speak lets git's output through to the client: from here on the
// client hears git. Its copy ends where git's output does (git and the
// processes it started on it).
func (g *held) speak(stdout io.Writer) {
	g.copied = make(chan error, 1)
	go func() {
		_, err := io.Copy(stdout, g.out)
		// A client gone stops the copy; git's next write then fails, as
		// it would have on the client's channel itself, rather than
		// waiting on a pipe nobody reads.
		g.out.Close()
		g.copied <- err
	}()
}

// listen lets the client's input through to git, once the hand-off is
// sealed: before that no hook may run. The copy may go on after git has
// ended, so it is not waited for.
func (g *held) listen(stdin io.Reader, handoff *hookenv.Late) error {
	if !handoff.Sealed() {
		return errors.New("the client's input would reach git before the hand-off is sealed")
	}
	go func() {
		_, _ = io.Copy(g.in, stdin)
		g.in.Close()
	}()
	return nil
}

// finish waits for git and for its output to reach the client.
func (g *held) finish() (code int, err, copyErr error) {
	code, err = g.wait()
	if g.copied != nil {
		copyErr = <-g.copied
	}
	g.cancel()
	return code, err, copyErr
}
