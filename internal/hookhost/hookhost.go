// Package hookhost runs, in a long-lived process that holds the database
// open, the hooks of a git process it started: proc-receive and
// post-receive then start no process that opens the database, and
// pre-receive's reads are prefetched. collab-web's git over HTTP uses it
// for pushes, through git http-backend.
//
// As serve does for SSH, it points receive-pack at the root's hooks
// directory (internal/hookdir) where the repository's hooks are exactly
// collab's shims: each hook is then one /bin/sh (relay.Script) that this
// process answers, pre-receive included, and a post-receive with nothing
// to do does not start at all (the gate). Elsewhere the repository's
// hooks run collab-hook as processes.
//
// COLLAB_HTTP_RELAY=off turns it off (the hooks run as processes).
// bench/http measures both in one run against stock http-backend under
// lighttpd (a one-commit push, median wall, two runs on a 2-core machine
// at load 4-5; docs/web.md): a branch push 0.85x and 0.99x the floor as
// installed, 1.24x and 1.21x as processes; a refs/for push 1.05x and
// 1.17x, 1.37x and 1.48x.
package hookhost

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/hookdir"
	"github.com/collab-forge/collab/internal/hookenv"
	"github.com/collab-forge/collab/internal/hookrun"
	"github.com/collab-forge/collab/internal/ops"
	"github.com/collab-forge/collab/internal/relay"
	"github.com/collab-forge/collab/internal/repos"
	"github.com/collab-forge/collab/internal/store"
)

// OffVar turns the relay off when set to "off".
const OffVar = "COLLAB_HTTP_RELAY"

// Host is the process's forge: where relayed hooks run.
type Host struct {
	Root forge.Root
	DB   *store.DB
	URL  string
	Log  *slog.Logger
	// Binary is collab-hook, whose shims a repository's hooks must be
	// for git to run the hooks directory instead ("": never).
	Binary string
	// Via is how many processes git's own start puts between this
	// process and git-receive-pack (git http-backend: 1).
	Via int
}

// Push is one push's relay.
type Push struct {
	prefetch *ops.Prefetch
	direct   *Direct
	hooksDir string
	// scanned is the hand-off of the branches post-receive scans (the
	// gate's facts); skips are the moves pre-receive found unmerged.
	scanned []string
	skips   *ops.Skips
	record  func()
}

// Direct is what git runs the root's hooks directory with: the hook
// script (hookdir.FD), the post-receive gate (hookenv.GateFD) and the
// script relay's pipes (relay.ReqFD, relay.AnsFD), whose server answers
// the hooks (Scripts). serve uses it for SSH as this package does for
// HTTP.
type Direct struct {
	Script, Gate *os.File
	Pipes        [2]*os.File
	Scripts      *relay.ScriptServer
}

// Close closes the files and, once the hook it runs (if any) is done,
// the script relay.
func (d *Direct) Close() {
	for _, f := range []*os.File{d.Script, d.Gate, d.Pipes[0], d.Pipes[1]} {
		if f != nil {
			f.Close()
		}
	}
	if d.Scripts != nil {
		d.Scripts.Close()
	}
}

