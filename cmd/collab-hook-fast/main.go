// Command collab-hook-fast is collab-hook for the commands that run on
// every ssh login and every push: sshd's AuthorizedKeysCommand
// (keys-command, answered from the key index), the pre-receive hook of a
// push whose serve hand-off covers it (hookenv.Handoff.Stamped: write
// access, push limits and branch rules, read by serve moments before;
// where it passes, serve gets the updates to start what proc-receive and
// the merge scan read early, ops.Prefetch), and proc-receive and
// post-receive of a push through serve, which it hands to that serve
// (internal/relay). It links no SQLite driver and no
// command-line framework, so it starts in about the time of an empty Go
// program, where collab-hook takes twice that; TestFastDeps keeps it so.
//
// Whatever it cannot decide alone (no usable key index, a push serve did
// not stamp, a hook no serve takes, any other command line) it hands to
// collab-hook, the binary beside it, by exec with the same arguments: the
// answer is always collab-hook's, only sometimes sooner.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/fastpath"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/hookenv"
	"github.com/collab-forge/collab/internal/journal"
	"github.com/collab-forge/collab/internal/keyindex"
	"github.com/collab-forge/collab/internal/layout"
	"github.com/collab-forge/collab/internal/pushcheck"
	"github.com/collab-forge/collab/internal/relay"
	"github.com/collab-forge/collab/internal/text"

	// Imported for its init, which maps in what the process is about to
	// touch before it touches it.
	_ "github.com/collab-forge/collab/internal/prefault"
)

// Full is the name of the binary beside this one that does everything.
const Full = "collab-hook"

func main() {
	syscall.Umask(layout.Umask)
	os.Exit(run(context.Background(), os.Args))
}

func run(ctx context.Context, args []string) int {
	full, err := fullPath()
	if err != nil {
		fmt.Fprintf(os.Stderr, "collab: %v\n", err)
		return 1
	}
	if a, ok := fastpath.Direct(args); ok {
		args = a
	}
	c, ok := fastpath.Parse(args, os.LookupEnv)
	switch {
	case !ok:
	case c.Cmd == "keys-command":
		if done, code := keysCommand(c, full); done {
			return code
		}
	case c.Cmd == "hook" && c.Args[0] == "pre-receive":
		if done, code := preReceive(ctx, c); done {
			return code
		}
	case c.Cmd == "hook" && (c.Args[0] == "proc-receive" || c.Args[0] == "post-receive"):
		if done, code := relayed(c.Args[0]); done {
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

// relayed hands the hook to the serve that started this push's
// receive-pack (internal/relay), which runs it with the database it has
// open; done is false where no serve got it (a local push, serve gone).
func relayed(hook string) (done bool, code int) {
	fd, err := strconv.Atoi(os.Getenv(relay.FDVar))
	if err != nil {
		return false, 0
	}
	wd, err := os.Getwd()
	if err != nil {
		return false, 0
	}
	code, err = relay.Ask(fd, relay.Request{Hook: hook, Dir: wd, Env: os.Environ()})
	switch {
	case errors.Is(err, relay.ErrNotSent):
		return false, 0
	case err != nil:
		fmt.Fprintf(os.Stderr, "collab: %v\n", err)
		return true, 1
	}
	return true, code
}

// preReceive decides a push serve stamped (pushcheck.Check, as collab-hook
// would with the same facts); done is false for any other push, before
// anything of git's input is read.
func preReceive(ctx context.Context, c fastpath.Call) (done bool, code int) {
	root, err := layout.Resolve(c.G.Root)
	if err != nil {
		return false, 0
	}
	key, dir, err := pushcheck.RepoDir(layout.Repos(root))
	if err != nil {
		return false, 0
	}
	h := hookenv.Decode(hookenv.ProcessEnv())
	if !h.Stamped(key, time.Now()) {
		return false, 0
	}
	opts := pushcheck.EnvOptions()
	if pushcheck.CarriesLease(opts) {
		// A lease token is checked against the database: collab-hook's.
		return false, 0
	}
	log, closeLog := journal.Open(root)
	defer closeLog()
	start := time.Now()
	us, err := pushcheck.ReadUpdates(os.Stdin)
	if err != nil {
		log.Error("pre-receive", "PRINCIPAL", h.Principal, "REPO", key, "OUTCOME", "error", "error", err.Error())
		fmt.Fprintf(os.Stderr, "collab: %s\n", text.Show(fault.Public(err)))
		return true, 1
	}
	err = pushcheck.Check(ctx, pushcheck.Push{
		Principal: h.Principal, Repo: key, Updates: us, Options: opts,
		Limits: *h.Limits, Git: git.InHook(dir),
		Rules: func(context.Context) (map[string]pushcheck.Rule, error) { return h.Rules, nil },
		Admin: func(context.Context) (bool, error) { return h.Checked.Level >= access.Admin, nil },
	})
	// A push that passed and gives post-receive nothing to do (it moves
	// no branch the merge scan follows, or only by new commits that name
	// none of its open patches) has git skip post-receive; its entries
	// say so, and serve records the scan of the latter moves.
	var p hookenv.Passed
	if err == nil {
		p = h.Pass(us, os.Getenv, hookenv.ShutGate)
	}
	entries := log
	if p.ShutErr != nil {
		// post-receive runs, and scans.
		log.Warn("post-receive gate", "PRINCIPAL", h.Principal, "REPO", key, "error", p.ShutErr.Error())
	}
	if p.Skipped {
		entries = log.With("POST_RECEIVE", "skipped")
	}
	pushcheck.Log(entries, h.Principal, key, us, err, start)
	if err != nil {
		fmt.Fprintf(os.Stderr, "collab: %s\n", text.Show(fault.Public(err)))
		return true, 1
	}
	if len(p.Unmerged) > 0 {
		if err := tell(relay.Unmerged, p.Unmerged); err != nil {
			// The next push's post-receive scans these moves again.
			log.Warn("merge scan", "PRINCIPAL", h.Principal, "REPO", key, "OUTCOME", "error", "error", err.Error())
		}
	}
	if p.Prefetch {
		if err := tell(relay.Prefetch, us); err != nil {
			// Only a head start lost: the hooks read themselves.
			log.Warn("prefetch", "PRINCIPAL", h.Principal, "REPO", key, "error", err.Error())
		}
	}
	return true, 0
}

// maxTell bounds the update lines tell writes into a pipe before
// anyone reads it: well under a pipe's 64 KiB, so the write never waits.
const maxTell = 32 << 10

// tell hands the serve that started this push's receive-pack, where there
// is one, the update lines us as the request hook (relay.Prefetch: for it
// to start what proc-receive and the merge scan read while git moves the
// objects in; relay.Unmerged); it does not wait.
func tell(hook string, us []pushcheck.Update) error {
	fd, err := strconv.Atoi(os.Getenv(relay.FDVar))
	if err != nil {
		return nil
	}
	lines := pushcheck.FormatUpdates(us)
	if len(lines) > maxTell {
		return nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	_, err = w.WriteString(lines)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return relay.Tell(fd, relay.Request{Hook: hook, Dir: wd, Env: os.Environ()}, r)
}
