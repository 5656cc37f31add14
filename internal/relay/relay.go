// Package relay hands a hook run from the process git started to serve,
// the process that started git: serve has checked the pusher, has the
// database open and stays alive while git-receive-pack runs, so a hook
// that asks it costs a lean process (collab-hook-fast) instead of a
// SQLite-linked one that opens the database again.
//
// serve makes a socket pair and gives one end to git as fd 3 (FDVar says
// which); git's hooks inherit it. A hook sends one message on it: the hook
// name, its working directory and environment, with its stdin, stdout,
// stderr and a reply socket attached (SCM_RIGHTS). serve runs the hook on
// those very files and writes the exit code on the reply socket. Only
// serve's descendants hold the socket, and a message is a whole request
// (SOCK_SEQPACKET), so concurrent hooks cannot interleave.
//
// The package uses only syscall: collab-hook-fast, which asks, must start
// as fast as an empty Go program.
package relay

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// FDVar names the variable with serve's socket's fd number in a hook.
const FDVar = "COLLAB_HOOK_FD"

// ChildFD is the socket's fd in git (the first of exec.Cmd.ExtraFiles).
const ChildFD = 3

// Prefetch is the request a pre-receive that passed sends (Tell): its
// update lines on stdin, for serve to start what the later hooks read
// while git goes on (ops.Prefetch). Serve handles it before the next
// request.
const Prefetch = "prefetch"

// Unmerged is the request a pre-receive that shut the post-receive gate
// sends (Tell) for the moves of followed branches it found unmerged
// (hookenv.Unmerged): their update lines on stdin, for serve to record
// them as scanned once git is done (ops.Skips).
const Unmerged = "unmerged"

// Served reports whether hook is a request the process that started git
// runs for it: the three hooks of a push (collab-hook-fast decides
// pre-receive itself under the shims and sends Prefetch and Unmerged; the
// hook script relays it too) and those two requests. A switch, not a
// map: a map would be a package init in every hook binary.
func Served(hook string) bool {
	switch hook {
	case Prefetch, Unmerged, "pre-receive", "proc-receive", "post-receive":
		return true
	}
	return false
}

// MaxRequest bounds a request: a hook's environment is a few KiB.
const MaxRequest = 128 << 10

// version leads every request, so that a hook from another build that
// somehow meets this serve is refused rather than misread.
const version = "collab-relay-1"

// Request is one hook run.
type Request struct {
	Hook string
	// Dir is the hook's working directory; Env its whole environment.
	Dir string
	Env []string
}

func (r Request) encode() ([]byte, error) {
	parts := append([]string{version, r.Hook, r.Dir}, r.Env...)
	for _, p := range parts {
		if strings.IndexByte(p, 0) >= 0 {
			return nil, errors.New("relay: NUL in request")
		}
	}
	b := []byte(strings.Join(parts, "\x00"))
	if len(b) > MaxRequest {
		return nil, fmt.Errorf("relay: request of %d bytes, at most %d", len(b), MaxRequest)
	}
	return b, nil
}

func decode(b []byte) (Request, error) {
	parts := strings.Split(string(b), "\x00")
	if len(parts) < 3 || parts[0] != version {
		return Request{}, errors.New("relay: not a request of this version")
	}
	return Request{Hook: parts[1], Dir: parts[2], Env: parts[3:]}, nil
}

// ErrNotSent is an Ask that sent nothing: the caller may run the hook
// itself.
var ErrNotSent = errors.New("relay: not sent")

// ErrGone is an Ask whose serve ended (killed, say) before it answered:
// it may have run the hook, wholly or in part, so the hook must not run
// again; what it left undone is what a killed hook leaves.
var ErrGone = errors.New("the forge stopped while it ran the hook")

