// Command collab-web serves collab's web pages and JSON API from the forge's
// SQLite file, and delivers its webhooks.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/browse"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/journal"
	"github.com/collab-forge/collab/internal/layout"
	"github.com/collab-forge/collab/internal/ops"
	"github.com/collab-forge/collab/internal/principals"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/web"
	"github.com/collab-forge/collab/internal/webhook"
)

func main() {
	syscall.Umask(forge.Umask)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	app := &cli.App{
		Name:  "collab-web",
		Usage: "the collab forge's web pages, JSON API and webhook delivery",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "root", EnvVars: []string{"COLLAB_ROOT"}, Value: forge.DefaultDir},
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:8080"},
			&cli.StringFlag{Name: "url", EnvVars: []string{"COLLAB_URL"}},
			&cli.StringFlag{Name: "db", Usage: "collab-web's own way to the root's PostgreSQL record (postgres://…): the server itself rather than a pgbouncer, say, with statements prepared (default_query_exec_mode=cache_statement); the processes it starts use the root's"},
			&cli.DurationFlag{Name: "sweep-every", Value: 5 * time.Second,
				Usage: "how often to make up what killed hooks left undone (missed merge scans, revision refs)"},
			&cli.DurationFlag{Name: "sweep-grace", Value: 10 * time.Second,
				Usage: "leave a branch that moved less than this ago to its own post-receive"},
			&cli.DurationFlag{Name: "outage-keys-every", Value: time.Minute,
				Usage: "with the record on PostgreSQL: how often to rewrite this host's outage key index, which lets known keys log in (to be told to try again later) while the record does not answer"},
			&cli.StringFlag{Name: "tls-cert", Usage: "serve HTTPS with this PEM certificate (chain) file; with --tls-key"},
			&cli.StringFlag{Name: "tls-key", Usage: "the PEM private key of --tls-cert"},
			&cli.IntFlag{Name: "git-slots", Value: web.DefaultGitSlots,
				Usage: "how many git requests (clone, fetch, push over HTTP) run at once"},
			&cli.IntFlag{Name: "expensive", Value: web.DefaultExpensive,
				Usage: "how many expensive pages (diffs, trees, blobs, logs, overviews) run at once; one client holds at most half"},
			&cli.DurationFlag{Name: "slot-wait", Value: web.DefaultSlotWait,
				Usage: "how long an expensive page waits for a slot before it answers 503"},
			&cli.DurationFlag{Name: "git-idle", Value: web.DefaultGitIdle,
				Usage: "cut a git request that made no progress for this long"},
			&cli.DurationFlag{Name: "checkpoint-every", Value: 2 * time.Second,
				Usage: "how often to look for an idle WAL to checkpoint and truncate"},
		},
		Action: serve,
	}
	if err := app.RunContext(ctx, os.Args); err != nil {
		fmt.Fprintf(os.Stderr, "collab-web: %v\n", err)
		os.Exit(1)
	}
}

