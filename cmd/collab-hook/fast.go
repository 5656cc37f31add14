package main

import (
	"context"
	"os"
	"strings"

	"github.com/collab-forge/collab/internal/forge"
)

// fast runs the commands that sshd and git start on every login and push
// (keys-command, serve, hook) without building the whole command-line app
// first. It takes only the exact shapes collab itself writes (the hook
// shims, the forced command, install.sh's AuthorizedKeysCommand), with
// --root and --url before the command; anything else, help included, goes
// through the full parser (ok false), which gives the same result slower.
func fast(ctx context.Context, args []string) (code int, ok bool) {
	g := globals{root: os.Getenv("COLLAB_ROOT"), url: os.Getenv("COLLAB_URL")}
	if g.root == "" {
		g.root = forge.DefaultDir
	}
	rest := args[1:]
	for len(rest) > 0 && strings.HasPrefix(rest[0], "--") {
		name, value, eq := strings.Cut(rest[0][2:], "=")
		if !eq {
			if len(rest) < 2 {
				return 0, false
			}
			value, rest = rest[1], rest[1:]
		}
		rest = rest[1:]
		switch name {
		case "root":
			g.root = value
		case "url":
			g.url = value
		default:
			return 0, false
		}
	}
	switch {
	case len(rest) == 2 && rest[0] == "hook" && isHook(rest[1]):
		return report(runHook(ctx, g, rest[1])), true
	case len(rest) == 3 && rest[0] == "serve" && rest[1] == "--as" && rest[2] != "" && !strings.HasPrefix(rest[2], "-"):
		return report(runServe(ctx, g, rest[2])), true
	case len(rest) == 4 && rest[0] == "keys-command":
		return report(runKeysCommand(ctx, g, rest[2], rest[3], os.Stdout)), true
	}
	return 0, false
}

func isHook(name string) bool {
	switch name {
	case "pre-receive", "proc-receive", "post-receive", "merge-scan":
		return true
	}
	return false
}