// Ask hands the hook run req, with this process's stdin, stdout and
// stderr, to serve over the socket fd and returns the hook's exit code.
// An error wrapping ErrNotSent means serve got nothing (no such socket,
// serve gone); any other means it may have run the hook.
func Ask(fd int, req Request) (int, error) {
	reply, err := send(fd, req, [3]int{0, 1, 2})
	if err != nil {
		return 0, err
	}
	defer syscall.Close(reply)
	var b [1]byte
	for {
		n, err := syscall.Read(reply, b[:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil || n != 1 {
			return 0, ErrGone
		}
		return int(b[0]), nil
	}
}

// Tell hands req to serve with stdin as its input and no output (the null
// device), and returns without waiting for it to run: for work whose
// outcome the sender does not need. Nothing of this process stays open in
// serve: git, which reads a hook's output until every copy is closed,
// does not wait for the work.
func Tell(fd int, req Request, stdin *os.File) error {
	null, err := syscall.Open(os.DevNull, syscall.O_WRONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotSent, err)
	}
	defer syscall.Close(null)
	reply, err := send(fd, req, [3]int{int(stdin.Fd()), null, null})
	if err != nil {
		return err
	}
	return syscall.Close(reply)
}

// send sends req with stdio (the hook's stdin, stdout and stderr) and a
// reply socket, and returns the reply socket's other end.
func send(fd int, req Request, stdio [3]int) (reply int, err error) {
	if t, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_TYPE); err != nil || t != syscall.SOCK_SEQPACKET {
		return 0, fmt.Errorf("%w: fd %d is not serve's socket", ErrNotSent, fd)
	}
	msg, err := req.encode()
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrNotSent, err)
	}
	pair, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrNotSent, err)
	}
	rights := syscall.UnixRights(stdio[0], stdio[1], stdio[2], pair[1])
	err = syscall.Sendmsg(fd, msg, rights, nil, syscall.MSG_NOSIGNAL)
	syscall.Close(pair[1])
	if err != nil {
		syscall.Close(pair[0])
		return 0, fmt.Errorf("%w: %v", ErrNotSent, err)
	}
	return pair[0], nil
}

// Handler runs one relayed hook on the hook's own files and returns its
// exit code.
type Handler func(req Request, stdin, stdout, stderr *os.File) int

// Server answers the requests of one git process's hooks.
type Server struct {
	fd       int
	done     chan struct{}
	handlers sync.WaitGroup
	// claimed is set by the first of Serve and Close: a server closed
	// before it served (a push serve refused) never serves.
	claimed atomic.Bool
}

// Pair makes the socket pair: child goes to git (exec.Cmd.ExtraFiles,
// which makes it ChildFD); the caller closes its copy once git started,
// runs Serve in a goroutine and, once git ended, Close.
func Pair() (child *os.File, s *Server, err error) {
	p, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("relay socket: %w", err)
	}
	return os.NewFile(uintptr(p[1]), "relay"), &Server{fd: p[0], done: make(chan struct{})}, nil
}

// Serve answers requests with h until Close, each in its own goroutine,
// but for a Prefetch, which it answers before it reads the next request:
// the work it starts is for the hooks that follow.
func (s *Server) Serve(h Handler) {
	if !s.claimed.CompareAndSwap(false, true) {
		return
	}
	defer close(s.done)
	buf := make([]byte, MaxRequest+1)
	oob := make([]byte, syscall.CmsgSpace(4*4))
	for {
		n, oobn, flags, _, err := syscall.Recvmsg(s.fd, buf, oob, syscall.MSG_CMSG_CLOEXEC)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || (n == 0 && oobn == 0) {
			return // Close shut the socket down
		}
		files := rights(oob[:oobn])
		req, err := decode(buf[:n])
		if err != nil || len(files) != 4 || flags&(syscall.MSG_TRUNC|syscall.MSG_CTRUNC) != 0 {
			// Nothing runs; the reply socket's close tells the hook.
			closeAll(files)
			continue
		}
		run := func() {
			defer closeAll(files)
			code := h(req, files[0], files[1], files[2])
			if code < 0 || code > 255 {
				code = 1
			}
			_, _ = files[3].Write([]byte{byte(code)})
		}
		if req.Hook == Prefetch {
			// Before the next request is read: a hook that comes after
			// finds what the prefetch started (git runs the next hook only
			// once the one that told has exited).
			run()
			continue
		}
		s.handlers.Add(1)
		go func() {
			defer s.handlers.Done()
			run()
		}()
	}
}

// Close stops Serve and waits for the hooks it is running: their work
// is the push's, even where the hook process was killed meanwhile.
func (s *Server) Close() {
	_ = syscall.Shutdown(s.fd, syscall.SHUT_RDWR)
	if s.claimed.CompareAndSwap(false, true) {
		close(s.done)
	}
	<-s.done
	s.handlers.Wait()
	_ = syscall.Close(s.fd)
}

// rights are the files a message carried.
func rights(oob []byte) []*os.File {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var files []*os.File
	for _, m := range msgs {
		fds, err := syscall.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			files = append(files, os.NewFile(uintptr(fd), "relayed"))
		}
	}
	return files
}

func closeAll(files []*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}
