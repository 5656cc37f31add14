// Package hookhost runs, in a long-lived process that holds the database
// open, the hooks of a git process it started that relay themselves to it
// over a socket (relay.Pair; collab-hook-fast under the repository's shims
// does the relaying): proc-receive and post-receive then start no process
// that opens the database, and pre-receive's reads are prefetched.
// collab-web's git over HTTP uses it for pushes.
//
// COLLAB_HTTP_RELAY=off turns it off (the hooks run as processes), for
// bench/http, which measures both in one run against stock http-backend
// under lighttpd (a one-commit push, median of 21 interleaved rounds, two
// runs on a 2-core machine busy with other builds): a branch push 1.15x
// and 1.10x the floor relayed against 1.24x and 1.26x as processes, a
// refs/for push 1.25x and 1.31x against 1.29x and 1.68x.
package hookhost

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"

	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/hookrun"
	"github.com/collab-forge/collab/internal/push"
	"github.com/collab-forge/collab/internal/relay"
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
}

// relayed are the requests a push's hooks make under the shims: pre-receive
// decides itself and tells the prefetch and the moves it found unmerged;
// proc-receive and post-receive run here.
var relayed = map[string]bool{relay.Prefetch: true, relay.Unmerged: true, "proc-receive": true, "post-receive": true}

// Push is one push's relay.
type Push struct {
	child    *os.File
	srv      *relay.Server
	prefetch *push.Prefetch
}

// Start makes the relay of a push to repository key (checked by the
// caller); the caller gives Files to git as its first extra files and Env
// to its environment, calls Started once git runs, and Close once it
// ended (which waits for the hooks running here). Without the relay
// (OffVar) it returns nil, and the hooks run as processes.
func (h *Host) Start(ctx context.Context, key string) (*Push, error) {
	if os.Getenv(OffVar) == "off" {
		return nil, nil
	}
	child, srv, err := relay.Pair()
	if err != nil {
		return nil, err
	}
	p := &Push{child: child, srv: srv, prefetch: push.NewPrefetch(context.WithoutCancel(ctx))}
	log := h.Log.With("RELAYED", true)
	go srv.Serve(func(req relay.Request, stdin, stdout, stderr *os.File) int {
		if !relayed[req.Hook] {
			fmt.Fprintf(stderr, "collab: hook %q is not relayed\n", req.Hook)
			return 1
		}
		// Like a hook process, which a client's hang-up does not reach, a
		// relayed hook finishes its work.
		return hookrun.Run(context.WithoutCancel(ctx), hookrun.Hook{
			Name: req.Hook, Root: h.Root, URL: h.URL, Environ: req.Env, Dir: req.Dir,
			Stdin: stdin, Stdout: stdout, Stderr: stderr, Log: log, DB: h.DB, Repo: key, Prefetch: p.prefetch,
		})
	})
	return p, nil
}

// Files are git's extra files: the relay's socket, as relay.ChildFD.
func (p *Push) Files() []*os.File {
	if p == nil {
		return nil
	}
	return []*os.File{p.child}
}

// Env names the socket to the hooks.
func (p *Push) Env() []string {
	if p == nil {
		return nil
	}
	return []string{relay.FDVar + "=" + strconv.Itoa(relay.ChildFD)}
}

// Started closes this process's copy of git's end of the socket.
func (p *Push) Started() {
	if p != nil {
		p.child.Close()
	}
}

// Close ends the relay once git ended: a hook still running here (its git
// killed) finishes first.
func (p *Push) Close() {
	if p == nil {
		return
	}
	p.child.Close()
	p.srv.Close()
	p.prefetch.Close()
}
