// Package hookdir keeps ROOT/hooks, the hooks directory serve points
// git-receive-pack at (core.hooksPath) so that git runs collab-hook-fast
// itself rather than a repository's /bin/sh shim that execs it: about
// 0.6 ms of CPU and a process image less per hook.
//
// Each hook there is a symlink to /proc/self/fd/FD: serve opens
// collab-hook-fast and hands it to git as fd FD, which git's hook
// processes inherit, so the hook runs the very file serve opened. Nothing
// in the directory names a binary, so it never goes stale, and a binary
// replaced or deleted mid-push still runs as opened. Without that fd (any
// git that serve did not start) the links lead nowhere and git would skip
// the hooks, so only serve, with the fd in place, may name the directory.
//
// serve does so only where the repository's own hooks are exactly the
// shims collab writes and nothing else would run: then both run the same
// program with the same input, and a repository whose hooks an operator
// changed, removed or made unexecutable keeps what its hooks say.
package hookdir

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/collab-forge/collab/internal/forge"
)

// FD is collab-hook-fast's fd in git and its hooks: after the relay's
// socket (relay.ChildFD), the second of exec.Cmd.ExtraFiles.
const FD = 4

// target is where every hook of the directory leads: fd FD of the
// process that runs it.
const target = "/proc/self/fd/4"

// Dir is the hooks directory of the root at rootDir.
func Dir(rootDir string) string { return filepath.Join(rootDir, "hooks") }

// Install makes Dir(rootDir)/H a symlink to the inherited fd for each hook
// H, leaving those that already are; each link is made under another name
// and renamed into place, so no hook is ever missing from it.
func Install(rootDir string, hooks []string) error {
	dir := Dir(rootDir)
	if err := os.MkdirAll(dir, forge.DirMode); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	for _, h := range hooks {
		p := filepath.Join(dir, h)
		if got, err := os.Readlink(p); err == nil && got == target {
			continue
		}
		tmp := p + ".new"
		_ = os.Remove(tmp) // left by a killed run
		if err := os.Symlink(target, tmp); err != nil {
			return fmt.Errorf("link %s: %w", p, err)
		}
		if err := os.Rename(tmp, p); err != nil {
			_ = os.Remove(tmp)
			return fmt.Errorf("link %s: %w", p, err)
		}
	}
	return nil
}

// Usable reports whether git receiving into the repository at repoDir may
// run Dir(rootDir) in place of the repository's own hooks, which shims
// maps to the text collab writes for each: the directory has a link for
// every hook, and the repository's hooks directory holds those shims,
// each executable and exactly as written, and nothing else but git's
// *.sample files.
func Usable(rootDir, repoDir string, shims map[string]string) bool {
	dir := Dir(rootDir)
	for h := range shims {
		if got, err := os.Readlink(filepath.Join(dir, h)); err != nil || got != target {
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
		want, ok := shims[e.Name()]
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
	return seen == len(shims)
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
