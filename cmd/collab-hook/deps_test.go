package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/buildtest"
)

// Every ssh login runs collab-hook twice (keys-command) and every push
// three to five times (serve, the hooks), so everything it links costs
// start-up time: package inits and the pages they touch (bench/push prints
// the figures). These tests keep what it links in check.

// forbidden are packages collab-hook must never link: the web stack (for
// collab-web alone), and urfave/cli's man-page generator (left out by the
// urfave_cli_no_docs tag the Makefile builds with).
var forbidden = []string{
	"net/http",
	"html/template",
	"crypto/tls",
	"github.com/collab-forge/collab/internal/web",
	"github.com/collab-forge/collab/internal/webhook",
	"github.com/collab-forge/collab/internal/markdown",
	"github.com/cpuguy83/go-md2man/v2/md2man",
	"github.com/russross/blackfriday/v2",
	"github.com/chromedp/chromedp",
}

func TestLinksNothingHeavy(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	buildtest.LinksNone(t, ".", "urfave_cli_no_docs", "collab-hook", forbidden)
}

// initBudget bounds the package inits a start of collab-hook runs and the
// bytes they allocate (GODEBUG=inittrace=1; both are counts, not times,
// so the test does not depend on the machine). Raise it only with a
// bench/push start-up figure that shows what the new package costs.
const (
	initBudget      = 92
	initBytesBudget = 80 << 10
)

func TestInitBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("builds collab-hook")
	}
	bin := filepath.Join(t.TempDir(), "collab-hook")
	buildtest.Build(t, ".", bin, "urfave_cli_no_docs")
	// No database: it refuses; the inits have run.
	inits, allocated, heavy := buildtest.Inits(t, bin, "--root", t.TempDir(), "keys-command", "git", "ssh-ed25519", "AAAA")
	t.Logf("%d package inits, %d bytes allocated (>= 2 KiB: %s)", inits, allocated, strings.Join(heavy, ", "))
	if inits > initBudget {
		t.Errorf("%d package inits at start-up, budget %d", inits, initBudget)
	}
	if allocated > initBytesBudget {
		t.Errorf("package inits allocate %d bytes, budget %d (>= 2 KiB: %s)", allocated, initBytesBudget, strings.Join(heavy, ", "))
	}
}
