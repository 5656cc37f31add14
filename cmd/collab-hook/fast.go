package main

import (
	"context"
	"os"

	"github.com/collab-forge/collab/internal/fastpath"
)

// fast runs the commands that sshd and git start on every login and push
// (keys-command, serve, hook) without building the whole command-line app
// first (fastpath.Parse); ok is false for anything else.
func fast(ctx context.Context, args []string) (code int, ok bool) {
	c, ok := fastpath.Parse(args, os.LookupEnv)
	if !ok {
		return 0, false
	}
	g := globals{root: c.G.Root, url: c.G.URL}
	switch c.Cmd {
	case "hook":
		return report(runHook(ctx, g, c.Args[0])), true
	case "serve":
		return report(runServe(ctx, g, c.Args[0])), true
	default: // keys-command
		return report(runKeysCommand(ctx, g, c.Args[0], c.Args[1], os.Stdout)), true
	}
}
