package relay

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The hook side runs in a child process (this test binary again), as a
// hook does: its stdio are what travels to the server.
func TestMain(m *testing.M) {
	if os.Getenv("RELAY_TEST_TELL") != "" {
		fd, _ := strconv.Atoi(os.Getenv(FDVar))
		r, w, err := os.Pipe()
		if err == nil {
			_, err = w.WriteString("told lines")
			w.Close()
		}
		if err == nil {
			err = Tell(fd, Request{Hook: Prefetch, Dir: "/d"}, r)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "tell:", err)
			os.Exit(101)
		}
		os.Exit(0)
	}
	if os.Getenv("RELAY_TEST_HOOK") != "" {
		fd, _ := strconv.Atoi(os.Getenv(FDVar))
		code, err := Ask(fd, Request{Hook: os.Getenv("RELAY_TEST_HOOK"), Dir: "/some/dir", Env: []string{"A=1", "B=two words"}})
		switch {
		case errors.Is(err, ErrNotSent):
			fmt.Fprintln(os.Stderr, "not sent:", err)
			os.Exit(100)
		case err != nil:
			fmt.Fprintln(os.Stderr, "failed:", err)
			os.Exit(101)
		}
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// hook runs the hook side with stdin, with the server's socket (or none)
// as fd 3; it returns the exit code, stdout and stderr.
func hook(t *testing.T, name string, child *os.File, stdin string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "RELAY_TEST_HOOK="+name, FDVar+"="+strconv.Itoa(ChildFD))
	if child != nil {
		cmd.ExtraFiles = []*os.File{child}
	} else {
		// fd 3 is then a plain file, not a socket.
		f, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.ExtraFiles = []*os.File{f}
	}
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

func TestRelay(t *testing.T) {
	child, s, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	defer child.Close()
	got := make(chan Request, 10)
	go s.Serve(func(req Request, stdin, stdout, stderr *os.File) int {
		got <- req
		in, _ := io.ReadAll(stdin)
		fmt.Fprintf(stdout, "out:%s", in)
		fmt.Fprint(stderr, "err")
		if req.Hook == "fails" {
			return 7
		}
		return 0
	})
	for _, tc := range []struct {
		hook string
		code int
	}{{"post-receive", 0}, {"fails", 7}} {
		code, out, errs := hook(t, tc.hook, child, "lines")
		if code != tc.code || out != "out:lines" || errs != "err" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want %d, out:lines, err", tc.hook, code, out, errs, tc.code)
		}
		req := <-got
		if req.Hook != tc.hook || req.Dir != "/some/dir" || strings.Join(req.Env, "|") != "A=1|B=two words" {
			t.Errorf("server got %+v", req)
		}
	}
	s.Close()
	// A hook that comes after serve stopped sends nothing: it may run
	// itself.
	if code, _, errs := hook(t, "post-receive", child, ""); code != 100 {
		t.Errorf("after Close: exit %d (%s); want 100 (not sent)", code, errs)
	}
	if code, _, errs := hook(t, "post-receive", nil, ""); code != 100 {
		t.Errorf("fd 3 not a socket: exit %d (%s); want 100 (not sent)", code, errs)
	}
}

// A request the server cannot read is dropped: its reply socket closes
// without a code, which Ask reports as an error that is not ErrNotSent.
func TestDroppedRequest(t *testing.T) {
	child, s, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	defer child.Close()
	go s.Serve(func(Request, *os.File, *os.File, *os.File) int { return 0 })
	defer s.Close()
	pair, err := socketpair()
	if err != nil {
		t.Fatal(err)
	}
	defer pair[0].Close()
	if err := sendRaw(int(child.Fd()), []byte("not-a-request"), pair[1]); err != nil {
		t.Fatal(err)
	}
	pair[1].Close()
	b := make([]byte, 1)
	if n, _ := pair[0].Read(b); n != 0 {
		t.Errorf("bad request answered %v", b[:n])
	}
}