func serve(c *cli.Context) error {
	ctx := c.Context
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	root, err := forge.New(c.String("root"))
	if err != nil {
		return err
	}
	// One process-wide store: its writer pool is a single connection, its
	// reader pool never waits for hook writers (WAL).
	open := root.Open
	if via := c.String("db"); via != "" {
		open = func(ctx context.Context) (*store.DB, error) { return root.OpenVia(ctx, via) }
	}
	db, err := open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	base := c.String("url")
	if base == "" {
		if base, err = store.Setting(ctx, db.R(), forge.SettingURL); err != nil {
			return err
		}
	}
	// The hooks of pushes over HTTP log where they log over SSH.
	hookLog, closeHookLog := journal.Open(root.Dir)
	defer closeHookLog()
	h, err := web.New(web.Config{Root: root, DB: db, URL: strings.TrimSuffix(base, "/"), Log: log,
		GitSlots: c.Int("git-slots"), GitIdle: c.Duration("git-idle"), HookBinary: hookBinary(db.Postgres()), HookLog: hookLog,
		NoBranchOrder: os.Getenv(browse.OrderOffVar) == "off",
		NoCodeMemo:    os.Getenv(browse.MemoOffVar) == "off",
		Expensive:     c.Int("expensive"), SlotWait: c.Duration("slot-wait")})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", c.String("listen"))
	if err != nil {
		return err
	}
	// HTTPS without a proxy in front, for agents that may only speak it.
	if cert, key := c.String("tls-cert"), c.String("tls-key"); cert != "" || key != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			ln.Close()
			return fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12})
	}
	srv := web.NewHTTPServer(ln.Addr().String(), h, log)

	// Background work of this process (webhook delivery, the lease
	// sweeper) starts here and stops with ctx.
	// Stop the background work before the deferred db.Close runs: ctx ends
	// it, wait lets it finish its last transaction.
	bctx, stopBackground := context.WithCancel(ctx)
	var bg sync.WaitGroup
	bg.Add(2)
	// The push sweeper: merge scans and refs that killed hooks missed
	// (it writes: not on a read-only root, see background).
	sw := &ops.Sweeper{Root: root, DB: db, Log: log, Now: db.Now, Grace: c.Duration("sweep-grace")}
	go func() {
		defer bg.Done()
		// What runs once per forge runs in one collab-web of all the
		// hosts that share a PostgreSQL record (store.Lead).
		db.Lead(bctx, "collab-web background", leadPoll, func(ctx context.Context) {
			if db.Postgres() {
				log.Info("leading: webhook delivery and the sweepers run in this process")
			}
			var w sync.WaitGroup
			w.Add(2)
			go func() { defer w.Done(); background(ctx, root, db, log); <-ctx.Done() }()
			go func() {
				defer w.Done()
				if !db.ReadOnly() {
					sw.Run(ctx, c.Duration("sweep-every"))
				}
			}()
			w.Wait()
		})
	}()
	go func() { defer bg.Done(); db.KeepWALSmall(bctx, c.Duration("checkpoint-every"), log) }()
	// Every host keeps its outage key index (a record on PostgreSQL only).
	bg.Add(1)
	go func() { defer bg.Done(); principals.KeepOutageIndex(bctx, db, c.Duration("outage-keys-every"), log) }()
	defer func() { stopBackground(); bg.Wait() }()

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("listening", "addr", ln.Addr().String(), "root", root.Dir)
	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("stopped")
	return nil
}

// leadPoll is how often a collab-web that does not lead asks for the lead
// (store.Lead): a leader's host that died is replaced within three polls.
const leadPoll = time.Second

// background runs the process's non-HTTP work (webhook delivery and the
// lease sweeper) until ctx ends.
func background(ctx context.Context, root forge.Root, db *store.DB, log *slog.Logger) {
	if db.ReadOnly() {
		// Both write; pages and the API still serve reads.
		log.Warn("the forge root is read-only: webhook delivery, the lease sweeper and the push sweeper are paused; restart collab-web once it is writable")
		return
	}
	key, err := root.Key()
	if err != nil {
		log.Error("webhook delivery and lease sweeper NOT running: no forge key", "err", err)
		return
	}
	// Runs until ctx ends; serve waits for it before closing the database.
	if err := webhook.Run(ctx, db, key, log, webhook.Options{}); err != nil {
		log.Error("webhook delivery stopped", "err", err)
	}
}

// hookBinary is collab-hook beside this binary, as installed, or "" where
// this binary's path is unknown. Where the record is on PostgreSQL it is
// collab-hook-pg, which such a forge's shims name (collab-hook hands its
// runs over to it), so that git over HTTP runs the root's hooks as over
// SSH.
func hookBinary(postgres bool) string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	if postgres {
		return filepath.Join(filepath.Dir(exe), layout.PostgresBinary)
	}
	return filepath.Join(filepath.Dir(exe), "collab-hook")
}
