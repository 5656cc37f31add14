// Package relay hands a hook run from the process git started to the
// process that started git (serve over SSH, collab-web over HTTPS), which
// has checked the pusher, has the database open and stays alive while
// git-receive-pack runs: a hook then costs one /bin/sh (Script) instead
// of a SQLite-linked process that opens the database again.
//
// Where the repository's hooks are exactly collab's shims, the front
// points git at the root's hooks directory (internal/hookdir), whose
// hooks lead to Script; the script writes its hook's name and pid on a
// pipe (ReqFD) and waits for the exit code on another (AnsFD), and the
// front runs the hook on the script's own stdio (ScriptServer). Anywhere
// else the repository's hooks run collab-hook as processes.
//
// The package uses only the standard library's os and syscall: the
// fronts link it, and so would the leanest hook.
package relay

import "os"

// Request is one hook run.
type Request struct {
	Hook string
	// Dir is the hook's working directory; Env its whole environment.
	Dir string
	Env []string
}

// Handler runs one relayed hook on the hook's own files and returns its
// exit code.
type Handler func(req Request, stdin, stdout, stderr *os.File) int

// Served reports whether hook is one the front runs for the script: the
// three hooks of a push. A switch, not a map: a map would be a package
// init in every binary that links this.
func Served(hook string) bool {
	switch hook {
	case "pre-receive", "proc-receive", "post-receive":
		return true
	}
	return false
}

func closeAll(files []*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}
