//go:build postgres

package pgtest_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/collab-forge/collab/internal/buildtest"
	"github.com/collab-forge/collab/internal/layout"
	"github.com/collab-forge/collab/internal/pgtest"
)

// TestForgeOnPostgres: a forge whose record is on PostgreSQL, driven as
// sshd drives it (collab-hook serve --as NAME with SSH_ORIGINAL_COMMAND),
// collab-hook handing each run to collab-hook-pg:
// init --db refuses a bad URL (exit 2) and an unreachable server (exit 6)
// leaving nothing behind; then an issue filed by one principal is read by
// another, and 32 agents racing for its lease leave one holder, the rest
// told exit 3 (none exit 1).
func TestForgeOnPostgres(t *testing.T) {
	ctx := context.Background()
	c, err := pgtest.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop(ctx) })
	url, err := c.CreateDB(ctx, "forge")
	if err != nil {
		t.Fatal(err)
	}
	// As make build: collab-hook without the driver hands the run to
	// collab-hook-pg beside it.
	dir := t.TempDir()
	bin := filepath.Join(dir, "collab-hook")
	buildtest.Build(t, "../../cmd/collab-hook", bin, "urfave_cli_no_docs")
	buildtest.Build(t, "../../cmd/collab-hook", filepath.Join(dir, layout.PostgresBinary), "urfave_cli_no_docs,postgres")
	root := filepath.Join(t.TempDir(), "root")
	run := func(env []string, args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"--root", root}, args...)...)
		cmd.Env = append(os.Environ(), env...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return out.String(), ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return out.String(), 0
	}
	as := func(who, verb string) (string, int) {
		return run([]string{"SSH_ORIGINAL_COMMAND=" + verb}, "serve", "--as", who)
	}

	for _, tc := range []struct {
		url  string
		code int
	}{
		{"mysql://u@h/forge", 2},
		{"postgres://u@h/forge?connect_timeout=soon", 2},
		{pgtest.BaseURL(t.TempDir(), "forge"), 6},
	} {
		out, code := run(nil, "init", "--db", tc.url)
		if code != tc.code || strings.Count(strings.TrimSpace(out), "\n") != 0 {
			t.Errorf("init --db %s: exit %d, %q; want exit %d and one line", tc.url, code, out, tc.code)
		}
		if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("init --db %s left %s behind", tc.url, root)
		}
	}

	for _, args := range [][]string{
		{"init", "--db", url}, {"user", "add", "alice"}, {"user", "add", "bob"},
		{"repo", "create", "demo"}, {"grant", "alice", "demo", "write"}, {"grant", "bob", "demo", "write"},
	} {
		if out, code := run(nil, args...); code != 0 {
			t.Fatalf("%s: exit %d\n%s", strings.Join(args, " "), code, out)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "collab.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a forge on PostgreSQL made collab.db")
	}
	out, code := as("alice", "issue new demo --title 'on postgres'")
	if code != 0 {
		t.Fatalf("issue new: exit %d\n%s", code, out)
	}
	id := strings.TrimSuffix(strings.Fields(out)[1], "\n")
	if out, code := as("bob", "issue comment demo "+id+" --body 'seen from bob'"); code != 0 {
		t.Fatalf("issue comment: exit %d\n%s", code, out)
	}
	if out, _ := as("alice", "issue show demo "+id); !strings.Contains(out, "seen from bob") {
		t.Errorf("alice does not see bob's comment:\n%s", out)
	}

	var wg sync.WaitGroup
	codes := make(chan string, 32)
	for n := range 32 {
		who := []string{"alice", "bob"}[n%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, code := as(who, "lease acquire demo "+id+" --ttl 10m")
			codes <- who + " " + string(rune('0'+code)) + " " + out
		}()
	}
	wg.Wait()
	close(codes)
	won := map[string]bool{}
	for c := range codes {
		f := strings.Fields(c)
		switch f[1] {
		case "0":
			won[f[0]] = true
		case "3":
		default:
			t.Errorf("lease acquire: %s", c)
		}
	}
	if len(won) != 1 {
		t.Errorf("holders after the race: %v, want one", won)
	}
	out, _ = as("alice", "lease list demo")
	if !strings.Contains(out, "token 1,") {
		t.Errorf("lease list: %s; want one tenure, token 1", out)
	}
}
