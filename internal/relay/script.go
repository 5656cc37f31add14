package relay

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// The script relay. A hook that serve runs from the root's hooks directory
// (internal/hookdir) is a shell script in memory (Script) rather than a Go
// program: /bin/sh starts in a third of the time of an empty Go program,
// and in a fifth of a lean one's where a page fault is dear (3 ms against
// 10 ms here). The script writes its hook's name and
// its process id on a pipe to serve (ReqFD) and waits for the exit code on
// another (AnsFD). serve opens the hook's stdin, stdout and stderr through
// /proc/PID/fd, reads its environment and working directory there too,
// runs the hook on them as for a relayed one, and answers.
//
// sh redirects fd 0 to read the answer and fd 1 to write the request, and
// serve may look meanwhile; so the script first copies its stdin and
// stdout to StdinFD and StdoutFD, which serve opens instead. StdinFD is
// the script's own fd, which sh no longer needs once it has opened it.
//
// Only a process git-receive-pack started may ask (serve checks the
// grandparent's pid), and only serve's descendants hold the pipes. Where
// serve cannot open the files (one that is not a pipe, a /proc it may not
// read) it answers Fallback, and the script runs collab-hook, which reads
// serve's hand-off and the database itself.
const (
	ReqFD    = 6
	AnsFD    = 7
	StdinFD  = 4
	StdoutFD = 9
)

// Fallback is the answer that has the script run the hook itself.
const Fallback = "-"

// Script is the hook script for the root at root, with binary the path of
// collab-hook, which runs a hook serve does not take.
func Script(root, binary string) []byte {
	return fmt.Appendf(nil, `#!/bin/sh
# collab: serve, which started git, runs this hook (internal/relay).
exec %[1]d<&0 %[2]d>&1
hook=${0##*/}
if echo "$hook $$" >&%[3]d; then
	while read -r pid code <&%[4]d; do
		[ "$pid" = "$$" ] || continue
		[ "$code" = %[5]s ] || exit "$code"
		exec %[6]s --root %[7]s hook "$hook" <&%[1]d >&%[2]d %[1]d<&- %[2]d>&-
	done
fi
echo "collab: the forge stopped while it ran the hook" >&2
exit 1
`, StdinFD, StdoutFD, ReqFD, AnsFD, Fallback, quote(binary), quote(root))
}

// quote is a word for sh: single-quoted, its single quotes spelled out.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ScriptServer answers the hook scripts of one git process.
type ScriptServer struct {
	req  *os.File // read end
	ans  *os.File // write end
	done chan struct{}
	// via is how many processes stand between this process and
	// git-receive-pack (git http-backend: one).
	via int
	// mu keeps Close from closing the files under a running hook.
	mu      sync.Mutex
	started bool
	closed  bool
}

// Pipes makes the script relay's pipes: child holds the ends git gets
// (ReqFD's write end, AnsFD's read end, in that order); the caller closes
// them once git started, runs Serve in a goroutine and, once git ended,
// Close.
func Pipes() (child [2]*os.File, s *ScriptServer, err error) {
	return PipesVia(0)
}

// PipesVia is Pipes for a git-receive-pack that via processes of its own
// start (git http-backend under collab-web: via 1).
func PipesVia(via int) (child [2]*os.File, s *ScriptServer, err error) {
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return child, nil, fmt.Errorf("relay pipe: %w", err)
	}
	ansR, ansW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		return child, nil, fmt.Errorf("relay pipe: %w", err)
	}
	return [2]*os.File{reqW, ansR}, &ScriptServer{req: reqR, ans: ansW, done: make(chan struct{}), via: via}, nil
}

// Serve answers requests with h, one at a time (git runs one hook at a
// time), until Close. A request from a process that this process's child
// (git-receive-pack) did not start is answered Fallback.
func (s *ScriptServer) Serve(h Handler) {
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return
	}
	s.started = true
	s.mu.Unlock()
	defer close(s.done)
	in := bufio.NewReader(s.req)
	for {
		line, err := in.ReadString('\n')
		if err != nil {
			return // Close, or every writer gone
		}
		hook, pid, ok := parseRequest(line)
		if !ok {
			continue
		}
		code := Fallback
		if req, files, err := open(pid, hook, s.via); err == nil {
			c := h(req, files[0], files[1], files[2])
			closeAll(files[:])
			if c < 0 || c > 255 {
				c = 1
			}
			code = strconv.Itoa(c)
		}
		// A hook that is gone does not read its answer; the next skips it.
		if _, err := fmt.Fprintf(s.ans, "%d %s\n", pid, code); err != nil {
			return
		}
	}
}

