package hookenv

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The late hand-off. serve starts git-receive-pack before it has opened the
// database, so that git's start (about as long as serve's access check)
// runs beside the check instead of after it, and holds everything between
// git and the client until the check has passed. What serve reads from the
// database (the access check, the push limits, the branch rules, the
// branches the merge scan follows) is then no longer known when git's
// environment is made: serve writes it, as NAME=value lines, into a file
// in memory git inherits at the fd HandoffFDVar names, and seals that file
// against any change before it lets the client's input reach git.
//
// A hook runs only once git has the client's commands, so it finds the
// file sealed. The seal, not the order of serve's code, is what makes the
// file count: a hook that finds it still open to writes, or another file
// at that fd, reads no hand-off at all and asks the database, as for a
// push serve did not stamp.
const (
	// HandoffFDVar names the fd of the late hand-off in git and its
	// hooks; set by serve alone (Owned).
	HandoffFDVar = "COLLAB_HANDOFF_FD"
	// LateFD is where serve gives git the file: its first extra file.
	LateFD   = 3
	lateName = "collab-handoff"
	// maxLate bounds what a hook reads from the file: the followed
	// branches are the largest part, at most maxScanned.
	maxLate = 64 << 10
)

// late are the variables the late hand-off may carry: those serve reads
// from the database.
var late = map[string]bool{AccessVar: true, LimitsVar: true, RulesVar: true, PostReceiveVar: true}

// Late is one push's late hand-off, as serve holds it: Git is the
// read-only file for git's fds, Seal writes and seals it.
type Late struct {
	w   *os.File
	Git *os.File
}

// OpenLate makes an empty late hand-off.
func OpenLate() (*Late, error) {
	fd, err := unix.MemfdCreate(lateName, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("make the hand-off file: %w", err)
	}
	w := os.NewFile(uintptr(fd), lateName)
	r, err := os.Open("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("reopen the hand-off file: %w", err)
	}
	return &Late{w: w, Git: r}, nil
}

// Seal writes pairs (NAME=value, of the late variables only) and seals the
// file: from then on it reads as the hand-off. A pair whose value holds a
// newline is left out, which reads as no such variable.
func (l *Late) Seal(pairs []string) error {
	var b bytes.Buffer
	for _, kv := range pairs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !late[k] || strings.ContainsRune(v, '\n') {
			continue
		}
		b.WriteString(kv)
		b.WriteByte('\n')
	}
	if _, err := l.w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("write the hand-off file: %w", err)
	}
	const seals = unix.F_SEAL_WRITE | unix.F_SEAL_GROW | unix.F_SEAL_SHRINK | unix.F_SEAL_SEAL
	if _, err := unix.FcntlInt(l.w.Fd(), unix.F_ADD_SEALS, seals); err != nil {
		return fmt.Errorf("seal the hand-off file: %w", err)
	}
	return nil
}

// Sealed reports whether Seal has sealed the file.
func (l *Late) Sealed() bool {
	seals, err := unix.FcntlInt(l.Git.Fd(), unix.F_GET_SEALS, 0)
	return err == nil && seals&unix.F_SEAL_WRITE != 0
}

// Close closes both ends; the file goes with the last fd on it.
func (l *Late) Close() error { return errors.Join(l.w.Close(), l.Git.Close()) }

// Pairs are h's late variables as NAME=value pairs, for Seal: Encode's
// access check, limits and rules (not the principal, root or URL, which
// git's environment carries).
func (h Handoff) Pairs() []string {
	var out []string
	for _, kv := range h.Encode() {
		if k, _, _ := strings.Cut(kv, "="); late[k] {
			out = append(out, kv)
		}
	}
	return out
}

// ProcessEnv is os.Getenv for this process's hand-off: the late
// variables come from the sealed file HandoffFDVar names, where there is
// one, everything else from the environment.
func ProcessEnv() func(string) string {
	fd, err := strconv.Atoi(os.Getenv(HandoffFDVar))
	if err != nil || fd < 0 {
		return os.Getenv
	}
	pairs := ReadLate(uintptr(fd))
	return func(k string) string {
		if late[k] {
			return pairs[k]
		}
		return os.Getenv(k)
	}
}

// ReadLate reads the late hand-off at fd; nil where fd is not one, or not
// sealed yet.
func ReadLate(fd uintptr) map[string]string {
	if isMemfd(int(fd), lateName) != nil {
		return nil
	}
	seals, err := unix.FcntlInt(fd, unix.F_GET_SEALS, 0)
	if err != nil || seals&unix.F_SEAL_WRITE == 0 {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(fd), &st); err != nil || st.Size > maxLate {
		return nil
	}
	buf := make([]byte, st.Size)
	n, err := unix.Pread(int(fd), buf, 0)
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(buf[:n]), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && late[k] {
			out[k] = v
		}
	}
	return out
}
