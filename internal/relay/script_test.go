package relay

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestParseRequest(t *testing.T) {
	for _, tc := range []struct {
		line string
		hook string
		pid  int
		ok   bool
	}{
		{"pre-receive 42\n", "pre-receive", 42, true},
		{"post-receive 7", "post-receive", 7, true},
		{"pre-receive\n", "", 0, false},
		{" 42\n", "", 0, false},
		{"pre-receive 0\n", "", 0, false},
		{"pre-receive -3\n", "", 0, false},
		{"pre-receive 4 2\n", "", 0, false},
		{"pre-receive x\n", "", 0, false},
	} {
		hook, pid, ok := parseRequest(tc.line)
		if hook != tc.hook || pid != tc.pid || ok != tc.ok {
			t.Errorf("parseRequest(%q) = %q, %d, %v; want %q, %d, %v", tc.line, hook, pid, ok, tc.hook, tc.pid, tc.ok)
		}
	}
}

func TestParent(t *testing.T) {
	if got, err := parent(os.Getpid()); err != nil || got != os.Getppid() {
		t.Fatalf("parent(self) = %d, %v; want %d", got, err, os.Getppid())
	}
	if _, err := parent(-1); err == nil {
		t.Fatal("parent of no process")
	}
}

// scriptRun runs the hook script as git would under serve: a grandchild
// of this process (git is sh here), named for hook, with the relay's
// pipes at their fds, stdin in and its stdout and stderr returned.
func scriptRun(t *testing.T, hook, binary, in string, h Handler) (code int, stdout, stderr string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, hook)
	if err := os.WriteFile(path, Script("/forge root's", binary), 0o700); err != nil {
		t.Fatal(err)
	}
	child, s, err := Pipes()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	served := make(chan struct{})
	go func() {
		defer close(served)
		s.Serve(h)
	}()
	// "; exit" keeps sh from exec'ing the hook: sh stands in for git.
	cmd := exec.Command("/bin/sh", "-c", `"$0"; exit $?`, path)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOOK_TEST=yes")
	cmd.Stdin = strings.NewReader(in)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	// fds 3 to 5 stand for the hand-off, the script and the gate.
	cmd.ExtraFiles = []*os.File{nil, nil, nil, child[0], child[1]}
	err = cmd.Run()
	child[0].Close()
	child[1].Close()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	s.Close()
	<-served
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// serve runs the hook on the hook process's own stdin, stdout and stderr,
// with its environment and working directory, and its code is the hook's.
func TestScript(t *testing.T) {
	for _, code := range []int{0, 1, 3} {
		var got Request
		c, stdout, stderr := scriptRun(t, "pre-receive", "/nonexistent", "old new ref\n", func(req Request, stdin, stdout, stderr *os.File) int {
			got = req
			b, err := readAll(stdin)
			if err != nil {
				t.Error(err)
			}
			fmt.Fprintf(stdout, "out: %s", b)
			fmt.Fprintf(stderr, "err: %s", b)
			return code
		})
		if c != code || stdout != "out: old new ref\n" || stderr != "err: old new ref\n" {
			t.Errorf("exit %d, stdout %q, stderr %q; want %d and the input on both", c, stdout, stderr, code)
		}
		if got.Hook != "pre-receive" || !strings.HasPrefix(got.Dir, os.TempDir()) || !contains(got.Env, "HOOK_TEST=yes") {
			t.Errorf("request %q in %q", got.Hook, got.Dir)
		}
	}
}

// unserved starts a ScriptServer whose handler must not run, for a hook
// that goes to collab-hook: the files a hook gets at fds 3 to 7 (the
// pipes at 6 and 7), and stop, which closes the server and says whether
// the handler ran.
func unserved(t *testing.T) (extra []*os.File, stop func() (served bool)) {
	t.Helper()
	child, s, err := Pipes()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	var ran atomic.Bool
	go s.Serve(func(Request, *os.File, *os.File, *os.File) int { ran.Store(true); return 0 })
	return []*os.File{nil, nil, nil, child[0], child[1]}, func() bool { s.Close(); return ran.Load() }
}

// A hook serve cannot take (here: not a grandchild) runs collab-hook
// with its stdin, stdout and stderr, as the shims would.
func TestScriptFallback(t *testing.T) {
	_, path := scripts(t, "post-receive", "/forge root's", "echo \"binary $*\"\ncat\necho err >&2\nexit 5\n")
	extra, stop := unserved(t)
	cmd := exec.Command(path) // a child: its grandparent is not this process
	cmd.Stdin = strings.NewReader("lines\n")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.ExtraFiles = extra
	err := cmd.Run()
	ran := stop()
	if cmd.ProcessState.ExitCode() != 5 || out.String() != "binary --root /forge root's hook post-receive\nlines\n" || errb.String() != "err\n" || ran {
		t.Fatalf("%v, stdout %q, stderr %q, served %v", err, out.String(), errb.String(), ran)
	}
}