// Close stops Serve, once the hook it runs (if any) is done, and closes
// the pipes. A second Close does nothing.
func (s *ScriptServer) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	started := s.started
	s.started = true
	s.mu.Unlock()
	_ = s.req.Close() // ends a Serve waiting for a request
	if started {
		<-s.done
	}
	_ = s.ans.Close()
}

// parseRequest reads "HOOK PID\n".
func parseRequest(line string) (hook string, pid int, ok bool) {
	hook, p, ok := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
	if !ok || hook == "" {
		return "", 0, false
	}
	pid, err := strconv.Atoi(p)
	if err != nil || pid <= 0 {
		return "", 0, false
	}
	return hook, pid, true
}

// errNotPipe is a hook's stdin, stdout or stderr that is not a pipe.
var errNotPipe = errors.New("relay: not a pipe")

// errNotGrandchild is a request from a process git-receive-pack did not
// start.
var errNotGrandchild = errors.New("relay: not a hook of this git")

// open reads hook process pid's environment and working directory and
// opens its stdin, stdout and stderr, where it is a grandchild of this
// process (with via more generations between).
func open(pid int, hook string, via int) (Request, [3]*os.File, error) {
	var files [3]*os.File
	proc := "/proc/" + strconv.Itoa(pid)
	up := pid
	for range 2 + via {
		p, err := parent(up)
		if err != nil || p <= 1 {
			return Request{}, files, errNotGrandchild
		}
		up = p
	}
	if up != os.Getpid() {
		return Request{}, files, errNotGrandchild
	}
	environ, err := environOf(proc)
	if err != nil {
		return Request{}, files, err
	}
	dir, err := os.Readlink(proc + "/cwd")
	if err != nil {
		return Request{}, files, err
	}
	for i, fd := range []int{StdinFD, StdoutFD, 2} {
		flag := os.O_WRONLY
		if i == 0 {
			flag = os.O_RDONLY
		}
		// Through /proc a pipe opens as the very pipe; a socket does not,
		// and a file would open anew, at its start: only a pipe will do.
		f, err := os.OpenFile(proc+"/fd/"+strconv.Itoa(fd), flag|syscall.O_NOCTTY, 0)
		if err == nil {
			if st, serr := f.Stat(); serr != nil || st.Mode()&os.ModeNamedPipe == 0 {
				f.Close()
				err = errNotPipe
			}
		}
		if err != nil {
			closeAll(files[:i])
			return Request{}, files, err
		}
		files[i] = f
	}
	return Request{Hook: hook, Dir: dir, Env: environ}, files, nil
}

// errExiting is a hook killed while it asked: its memory, and so its
// environment, is gone while its files are still open.
var errExiting = errors.New("relay: the hook is exiting")

// environOf reads the environment of the process at proc. A process that
// is exiting (killed while it waited for its answer) reads as empty, with
// no error, from when its memory is released until it is a zombie (which
// reads as ESRCH): run with that, the hook would find no COLLAB_PRINCIPAL and
// act as the operator, crediting a merge to "local" (TestKillPushes saw
// it). A live hook always has git's variables.
func environOf(proc string) ([]string, error) {
	environ, err := os.ReadFile(proc + "/environ")
	if err != nil {
		return nil, err
	}
	return parseEnviron(environ)
}

// parseEnviron splits /proc/PID/environ's NUL-ended pairs.
func parseEnviron(environ []byte) ([]string, error) {
	if len(environ) == 0 {
		return nil, errExiting
	}
	return strings.Split(strings.TrimSuffix(string(environ), "\x00"), "\x00"), nil
}

// parent is process pid's parent's pid: in /proc/PID/stat, the field
// after the state, which follows the command's closing parenthesis.
func parent(pid int) (int, error) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("relay: unreadable stat")
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 2 {
		return 0, errors.New("relay: unreadable stat")
	}
	return strconv.Atoi(f[1])
}
