// Command collab-hook is collab's server side over stock OpenSSH and git:
// the admin commands, the forced command (serve) and the repository hooks.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/argv"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/text"

	// Imported for their inits, which map in what the process is about
	// to touch before it touches it.
	_ "github.com/collab-forge/collab/internal/prefault"
	_ "github.com/collab-forge/collab/internal/prefault/heap"
)

func main() {
	// A pusher's Ctrl-C closes the hooks' stderr; the database work must
	// still finish, so a write to a closed pipe is an error, not a death.
	signal.Ignore(syscall.SIGPIPE)
	syscall.Umask(forge.Umask)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args))
}

func newApp() *cli.App {
	app := &cli.App{
		Name:            "collab-hook",
		Usage:           "the collab forge: admin commands, the ssh forced command and git hooks",
		HideVersion:     true,
		HideHelpCommand: true,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "root", Usage: "the forge root", EnvVars: []string{"COLLAB_ROOT"}, Value: forge.DefaultDir},
			&cli.StringFlag{Name: "url", Usage: "the web UI's base URL for this run", EnvVars: []string{"COLLAB_URL"}},
		},
		Commands: []*cli.Command{
			initCommand(),
			migrateCommand(),
			configCommand(),
			repoCommand(),
			userCommand(),
			keyCommand(),
			grantCommand(),
			revokeCommand(),
			authorizedKeysCommand(),
			keysCommandCommand(),
			webhookCommand(),
			exportCommand(),
			importCommand(),
			fsckCommand(),
			backupCommand(),
			restoreCommand(),
			branchCommand(),
			serveCommand(),
			hookCommand(),
		},
	}
	argv.Strict(app)
	return app
}

func run(ctx context.Context, args []string) int {
	if code, ok := handOver(args); ok {
		return code
	}
	if code, ok := fast(ctx, args); ok {
		return code
	}
	app := newApp()
	return report(app.RunContext(ctx, append(args[:1:1], argv.Reorder(app, args[1:])...)))
}

// report prints what err says for the user and returns the exit code.
func report(err error) int {
	if err == nil {
		return 0
	}
	if ec, ok := err.(cli.ExitCoder); ok && fault.KindOf(err) == fault.Internal {
		return ec.ExitCode() // already reported (serve, hooks)
	}
	fmt.Fprintf(os.Stderr, "collab-hook: %s\n", text.Show(fault.Public(err)))
	if fault.KindOf(err) == fault.Internal && fault.Public(err) != err.Error() {
		fmt.Fprintf(os.Stderr, "collab-hook: detail: %v\n", err)
	}
	return fault.ExitCode(err)
}

// rootOf returns the forge root named by --root.
func rootOf(c *cli.Context) (forge.Root, error) {
	return forge.New(c.String("root"))
}

// globals are the app-wide flags, for the commands fast also runs.
type globals struct{ root, url string }

func globalsOf(c *cli.Context) globals { return globals{root: c.String("root"), url: c.String("url")} }

// binary is the absolute path of this program, for hook shims and forced
// commands. On a forge whose record is on PostgreSQL that is
// collab-hook-pg (handOver), so that sshd and git start it directly, not
// through collab-hook's hand-over: a process start less per verb and push.
func binary() (string, error) {
	p, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find own path: %w", err)
	}
	return p, nil
}
