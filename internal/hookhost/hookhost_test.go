package hookhost

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/forge/forgetest"
	"github.com/collab-forge/collab/internal/hookdir"
	"github.com/collab-forge/collab/internal/repos"
)

// OpenDirect hands git the hooks directory only where the repository's
// hooks are exactly the shims of the binary given.
func TestOpenDirect(t *testing.T) {
	ctx, root, db := forgetest.New(t)
	bin := filepath.Join(t.TempDir(), "collab-hook")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := repos.Create(ctx, root, db, "demo", false, "", bin, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root.ReposDir(), r.Name)
	log := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		name   string
		binary string
		change func()
		want   bool
	}{
		{"no binary", "", nil, false},
		{"another binary's shims", "/usr/local/bin/collab-hook", nil, false},
		{"the shims", bin, nil, true},
		{"a hook of the operator's", bin, func() {
			if err := os.WriteFile(filepath.Join(dir, "hooks", "update"), []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.change != nil {
				tc.change()
			}
			d := OpenDirect(root.Dir, dir, tc.binary, 1, log)
			if (d != nil) != tc.want {
				t.Fatalf("OpenDirect = %v, want a hooks directory: %v", d, tc.want)
			}
			if d == nil {
				return
			}
			defer d.Close()
			if _, err := os.Readlink(filepath.Join(hookdir.Dir(root.Dir), "pre-receive")); err != nil {
				t.Errorf("no pre-receive link in the hooks directory: %v", err)
			}
			p := &Push{direct: d, hooksDir: hookdir.Dir(root.Dir)}
			if fs := p.Files(); len(fs) != 5 || fs[0] != nil || fs[1] != d.Script || fs[2] != d.Gate {
				t.Errorf("git's extra files: %v", fs)
			}
			if c := p.Config(); len(c) != 2 || c[0] != "core.hooksPath="+hookdir.Dir(root.Dir) {
				t.Errorf("git's configuration: %q", c)
			}
		})
	}
	// No relay: nothing for git.
	var none *Push
	if none.Files() != nil || none.Env() != nil || none.Config() != nil {
		t.Error("a nil Push gives git something")
	}
	none.Close()
}