// Start makes the relay of principal's push to repository key at dir
// (checked by the caller); the caller gives Files to git as its extra
// files, Env to its environment and Config to its configuration, and
// calls Close once git ended (which waits for the hook running here).
// Without the relay (OffVar, or a repository whose hooks are not
// collab's shims) it returns nil, and the hooks run as processes.
func (h *Host) Start(ctx context.Context, principal, key, dir string) (*Push, error) {
	if os.Getenv(OffVar) == "off" {
		return nil, nil
	}
	direct := OpenDirect(h.Root.Dir, dir, h.Binary, h.Via, h.Log)
	if direct == nil {
		return nil, nil
	}
	p := &Push{direct: direct, hooksDir: hookdir.Dir(h.Root.Dir), prefetch: ops.NewPrefetch(context.WithoutCancel(ctx))}
	// Which branches post-receive scans, for pre-receive to shut the gate
	// where the push gives it nothing to do; without them the gate stays
	// open and post-receive runs.
	if following, err := (&ops.Service{DB: h.DB}).Following(ctx, key); err != nil {
		h.Log.WarnContext(ctx, "hooks", "REPO", key, "error", err.Error())
	} else {
		p.scanned = hookenv.ScannedEnv(following.Branches)
		p.skips = ops.NewSkips(following)
	}
	log := h.Log.With("RELAYED", true)
	run := func(req relay.Request, stdin, stdout, stderr *os.File) int {
		if !relay.Served(req.Hook) {
			fmt.Fprintf(stderr, "collab: hook %q is not relayed\n", req.Hook)
			return 1
		}
		var gate func() error
		if req.Hook == "pre-receive" && p.skips != nil {
			gate = func() error { return hookenv.Shut(p.direct.Gate) }
		}
		// Like a hook process, which a client's hang-up does not reach, a
		// relayed hook finishes its work.
		return hookrun.Run(context.WithoutCancel(ctx), hookrun.Hook{
			Name: req.Hook, Root: h.Root, URL: h.URL, Environ: req.Env, Dir: req.Dir,
			Stdin: stdin, Stdout: stdout, Stderr: stderr, Log: log, DB: h.DB, Repo: key,
			Prefetch: p.prefetch, Skips: p.skips, Gate: gate,
		})
	}
	go p.direct.Scripts.Serve(run)
	if p.skips != nil {
		p.record = func() {
			// The moves whose post-receive pre-receive skipped are
			// scanned as far as they went, now that their refs moved.
			p.skips.Record(context.WithoutCancel(ctx), &ops.Push{Root: h.Root, DB: h.DB, Repo: key, Principal: principal, Log: h.Log, Now: time.Now})
		}
	}
	return p, nil
}

// OpenDirect is what a git-receive-pack that via processes of this
// process's child start (0: the child itself) needs to run the hooks from
// the root at rootDir's hooks directory for the repository at repoDir, or
// nil where it may not: the repository's hooks are not exactly the shims
// of binary (collab-hook), or /proc is not there to lead git through the
// links.
func OpenDirect(rootDir, repoDir, binary string, via int, log *slog.Logger) *Direct {
	if binary == "" || !hookdir.Usable(rootDir, repoDir, repos.HookSet(binary, rootDir)) {
		return nil
	}
	d := &Direct{}
	script := relay.Script(rootDir, binary)
	var err error
	if d.Script, err = hookenv.OpenScript("collab-hook-script", script); err == nil {
		if d.Gate, err = hookenv.OpenGate(script); err == nil {
			d.Pipes, d.Scripts, err = relay.PipesVia(via)
		}
	}
	if err != nil {
		log.Warn("hooks", "error", err.Error())
		d.Close()
		return nil
	}
	// The links lead through /proc: where it is not mounted (a bare
	// container) git would find no hooks at all.
	if st, err := d.Script.Stat(); err != nil {
		d.Close()
		return nil
	} else if via, err := os.Stat("/proc/self/fd/" + strconv.Itoa(int(d.Script.Fd()))); err != nil || !os.SameFile(st, via) {
		d.Close()
		return nil
	}
	return d
}

// Files are git's extra files: the script as hookdir.FD, the gate as
// hookenv.GateFD and the script relay's pipes as relay.ReqFD and
// relay.AnsFD (fd 3, serve's late hand-off, stays closed: here the
// hand-off is in the environment).
func (p *Push) Files() []*os.File {
	if p == nil {
		return nil
	}
	return []*os.File{nil, p.direct.Script, p.direct.Gate, p.direct.Pipes[0], p.direct.Pipes[1]}
}

// Env hands pre-receive the gate's facts.
func (p *Push) Env() []string {
	if p == nil {
		return nil
	}
	return p.scanned
}

// Config is git's configuration for the push ("key=value"): the hooks
// directory.
func (p *Push) Config() []string {
	if p == nil {
		return nil
	}
	// A shut gate is a hook git skips, which it would say to the pusher.
	return []string{"core.hooksPath=" + p.hooksDir, "advice.ignoredHook=false"}
}

// Close ends the relay once git ended: a hook still running here (its git
// killed) finishes first.
func (p *Push) Close() {
	if p == nil {
		return
	}
	p.direct.Close()
	p.prefetch.Close()
	if p.record != nil {
		p.record()
	}
}
