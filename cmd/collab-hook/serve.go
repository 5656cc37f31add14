package main

import (
	"context"
	"os"
	"os/exec"
	"syscall"

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
		Exec: func(path string, argv, env []string) error {
			_ = closeLog()
			return syscall.Exec(path, argv, env)
		},
		Start:  start,
		Binary: self,
	})
	if code == 0 {
		return nil
	}
	return cli.Exit("", code)
}

// start starts git with stdin and stdout as given, serve's own stderr
// (the ssh channel) and files as fds 3 and up; wait waits for it.
// serve's SIGTERM (ctx) reaches git as it would have had serve exec'd it.
// A git killed by a signal exits 128+signal, as a shell reports it.
func start(ctx context.Context, path string, argv, env []string, stdin, stdout *os.File, files []*os.File) (wait func() (int, error), err error) {
	cmd := exec.CommandContext(ctx, path)
	cmd.Args, cmd.Env, cmd.ExtraFiles = argv, env, files
	cmd.Stderr = os.Stderr
	if stdin != nil { // else /dev/null
		cmd.Stdin = stdin
	}
	if stdout != nil {
		cmd.Stdout = stdout
	}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return func() (int, error) {
		err := cmd.Wait()
		if st := cmd.ProcessState; st != nil { // it ran, however it ended
			if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				return 128 + int(ws.Signal()), nil
			}
			return st.ExitCode(), nil
		}
		return 0, err
	}, nil
}
