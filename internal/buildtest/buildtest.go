// Package buildtest measures, for the tests of collab's binaries, what a
// binary links and what its start initialises: every ssh login and push
// starts collab-hook-fast or collab-hook, so both are kept in check by
// counts that do not depend on the machine (bench/push prints the times).
// For tests only.
package buildtest

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// LinksNone fails t for each package of forbidden that the command in dir
// (named name in the message) links, built with tags (go list -deps).
func LinksNone(t *testing.T, dir, tags, name string, forbidden []string) {
	t.Helper()
	cmd := exec.Command("go", "list", "-tags", tags, "-deps", ".")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		deps[p] = true
	}
	for _, p := range forbidden {
		if deps[p] {
			t.Errorf("%s links %s (go list -deps, or go mod why -m, says through what)", name, p)
		}
	}
}

// Build builds the command in dir, statically as make build does, to bin.
func Build(t *testing.T, dir, bin, tags string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-tags", tags, "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
}

// Inits runs bin with args and GODEBUG=inittrace=1 (its outcome does not
// matter: the inits have run) and returns how many package inits ran, the
// bytes they allocated, and those that allocated 2 KiB or more.
func Inits(t *testing.T, bin string, args ...string) (inits, allocated int, heavy []string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	_ = cmd.Run()
	for _, l := range strings.Split(errb.String(), "\n") {
		f := strings.Fields(l)
		// init PKG @T ms, C ms clock, B bytes, A allocs
		if len(f) < 9 || f[0] != "init" {
			continue
		}
		inits++
		b, _ := strconv.Atoi(f[7])
		allocated += b
		if b >= 2048 {
			heavy = append(heavy, f[1]+" "+f[7])
		}
	}
	if inits == 0 {
		t.Fatalf("no inittrace output:\n%s", errb.String())
	}
	return inits, allocated, heavy
}