func TestEncoding(t *testing.T) {
	for _, r := range []Request{
		{Hook: "proc-receive", Dir: "/r/x.git", Env: []string{"A=b=c", "EMPTY="}},
		{Hook: "post-receive", Dir: ".", Env: nil},
	} {
		b, err := r.encode()
		if err != nil {
			t.Fatal(err)
		}
		got, err := decode(b)
		if err != nil || got.Hook != r.Hook || got.Dir != r.Dir || strings.Join(got.Env, "\n") != strings.Join(r.Env, "\n") {
			t.Errorf("%+v came back as %+v, %v", r, got, err)
		}
	}
	if _, err := (Request{Hook: "x", Env: []string{"A=\x00"}}).encode(); err == nil {
		t.Error("NUL encoded")
	}
	if _, err := (Request{Hook: "x", Env: []string{strings.Repeat("x", MaxRequest)}}).encode(); err == nil {
		t.Error("oversized request encoded")
	}
	if _, err := decode([]byte("collab-relay-0\x00x\x00y")); err == nil {
		t.Error("other version decoded")
	}
}

func socketpair() ([2]*os.File, error) {
	p, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return [2]*os.File{}, err
	}
	return [2]*os.File{os.NewFile(uintptr(p[0]), "a"), os.NewFile(uintptr(p[1]), "b")}, nil
}

// sendRaw sends msg with the reply socket alone attached.
func sendRaw(fd int, msg []byte, reply *os.File) error {
	return syscall.Sendmsg(fd, msg, syscall.UnixRights(int(reply.Fd())), nil, syscall.MSG_NOSIGNAL)
}

// Tell returns without waiting for the handler, which gets the stdin Tell
// gave, and the server stays usable when the teller is gone before the
// handler answers.
func TestTell(t *testing.T) {
	child, s, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	defer child.Close()
	release := make(chan struct{})
	got := make(chan string, 2)
	go s.Serve(func(req Request, stdin, stdout, stderr *os.File) int {
		in, _ := io.ReadAll(stdin)
		if req.Hook == Prefetch {
			<-release // the teller has exited by now
		}
		got <- req.Hook + ":" + string(in)
		return 0
	})
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "RELAY_TEST_TELL=1", FDVar+"="+strconv.Itoa(ChildFD))
	cmd.ExtraFiles = []*os.File{child}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("teller: %v: %s", err, out)
	}
	close(release)
	if g := <-got; g != Prefetch+":told lines" {
		t.Errorf("handler got %q", g)
	}
	if code, out, _ := hook(t, "post-receive", child, "next"); code != 0 || out != "" {
		t.Errorf("a hook after the teller: exit %d, stdout %q", code, out)
	}
	if g := <-got; g != "post-receive:next" {
		t.Errorf("handler got %q", g)
	}
	s.Close()
}

// A Prefetch is handled before the request after it is even read: the
// hook that follows finds what the prefetch started, however the
// goroutines run. Both requests are queued before serving starts; while
// the Prefetch is handled the next one must still be in the socket.
func TestPrefetchFirst(t *testing.T) {
	child, s, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	defer child.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	stdio := [3]int{int(null.Fd()), int(null.Fd()), int(null.Fd())}
	for _, hook := range []string{Prefetch, "post-receive"} {
		reply, err := send(int(child.Fd()), Request{Hook: hook, Dir: "/d"}, stdio)
		if err != nil {
			t.Fatal(err)
		}
		defer syscall.Close(reply)
	}
	var prefetched atomic.Bool
	queued, sawPrefetched := make(chan bool, 1), make(chan bool, 1)
	go s.Serve(func(req Request, _, _, _ *os.File) int {
		if req.Hook == Prefetch {
			var b [1]byte
			n, _, err := syscall.Recvfrom(s.fd, b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			queued <- err == nil && n > 0
			prefetched.Store(true)
			return 0
		}
		sawPrefetched <- prefetched.Load()
		return 0
	})
	if !<-queued {
		t.Error("the request after a Prefetch was read while the Prefetch was handled")
	}
	if !<-sawPrefetched {
		t.Error("the request after a Prefetch ran before the Prefetch was done")
	}
	s.Close()
}

// A server closed before it served (serve refused the push) returns at
// once, and serves nothing after: a hook's request then fails, and the
// hook runs itself.
func TestCloseUnserved(t *testing.T) {
	child, s, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	defer child.Close()
	done := make(chan struct{})
	go func() {
		s.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Close of a server that never served did not return")
	}
	ran := false
	s.Serve(func(Request, *os.File, *os.File, *os.File) int { ran = true; return 0 })
	if ran {
		t.Error("a closed server served")
	}
}