// A script whose serve is gone fails the hook (SIGPIPE: nobody reads
// what it would say, serve's client being gone too).
func TestScriptServeGone(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pre-receive")
	if err := os.WriteFile(path, Script(dir, "/nonexistent"), 0o700); err != nil {
		t.Fatal(err)
	}
	child, s, err := Pipes()
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	cmd := exec.Command(path)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	cmd.ExtraFiles = []*os.File{nil, nil, nil, child[0], child[1]}
	if err := cmd.Run(); err == nil {
		t.Fatalf("the hook passed, stderr %q", errb.String())
	}
}

// scripts writes, in a directory of its own, the hook script for hook
// with the root root ("": that directory) and, for collab-hook, a
// script of body.
func scripts(t *testing.T, hook, root, body string) (dir, path string) {
	t.Helper()
	dir = t.TempDir()
	if root == "" {
		root = dir
	}
	binary := filepath.Join(dir, "binary")
	if err := os.WriteFile(binary, []byte("#!/bin/sh\n"+body), 0o700); err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, hook)
	if err := os.WriteFile(path, Script(root, binary), 0o700); err != nil {
		t.Fatal(err)
	}
	return dir, path
}

func readAll(f *os.File) ([]byte, error) {
	var b bytes.Buffer
	_, err := b.ReadFrom(f)
	return b.Bytes(), err
}

func contains(env []string, kv string) bool {
	for _, e := range env {
		if e == kv {
			return true
		}
	}
	return false
}

// A hook whose stdout is a file, not a pipe, runs collab-hook: a file
// opened through /proc would be written from its start.
func TestScriptNotPipe(t *testing.T) {
	dir, path := scripts(t, "pre-receive", "", "echo \"binary $*\"\n")
	out, err := os.Create(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if _, err := out.WriteString("kept\n"); err != nil {
		t.Fatal(err)
	}
	extra, stop := unserved(t)
	cmd := exec.Command("/bin/sh", "-c", `"$0"; exit $?`, path)
	cmd.Stdout = out
	cmd.ExtraFiles = extra
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	ran := stop()
	b, err := os.ReadFile(out.Name())
	if err != nil || string(b) != "kept\nbinary --root "+dir+" hook pre-receive\n" || ran {
		t.Fatalf("out %q, %v, served %v", b, err, ran)
	}
}

// Close may come before Serve has started, and twice (serve closes the
// relay once git is done and again on its way out): neither waits.
func TestScriptServerCloseTwice(t *testing.T) {
	child, s, err := Pipes()
	if err != nil {
		t.Fatal(err)
	}
	defer child[0].Close()
	defer child[1].Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Close()
		s.Serve(func(Request, *os.File, *os.File, *os.File) int { t.Error("served after Close"); return 0 })
		s.Close()
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Close waited for a Serve that never ran")
	}
}

// TestEnvironOfExiting: a hook killed while it waits for its answer
// never reads as a hook without an environment: between the release of its
// memory and its becoming a zombie /proc reads its environ as empty
// (parseEnviron refuses that), and as a zombie the read fails.
func TestEnvironOfExiting(t *testing.T) {
	cmd := exec.Command("sleep", "600")
	cmd.Env = []string{"COLLAB_PRINCIPAL=alice"}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	proc := fmt.Sprintf("/proc/%d", cmd.Process.Pid)
	// Start returns once exec has closed the descriptors, before the
	// kernel has placed the new program's environment, which /proc then
	// reads as empty too; a hook that asks the relay is long past that.
	var env []string
	var err error
	for deadline := time.Now().Add(time.Minute); ; {
		env, err = environOf(proc)
		if !errors.Is(err, errExiting) || time.Now().After(deadline) {
			break
		}
		runtime.Gosched()
	}
	if err != nil || !slices.Contains(env, "COLLAB_PRINCIPAL=alice") {
		t.Fatalf("environOf(live) = %q, %v", env, err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Not reaped yet: a zombie, as a killed hook is until git waits.
	for deadline := time.Now().Add(time.Minute); ; {
		stat, err := os.ReadFile(proc + "/stat")
		if err != nil {
			t.Fatal(err)
		}
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && strings.HasPrefix(string(stat[i+1:]), " Z") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("process never became a zombie: %s", stat)
		}
		runtime.Gosched()
	}
	if env, err := environOf(proc); err == nil {
		t.Errorf("environOf(zombie) = %q, no error", env)
	}
	_ = cmd.Wait()
	for _, tc := range []struct {
		in   string
		want []string
		err  error
	}{
		{"", nil, errExiting},
		{"A=1\x00", []string{"A=1"}, nil},
		{"A=1\x00B=\x00", []string{"A=1", "B="}, nil},
	} {
		got, err := parseEnviron([]byte(tc.in))
		if !errors.Is(err, tc.err) || !slices.Equal(got, tc.want) {
			t.Errorf("parseEnviron(%q) = %q, %v; want %q, %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}
