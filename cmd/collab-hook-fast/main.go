// Command collab-hook-fast is collab-hook for the command that runs on
// every ssh login: sshd's AuthorizedKeysCommand (keys-command), answered
// from the key index. It links no SQLite driver and no command-line
// framework, so it starts in about the time of an empty Go program, where
// collab-hook takes twice that; TestFastDeps keeps it so.
//
// Whatever it cannot answer alone (no usable key index, any other command
// line) it hands to collab-hook, the binary beside it, by exec with the
// same arguments: the answer is always collab-hook's, only sometimes
// sooner.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/collab-forge/collab/internal/fastpath"
	"github.com/collab-forge/collab/internal/keyindex"
	"github.com/collab-forge/collab/internal/layout"

	// Imported for its init, which maps in what the process is about to
	// touch before it touches it.
	_ "github.com/collab-forge/collab/internal/prefault"
)

// Full is the name of the binary beside this one that does everything.
const Full = "collab-hook"

func main() {
	syscall.Umask(layout.Umask)
	os.Exit(run(os.Args))
}

func run(args []string) int {
	full, err := fullPath()
	if err != nil {
		fmt.Fprintf(os.Stderr, "collab: %v\n", err)
		return 1
	}
	if a, ok := fastpath.Direct(args); ok {
		args = a
	}
	if c, ok := fastpath.Parse(args, os.LookupEnv); ok && c.Cmd == "keys-command" {
		if done, code := keysCommand(c, full); done {
			return code
		}
	}
	err = syscall.Exec(full, append([]string{full}, args[1:]...), os.Environ())
	fmt.Fprintf(os.Stderr, "collab: cannot start %s: %v\n", full, err)
	return 1
}

// fullPath is collab-hook beside this binary.
func fullPath() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find own path: %w", err)
	}
	return filepath.Join(filepath.Dir(exe), Full), nil
}

// keysCommand prints the key's authorized_keys line, or nothing, where the
// key index answers; done is false where only collab-hook can (no usable
// index, a database it must refuse, anything odd: it says why).
func keysCommand(c fastpath.Call, full string) (done bool, code int) {
	root, err := layout.Resolve(c.G.Root)
	if err != nil {
		return false, 0
	}
	line, err := keyindex.Answer(keyindex.Command{Binary: full, Root: root}, layout.DB(root), c.Args[0], c.Args[1])
	if err != nil {
		return false, 0
	}
	if line != "" {
		if _, err := fmt.Println(line); err != nil {
			return true, 1
		}
	}
	return true, 0
}
