package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/buildtest"
)

// heavy are packages collab-hook-fast must never link: it exists to start
// without them.
var heavy = []string{
	"modernc.org/sqlite",
	"modernc.org/libc",
	"github.com/urfave/cli/v2",
	"golang.org/x/crypto/ssh",
	"net/http",
	// net's initialisation is a fifth of this binary's; the journal
	// speaks to journald's socket with plain syscalls.
	"net",
	"regexp",
	"github.com/collab-forge/collab/internal/store",
	"github.com/collab-forge/collab/internal/forge",
}

func TestFastDeps(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	buildtest.LinksNone(t, ".", "", "collab-hook-fast", heavy)
}

// build puts collab-hook-fast in a fresh directory beside a stand-in
// collab-hook that says it was run, with what, and exits 42: a test sees
// whether the fast binary decided or handed over.
func build(t *testing.T) (dir string) {
	t.Helper()
	dir = t.TempDir()
	buildtest.Build(t, ".", filepath.Join(dir, "collab-hook-fast"), "")
	stub := "#!/bin/sh\necho \"collab-hook ran: $*\" >&2\nexit 42\n"
	if err := os.WriteFile(filepath.Join(dir, "collab-hook"), []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestHandsOver: every other command line reaches collab-hook whole.
func TestHandsOver(t *testing.T) {
	if testing.Short() {
		t.Skip("builds collab-hook-fast")
	}
	bin := build(t)
	root := t.TempDir()
	for _, args := range [][]string{
		{"--root", root, "repo", "list"},
		{"--help"},
		{"--root", root, "hook", "pre-receive"},
		{"--root", root, "hook", "proc-receive"},
		{"--root", root, "serve", "--as", "alice"},
		// No database, so no key index: only collab-hook can say so.
		{"--root", root, "keys-command", "git", "ssh-ed25519", "AAAA"},
	} {
		cmd := exec.Command(filepath.Join(bin, "collab-hook-fast"), args...)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 42 || strings.TrimSpace(errb.String()) != "collab-hook ran: "+strings.Join(args, " ") {
			t.Errorf("%v: %v, stderr %q; want collab-hook run with the same arguments", args, err, errb.String())
		}
	}
}

// TestInitBudget bounds what a start of collab-hook-fast initialises
// (GODEBUG=inittrace=1): a count, so the test does not depend on the
// machine; bench/push prints the time.
func TestInitBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("builds collab-hook-fast")
	}
	bin := build(t)
	inits, allocated, _ := buildtest.Inits(t, filepath.Join(bin, "collab-hook-fast"), "--root", t.TempDir(), "keys-command", "git", "ssh-ed25519", "AAAA")
	t.Logf("%d package inits, %d bytes", inits, allocated)
	if inits > 50 || allocated > 16<<10 {
		t.Errorf("%d package inits allocating %d bytes at start-up, budget 50 and 16 KiB", inits, allocated)
	}
}
