// Package hookdir keeps ROOT/hooks, the hooks directory serve points
// git-receive-pack at (core.hooksPath) so that git runs the push's hook
// script (relay.Script: one /bin/sh that serve answers) rather than a
// repository's /bin/sh shim that execs collab-hook.
//
// Each hook there is a symlink to /proc/self/fd/N, an fd serve hands git,
// which git's hook processes inherit:
//   - pre-receive and proc-receive lead to FD, the hook script, made in
//     memory for the push. Nothing in such a link names a binary, so it
//     never goes stale.
//   - post-receive leads to GateFD, the push's post-receive gate
//     (hookenv.OpenGate): the same script in a file of its own, which
//     pre-receive makes unexecutable where post-receive would have
//     nothing to do, so that git skips it.
//
// Without those fds (any git that serve did not start) the links lead
// nowhere and git would skip those hooks, so only serve, with the fds in
// place, may name the directory.
//
// serve names the directory only where the repository's own hooks are
// exactly the shims collab writes and nothing else would run: then both
// run the same program with the same input, and a repository whose hooks
// an operator changed, removed or made unexecutable keeps what its hooks
// say.
package hookdir

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/shellwords"
)

// FD is the hook script's fd in git and its hooks: after the late
// hand-off (hookenv.LateFD), the second of exec.Cmd.ExtraFiles; the
// post-receive gate is the third (hookenv.GateFD).
const FD = 4

// The targets of the directory's links: fd FD, and the gate's fd, of the
// process that runs the hook.
const (
	Script = "/proc/self/fd/4"
	Gate   = "/proc/self/fd/5"
)

// Dir is the hooks directory of the root at rootDir.
func Dir(rootDir string) string { return filepath.Join(rootDir, "hooks") }

// Set is what git runs for a push: the shim collab writes into every
// repository for each hook, and where each hook's link in the directory
// leads (Script or Gate).
type Set struct {
	Shims map[string]string
	Links map[string]string
}

// Install makes Dir(rootDir)/H a symlink to its target for each hook H,
// leaving those that already are; each is made under another name and
// renamed into place, so no hook is ever missing from it.
func Install(rootDir string, set Set) error {
	dir := Dir(rootDir)
	if err := os.MkdirAll(dir, forge.DirMode); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	for h, link := range set.Links {
		p := filepath.Join(dir, h)
		if installed(p, link) {
			continue
		}
		tmp := p + ".new"
		_ = os.Remove(tmp) // left by a killed run
		err := os.Symlink(link, tmp)
		if err == nil {
			err = os.Rename(tmp, p)
		}
		if err != nil {
			_ = os.Remove(tmp)
			return fmt.Errorf("install %s: %w", p, err)
		}
	}
	return nil
}

// installed reports whether the hook at p is a link to link.
func installed(p, link string) bool {
	got, err := os.Readlink(p)
	return err == nil && got == link
}

// Usable reports whether git receiving into the repository at repoDir may
// run Dir(rootDir) in place of the repository's own hooks: the directory
// holds every hook of set as Install makes it, and the repository's hooks
// directory holds the shims, each executable and exactly as written, and
// nothing else but git's *.sample files.
func Usable(rootDir, repoDir string, set Set) bool {
	dir := Dir(rootDir)
	for h := range set.Shims {
		if link := set.Links[h]; link == "" || !installed(filepath.Join(dir, h), link) {
			return false
		}
	}
	hooks := filepath.Join(repoDir, "hooks")
	entries, err := os.ReadDir(hooks)
	if err != nil {
		return false
	}
	seen := 0
	for _, e := range entries {
		want, ok := set.Shims[e.Name()]
		if !ok {
			if !strings.HasSuffix(e.Name(), ".sample") {
				return false
			}
			continue
		}
		if !e.Type().IsRegular() || !isShim(filepath.Join(hooks, e.Name()), want) {
			return false
		}
		seen++
	}
	return seen == len(set.Shims)
}

// isShim reports whether the file at p is executable by its owner (git
// runs hooks as the forge's user, who owns them) and holds exactly want.
func isShim(p, want string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Mode().Perm()&0o100 == 0 || st.Size() != int64(len(want)) {
		return false
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(len(want))+1))
	return err == nil && bytes.Equal(b, []byte(want))
}

// GateHook is the hook that runs the gate: branch rules, push limits,
// refs/collab (pushcheck).
const GateHook = "pre-receive"

// GateDown says why git cannot run the repository's gate (GateHook), or ""
// when it can: the hook is missing (or a dangling link), not a regular
// file, not executable by its owner (git would skip it), or a collab shim
// whose binary is gone. A hook an operator wrote that runs is not down:
// what it says is the operator's. since is when it went down, as far as
// the filesystem can tell (the hook's change time; the hooks directory's
// modification time for a missing hook), or the zero time.
func GateDown(repoDir string) (why string, since time.Time) {
	p := filepath.Join(repoDir, "hooks", GateHook)
	st, err := os.Stat(p)
	if err != nil {
		if dst, err := os.Stat(filepath.Dir(p)); err == nil {
			since = dst.ModTime()
		}
		return "hook " + GateHook + " is missing", since
	}
	since = changed(st)
	switch {
	case !st.Mode().IsRegular():
		return "hook " + GateHook + " is not a regular file", since
	case st.Mode().Perm()&0o100 == 0:
		return fmt.Sprintf("hook %s is not executable (mode %v)", GateHook, st.Mode().Perm()), since
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "hook " + GateHook + " cannot be read", since
	}
	if bin := shimBinary(string(b)); bin != "" {
		if bst, err := os.Stat(bin); err != nil || !bst.Mode().IsRegular() || bst.Mode().Perm()&0o111 == 0 {
			return "hook " + GateHook + " runs " + bin + ", which is gone", since
		}
	}
	return "", time.Time{}
}

// shimBinary is the binary a collab shim (repos.Shim) execs last, or ""
// for a hook that is no collab shim.
func shimBinary(s string) string {
	if !strings.Contains(s, "Installed by collab") {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(s), "\n")
	f, err := shellwords.Split(lines[len(lines)-1])
	if err != nil || len(f) < 2 || f[0] != "exec" {
		return ""
	}
	return f[1]
}

// changed is st's change time (a chmod changes it, not the modification
// time).
func changed(st os.FileInfo) time.Time {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return time.Unix(s.Ctim.Sec, s.Ctim.Nsec)
	}
	return st.ModTime()
}
