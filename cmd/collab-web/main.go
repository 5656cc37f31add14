// Command collab-web serves collab's web pages and JSON API from the forge's
// SQLite file, and delivers its webhooks.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/forge"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	app := &cli.App{
		Name:  "collab-web",
		Usage: "the collab forge's web pages, JSON API and webhook delivery",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "root", EnvVars: []string{"COLLAB_ROOT"}, Value: forge.DefaultDir},
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:8080"},
			&cli.StringFlag{Name: "url", EnvVars: []string{"COLLAB_URL"}},
		},
		Action: serve,
	}
	if err := app.RunContext(ctx, os.Args); err != nil {
		fmt.Fprintf(os.Stderr, "collab-web: %v\n", err)
		os.Exit(1)
	}
}

func serve(c *cli.Context) error {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	srv := &http.Server{Addr: c.String("listen"), Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-c.Context.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	log.Info("listening", "addr", srv.Addr)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
