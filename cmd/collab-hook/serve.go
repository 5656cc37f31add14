package main

import (
	"context"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/journal"
	"github.com/collab-forge/collab/internal/serve"
)

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "the forced command of every key: run SSH_ORIGINAL_COMMAND for a principal",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "as", Usage: "the principal the key belongs to"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 || c.String("as") == "" {
				return fault.New(fault.Usage, "usage: serve --as NAME (the command comes from SSH_ORIGINAL_COMMAND)")
			}
			return runServe(c.Context, globalsOf(c), c.String("as"))
		},
	}
}

func runServe(ctx context.Context, g globals, as string) error {
	root, err := forge.New(g.root)
	if err != nil {
		return err
	}
	log, closeLog := journal.Open(root.Dir)
	defer closeLog()
	self, err := binary()
	if err != nil {
		self = "" // the shims then run the hooks, as ever
	}
	code := serve.Run(ctx, &serve.Request{
		Root:      root,
		Principal: as,
		Command:   os.Getenv("SSH_ORIGINAL_COMMAND"),
		UserAuth:  os.Getenv("SSH_USER_AUTH"),
		Environ:   os.Environ(),
		URL:       g.url,
		Stdin:     os.Stdin,
		Stdout:    os.Stdout,
		Stderr:    os.Stderr,
		Log:       log,
		Now:       time.Now,
		Exec: func(path string, argv, env []string) error {
			_ = closeLog()
			return syscall.Exec(path, argv, env)
		},
		Spawn:  spawn,
		Binary: self,
	})
	if code == 0 {
		return nil
	}
	return cli.Exit("", code)
}

// spawn runs git with serve's own stdin, stdout and stderr (the ssh
// channel) and files as fds 3 and up, and waits for it; serve's SIGTERM
// (ctx) reaches git as it would have had serve exec'd it. A git killed by
// a signal exits 128+signal, as a shell reports it.
func spawn(ctx context.Context, path string, argv, env []string, files []*os.File) (int, error) {
	cmd := exec.CommandContext(ctx, path)
	cmd.Args, cmd.Env, cmd.ExtraFiles = argv, env, files
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	err := cmd.Run()
	if st := cmd.ProcessState; st != nil { // it ran, however it ended
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return st.ExitCode(), nil
	}
	return 0, err
}
