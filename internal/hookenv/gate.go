package hookenv

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/pushcheck"
)

// The post-receive gate. Through serve, git runs post-receive from the
// root's hooks directory (internal/hookdir) as fd GateFD: a script of one
// line, made per push in memory, whose interpreter is collab-hook-fast
// (the fd serve hands git for the direct hooks). pre-receive, the first to
// know a push's updates, takes the gate's execute bit away when
// post-receive would find nothing to do (collab-hook-fast's does, which
// decides every push serve stamped; a push it hands to collab-hook keeps
// its post-receive). git checks a hook's mode just before it runs it, so
// it then skips post-receive and starts no process for it at all.
// pre-receive has exited before git moves any ref, so git never sees the
// mode change between its check and its exec.
//
// Only the merge scan makes post-receive work: a move of a branch that an
// open patch targets or whose scan progress is recorded (PostReceiveVar
// lists them as serve read them). A branch that joins that list while the
// push runs (a concurrent first revision of a patch) has a scan start
// recorded below this push's new tip, and the next push or collab-web's
// sweep scans from there, as for any missed post-receive.
const (
	// GateFD is the gate's fd in git and its hooks: after the relay's
	// socket (3) and collab-hook-fast (4).
	GateFD = 5
	// PostReceiveVar is set where serve made the gate: the branches
	// whose move post-receive scans, space-separated ("-": none).
	PostReceiveVar = "COLLAB_POST_RECEIVE"
	gateName       = "collab-post-receive"
)

// OpenGate makes one push's gate, executable, running the program at fd
// interp of the process that runs it. The file returned is read-only: a
// file open for writing cannot be run (ETXTBSY).
func OpenGate(interp int) (*os.File, error) {
	fd, err := unix.MemfdCreate(gateName, unix.MFD_CLOEXEC|unix.MFD_EXEC)
	if errors.Is(err, unix.EINVAL) {
		// Before Linux 6.3 there is no MFD_EXEC, and every memfd runs.
		fd, err = unix.MemfdCreate(gateName, unix.MFD_CLOEXEC)
	}
	if err != nil {
		return nil, fmt.Errorf("make the post-receive gate: %w", err)
	}
	w := os.NewFile(uintptr(fd), gateName)
	defer w.Close()
	if _, err := fmt.Fprintf(w, "#!/proc/self/fd/%d\n", interp); err != nil {
		return nil, fmt.Errorf("write the post-receive gate: %w", err)
	}
	if err := w.Chmod(0o700); err != nil {
		return nil, fmt.Errorf("open the post-receive gate: %w", err)
	}
	r, err := os.Open("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return nil, fmt.Errorf("reopen the post-receive gate: %w", err)
	}
	return r, nil
}

// ShutGate takes the execute bit from the gate this process inherited at
// GateFD, after checking that it is one.
func ShutGate() error { return shutGate(GateFD) }

func shutGate(fd int) error {
	target, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return fmt.Errorf("shut the post-receive gate: %w", err)
	}
	if target != "/memfd:"+gateName+" (deleted)" {
		return fmt.Errorf("shut the post-receive gate: fd %d is %s", fd, target)
	}
	if err := unix.Fchmod(fd, 0o600); err != nil {
		return fmt.Errorf("shut the post-receive gate: %w", err)
	}
	return nil
}

// maxScanned bounds PostReceiveVar's value, well under what one
// environment string may hold (128 KiB).
const maxScanned = 16 << 10

// ScannedEnv is the PostReceiveVar pair for branches, to go beside the
// gate it describes; nil where there are too many to list (pre-receive
// then never shuts the gate).
func ScannedEnv(branches []string) []string {
	v := "-"
	if len(branches) > 0 {
		v = strings.Join(branches, " ")
	}
	if len(v) > maxScanned {
		return nil
	}
	return []string{PostReceiveVar + "=" + v}
}

// decodeScanned reads ScannedEnv's value; nil where there is none or
// it is malformed (no gate: post-receive runs).
func decodeScanned(v string) map[string]bool {
	if v == "" {
		return nil
	}
	out := map[string]bool{}
	if v == "-" {
		return out
	}
	for _, b := range strings.Fields(v) {
		if !git.IsFullRef(pushcheck.HeadsPrefix + b) {
			return nil
		}
		out[b] = true
	}
	return out
}

// PostReceiveIdle reports whether post-receive would find nothing to do
// in a push of updates, where serve made the gate: the push moves no
// branch the merge scan follows. Without a gate it is false.
func (h Handoff) PostReceiveIdle(updates []pushcheck.Update) bool {
	if h.Scanned == nil {
		return false
	}
	for _, u := range updates {
		if b, ok := strings.CutPrefix(u.Ref, pushcheck.HeadsPrefix); ok && u.New != git.ZeroOID && h.Scanned[b] {
			return false
		}
	}
	return true
}
