// End-to-end scenarios: each testdata/*.txtar script is a user's session
// against a real forge root, the real collab-hook and collab-web binaries,
// real git and (where a script starts one) a real sshd.
package testscript

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// binDir holds the binaries built once for all scripts.
var binDir string

// goCache and goModCache are the runner's Go build and module caches,
// which a script that builds Go as a doc shows (a bot's `go build`)
// shares: its own HOME would otherwise start an empty cache and compile
// the standard library again.
var goCache, goModCache string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "collab-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// sshd runs forced commands as another user in some scripts; let it in.
	_ = os.Chmod(dir, 0o755)
	binDir = dir
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "go env:", err)
		os.Exit(1)
	}
	goCache, goModCache, _ = strings.Cut(strings.TrimSpace(string(out)), "\n")
	// As make build: collab-web and collab-hook-pg with the PostgreSQL store.
	for _, b := range []struct{ name, cmd, tags string }{
		{"collab-hook", "collab-hook", "urfave_cli_no_docs"},
		{"collab-hook-fast", "collab-hook-fast", "urfave_cli_no_docs"},
		{"collab-web", "collab-web", "urfave_cli_no_docs,postgres"},
		{"collab-hook-pg", "collab-hook", "urfave_cli_no_docs,postgres"},
	} {
		build := exec.Command("go", "build", "-tags", b.tags, "-o", filepath.Join(dir, b.name), "github.com/collab-forge/collab/cmd/"+b.cmd)
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := build.CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n%s", b.name, err, out)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestScripts(t *testing.T) {
	testscript.Run(t, params(t, "testdata"))
}

// bothTransports are the scenarios whose git traffic TestScriptsHTTP runs
// again over HTTP (issue 41: the same decisions over both transports).
// Each clones and pushes through $GIT_URL, which sshd-start points at sshd
// or, in the HTTP run, at collab-web; verbs go over sshd in both runs.
var bothTransports = []string{
	"fence_push", "fence_submit", "gate_bypass", "gate_footers", "gate_protect",
	"gate_strategies", "gate_submit", "lease_zombie", "patch_base_move", "push_limits",
	"contract_ssh_push", "export_ssh", "hostile_bidi", "push_bounds",
}

// TestScriptsHTTP runs bothTransports with git over HTTP through
// collab-web: [http] and [ssh] guard the lines where the transports
// honestly differ (a refusal serve makes before git starts is an HTTP
// status there).
func TestScriptsHTTP(t *testing.T) {
	p := params(t, "")
	for _, name := range bothTransports {
		p.Files = append(p.Files, filepath.Join("testdata", name+".txtar"))
	}
	p.Condition = transportCondition("http")
	ssh := p.Setup
	p.Setup = func(e *testscript.Env) error {
		err := ssh(e)
		e.Setenv("TRANSPORT", "http")
		return err
	}
	testscript.Run(t, p)
}

func params(t *testing.T, dir string) testscript.Params {
	return testscript.Params{
		Dir:                 dir,
		RequireExplicitExec: false,
		Setup: func(e *testscript.Env) error {
			return setup(t, e)
		},
		Cmds:      commands(),
		Condition: transportCondition("ssh"),
	}
}

// transportCondition adds [ssh] and [http], true for the run's transport of
// git, to condition; TRANSPORT tells the script commands.
func transportCondition(transport string) func(string) (bool, error) {
	return func(cond string) (bool, error) {
		switch cond {
		case "ssh", "http":
			return cond == transport, nil
		}
		return condition(cond)
	}
}

// setup gives every script a fresh forge root, a home with a git identity,
// and the binaries on PATH.
func setup(t *testing.T, e *testscript.Env) error {
	work := e.WorkDir
	home := filepath.Join(work, "home")
	root := filepath.Join(work, "root")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return err
	}
	e.Setenv("HOME", home)
	e.Setenv("ROOT", root)
	e.Setenv("COLLAB_ROOT", root)
	e.Setenv("BIN", binDir)
	e.Setenv("PATH", binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	e.Setenv("GIT_AUTHOR_NAME", "Ada")
	e.Setenv("GIT_AUTHOR_EMAIL", "ada@example.com")
	e.Setenv("GIT_COMMITTER_NAME", "Ada")
	e.Setenv("GIT_COMMITTER_EMAIL", "ada@example.com")
	e.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	e.Setenv("TZ", "UTC")
	e.Setenv("TRANSPORT", "ssh")
	e.Setenv("GOCACHE", goCache)
	e.Setenv("GOMODCACHE", goModCache)
	// Where git goes: until sshd-start points it at a real sshd, through
	// each principal's stand-in for ssh (git-as, ssh-use), which runs the
	// forced command as sshd would.
	e.Setenv("GIT_URL", "ssh://git@forge.test")
	gitconfig := "[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n[protocol \"file\"]\n\tallow = always\n"
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(gitconfig), 0o644); err != nil {
		return err
	}
	out, err := exec.Command(filepath.Join(binDir, "collab-hook"), "--root", root, "init", "--url", "http://forge.test").CombinedOutput()
	if err != nil {
		return fmt.Errorf("collab-hook init: %v: %s", err, out)
	}
	return nil
}

// commands are the custom script commands; each area of the suite adds its
// own in its own file.
func commands() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	cmds := map[string]func(ts *testscript.TestScript, neg bool, args []string){}
	for _, m := range []map[string]func(ts *testscript.TestScript, neg bool, args []string){
		baseCmds(), sshdCmds(), webCmds(), sessionCmds(), timingCmds(), robustCmds(), docCmds(), clientCmds(),
	} {
		for k, v := range m {
			cmds[k] = v
		}
	}
	return cmds
}

func baseCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		// stdout-trim FILE: write the last stdout with trailing spaces removed
		// from each line (git pads remote: lines).
		"trimout": func(ts *testscript.TestScript, neg bool, args []string) {
			if len(args) != 1 {
				ts.Fatalf("usage: trimout FILE")
			}
			var b strings.Builder
			for _, l := range strings.Split(ts.ReadFile("stdout")+ts.ReadFile("stderr"), "\n") {
				b.WriteString(strings.TrimRight(l, " \t") + "\n")
			}
			ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(b.String()), 0o644))
		},
	}
}

func condition(cond string) (bool, error) {
	switch cond {
	case "root":
		return os.Geteuid() == 0, nil
	case "linux":
		return runtime.GOOS == "linux", nil
	case "tmpfs":
		return canMountTmpfs(), nil
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}
