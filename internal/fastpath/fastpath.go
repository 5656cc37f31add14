// Package fastpath recognises the command lines that sshd and git start on
// every login and push, in the exact shapes collab itself writes (the hook
// shims, the forced command, install.sh's AuthorizedKeysCommand), with
// --root and --url before the command. collab-hook runs those without
// building its whole command-line app, and collab-hook-fast answers
// keys-command from the key index. Anything else, help
// included, goes through collab-hook's full parser, which gives the same
// result slower.
package fastpath

import (
	"path/filepath"
	"strings"

	"github.com/collab-forge/collab/internal/layout"
)

// Globals are the app-wide flags.
type Globals struct{ Root, URL string }

// Call is one recognised command: hook NAME (Args: NAME), serve --as NAME
// (Args: NAME), keys-command USER TYPE KEY (Args: TYPE KEY).
type Call struct {
	G    Globals
	Cmd  string
	Args []string
}

// Parse recognises args (os.Args) in the shapes above, reading the globals
// as urfave/cli does: a flag wins over its variable, a variable that is
// set (even empty) over the default.
func Parse(args []string, lookup func(string) (string, bool)) (Call, bool) {
	g := Globals{Root: layout.DefaultRoot}
	if v, ok := lookup("COLLAB_ROOT"); ok {
		g.Root = v
	}
	g.URL, _ = lookup("COLLAB_URL")
	if len(args) == 0 {
		return Call{}, false
	}
	rest := args[1:]
	for len(rest) > 0 && strings.HasPrefix(rest[0], "--") {
		name, value, eq := strings.Cut(rest[0][2:], "=")
		if !eq {
			if len(rest) < 2 {
				return Call{}, false
			}
			value, rest = rest[1], rest[1:]
		}
		rest = rest[1:]
		switch name {
		case "root":
			g.Root = value
		case "url":
			g.URL = value
		default:
			return Call{}, false
		}
	}
	switch {
	case len(rest) == 2 && rest[0] == "hook" && IsHook(rest[1]):
		return Call{g, "hook", rest[1:]}, true
	case len(rest) == 3 && rest[0] == "serve" && rest[1] == "--as" && rest[2] != "" && !strings.HasPrefix(rest[2], "-"):
		return Call{g, "serve", rest[2:]}, true
	case len(rest) == 4 && rest[0] == "keys-command":
		return Call{g, "keys-command", rest[2:]}, true
	}
	return Call{}, false
}

// Root is the root a command line names, read as urfave/cli reads it: a
// --root flag anywhere before "--" (the last wins), else COLLAB_ROOT,
// else the default.
func Root(args []string, lookup func(string) (string, bool)) string {
	root := layout.DefaultRoot
	if v, ok := lookup("COLLAB_ROOT"); ok {
		root = v
	}
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return root
		case a == "--root" && i+1 < len(args):
			root = args[i+1]
			i++
		case strings.HasPrefix(a, "--root="):
			root = strings.TrimPrefix(a, "--root=")
		}
	}
	return root
}

// Direct recognises a hook that git runs as itself, from the root's hooks
// directory (internal/hookdir) where serve points git: no arguments, the
// hook's name as the program's (args[0], the path git ran), and the root
// from COLLAB_ROOT, which serve sets. A hook run through the post-receive
// gate, a script whose interpreter is this program as an inherited fd,
// comes as that fd's path and the hook's. It returns the arguments of the
// same run through a shim: hook NAME.
func Direct(args []string) ([]string, bool) {
	hook := ""
	switch {
	case len(args) == 1:
		hook = args[0]
	case len(args) == 2 && strings.HasPrefix(args[0], "/proc/self/fd/"):
		hook = args[1]
	default:
		return nil, false
	}
	switch name := filepath.Base(hook); name {
	case "pre-receive", "proc-receive", "post-receive":
		return []string{hook, "hook", name}, true
	}
	return nil, false
}

// IsHook reports whether name is a hook collab-hook runs.
func IsHook(name string) bool {
	switch name {
	case "pre-receive", "proc-receive", "post-receive", "merge-scan":
		return true
	}
	return false
}
