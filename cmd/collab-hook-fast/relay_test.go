package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/hookdir"
	"github.com/collab-forge/collab/internal/hookenv"
	"github.com/collab-forge/collab/internal/relay"
)

// TestRelayedHooks runs the binary as git runs proc-receive and
// post-receive under serve: it hands the run, stdio and all, to the serve
// whose socket it inherited; with no serve to take it (none, or gone) it
// hands over to collab-hook with git's input unread.
func TestRelayedHooks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds collab-hook-fast")
	}
	bin := build(t)
	wd := t.TempDir()
	child, srv, err := relay.Pair()
	if err != nil {
		t.Fatal(err)
	}
	defer child.Close()
	got := make(chan relay.Request, 1)
	go srv.Serve(func(req relay.Request, stdin, stdout, stderr *os.File) int {
		got <- req
		in, _ := io.ReadAll(stdin)
		stdout.WriteString("answer to " + string(in))
		stderr.WriteString("remote words")
		return 3
	})
	run := func(hook string, sock *os.File, env ...string) (code int, stdout, stderr string) {
		t.Helper()
		cmd := exec.Command(filepath.Join(bin, "collab-hook-fast"), "--root", "/srv/collab", "hook", hook)
		cmd.Dir = wd
		cmd.Env = append(os.Environ(), env...)
		if sock != nil {
			cmd.ExtraFiles = []*os.File{sock}
		}
		cmd.Stdin = strings.NewReader("git's lines\n")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		_ = cmd.Run()
		return cmd.ProcessState.ExitCode(), out.String(), errb.String()
	}
	fd := relay.FDVar + "=" + strconv.Itoa(relay.ChildFD)
	for _, hook := range []string{"proc-receive", "post-receive"} {
		code, out, errs := run(hook, child, fd)
		if code != 3 || out != "answer to git's lines\n" || errs != "remote words" {
			t.Errorf("%s under serve: exit %d, stdout %q, stderr %q", hook, code, out, errs)
			continue
		}
		req := <-got
		if req.Hook != hook || req.Dir != wd || !slices.Contains(req.Env, fd) {
			t.Errorf("%s: serve got %s in %s", hook, req.Hook, req.Dir)
		}
	}
	// Not under serve, or a variable that names no socket: collab-hook.
	for _, env := range [][]string{{relay.FDVar + "="}, {fd}, {relay.FDVar + "=99"}, {relay.FDVar + "=x"}} {
		if code, _, errs := run("post-receive", nil, env...); code != 42 || !strings.Contains(errs, "collab-hook ran: --root /srv/collab hook post-receive") {
			t.Errorf("with %v: exit %d, %s", env, code, errs)
		}
	}
	// serve gone: the hook runs itself.
	srv.Close()
	if code, _, errs := run("proc-receive", child, fd); code != 42 || !strings.Contains(errs, "collab-hook ran: --root /srv/collab hook proc-receive") {
		t.Errorf("serve gone: exit %d, %s", code, errs)
	}
	// pre-receive is never relayed: it decides with the hand-off.
	if code, _, errs := run("pre-receive", child, fd); code != 42 {
		t.Errorf("pre-receive: exit %d, %s", code, errs)
	}
}

// TestDirectHooks runs the binary as git runs it from the root's hooks
// directory (internal/hookdir) under serve: by a link named for the hook,
// with no arguments, the program itself inherited as fd hookdir.FD (and
// post-receive through the gate, fd hookenv.GateFD, which runs it) and the
// root from COLLAB_ROOT. It is the same run as through a shim: relayed to
// serve, or handed to collab-hook as "hook NAME".
func TestDirectHooks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds collab-hook-fast")
	}
	bin := build(t)
	root := t.TempDir()
	links := map[string]string{"pre-receive": hookdir.Script, "proc-receive": hookdir.Script, "post-receive": hookdir.Gate}
	if err := hookdir.Install(root, hookdir.Set{Links: links}); err != nil {
		t.Fatal(err)
	}
	prog, err := os.Open(filepath.Join(bin, "collab-hook-fast"))
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	gate, err := hookenv.OpenGate([]byte(fmt.Sprintf("#!/proc/self/fd/%d\n", hookdir.FD)))
	if err != nil {
		t.Fatal(err)
	}
	defer gate.Close()
	child, srv, err := relay.Pair()
	if err != nil {
		t.Fatal(err)
	}
	defer child.Close()
	defer srv.Close()
	got := make(chan relay.Request, 1)
	go srv.Serve(func(req relay.Request, stdin, stdout, _ *os.File) int {
		got <- req
		in, _ := io.ReadAll(stdin)
		stdout.WriteString("answer to " + string(in))
		return 3
	})
	fd := relay.FDVar + "=" + strconv.Itoa(relay.ChildFD)
	run := func(hook string, env ...string) (code int, stdout, stderr string) {
		t.Helper()
		cmd := exec.Command(filepath.Join(hookdir.Dir(root), hook))
		cmd.Dir = t.TempDir()
		cmd.Env = append(os.Environ(), append(env, "COLLAB_ROOT="+root)...)
		cmd.ExtraFiles = []*os.File{child, prog, gate}
		cmd.Stdin = strings.NewReader("git's lines\n")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil && cmd.ProcessState == nil {
			t.Fatalf("%s: %v", hook, err)
		}
		return cmd.ProcessState.ExitCode(), out.String(), errb.String()
	}
	for _, hook := range []string{"proc-receive", "post-receive"} {
		if code, out, errs := run(hook, fd); code != 3 || out != "answer to git's lines\n" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", hook, code, out, errs)
			continue
		}
		if req := <-got; req.Hook != hook {
			t.Errorf("%s: serve got %s", hook, req.Hook)
		}
	}
	// What it cannot answer goes to collab-hook, as the shim's run would.
	for _, hook := range []string{"pre-receive", "post-receive"} {
		if code, _, errs := run(hook); code != 42 || !strings.Contains(errs, "collab-hook ran: hook "+hook+"\n") {
			t.Errorf("%s without serve: exit %d, %s", hook, code, errs)
		}
	}
}
