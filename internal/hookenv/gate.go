package hookenv

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/ids"
	"github.com/collab-forge/collab/internal/pushcheck"
)

// The post-receive gate. Through serve, git runs post-receive from the
// root's hooks directory (internal/hookdir) as fd GateFD: the hook script
// (relay.Script), made per push in memory. pre-receive, the first to
// know a push's updates, takes the gate's execute bit away when
// post-receive would find nothing to do (the pre-receive serve runs
// does). git checks a hook's mode just before it runs it, so it then
// skips post-receive and starts no process for it at all.
// pre-receive has exited before git moves any ref, so git never sees the
// mode change between its check and its exec.
//
// Only the merge scan makes post-receive work: a move of a branch that an
// open patch targets or whose scan progress is recorded (PostReceiveVar
// lists them as serve read them), and even that only where the move might
// merge one (Unmerged). A branch that joins that list while the
// push runs (a concurrent first revision of a patch) has a scan start
// recorded below this push's new tip, and the next push or collab-web's
// sweep scans from there, as for any missed post-receive.
const (
	// GateFD is the gate's fd in git and its hooks: after the relay's
	// socket (3) and the hook script (4).
	GateFD = 5
	// PostReceiveVar is set where serve made the gate: the branches
	// whose move post-receive scans, space-separated ("-": none), as
	// ScannedEnv writes them.
	PostReceiveVar = "COLLAB_POST_RECEIVE"
	gateName       = "collab-post-receive"
)

// OpenGate makes one push's gate, executable, holding script (the hook
// script serve hands git, relay.Script). The file returned is read-only:
// a file open for writing cannot be run (ETXTBSY).
func OpenGate(script []byte) (*os.File, error) {
	f, err := openScript(gateName, script)
	if err != nil {
		return nil, fmt.Errorf("make the post-receive gate: %w", err)
	}
	return f, nil
}

// OpenScript makes an executable file in memory, named name, holding
// script; the file returned is read-only, as for OpenGate.
func OpenScript(name string, script []byte) (*os.File, error) {
	f, err := openScript(name, script)
	if err != nil {
		return nil, fmt.Errorf("make %s in memory: %w", name, err)
	}
	return f, nil
}

func openScript(name string, script []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_EXEC)
	if errors.Is(err, unix.EINVAL) {
		// Before Linux 6.3 there is no MFD_EXEC, and every memfd runs.
		fd, err = unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	}
	if err != nil {
		return nil, err
	}
	w := os.NewFile(uintptr(fd), name)
	defer w.Close()
	if _, err := w.Write(script); err != nil {
		return nil, err
	}
	if err := w.Chmod(0o700); err != nil {
		return nil, err
	}
	return os.Open("/proc/self/fd/" + strconv.Itoa(fd))
}

// Shut takes the execute bit from gate, serve's own file of it, for a
// pre-receive that serve ran.
func Shut(gate *os.File) error { return shutGate(int(gate.Fd())) }

func shutGate(fd int) error {
	if err := isMemfd(fd, gateName); err != nil {
		return fmt.Errorf("shut the post-receive gate: %w", err)
	}
	if err := unix.Fchmod(fd, 0o600); err != nil {
		return fmt.Errorf("shut the post-receive gate: %w", err)
	}
	return nil
}

// isMemfd checks that fd is a memfd this package made under name (one
// that serve handed down, not whatever else a process may have there).
func isMemfd(fd int, name string) error {
	target, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return err
	}
	if target != "/memfd:"+name+" (deleted)" {
		return fmt.Errorf("fd %d is %s", fd, target)
	}
	return nil
}

// Followed is a branch whose move post-receive scans, as serve read it
// before git started: Tip is where its last merge scan ended ("" where
// that was not handed off), IDs the open patches that target it.
type Followed struct {
	Branch string
	Tip    string
	IDs    []string
}

// maxScanned bounds PostReceiveVar's value, well under what one
// environment string may hold (128 KiB).
const maxScanned = 16 << 10

// ScannedEnv is the PostReceiveVar pair for the followed branches, to go
// beside the gate it describes. Each is "BRANCH:TIP:ID,ID…" (":" cannot be
// in a branch name; TIP "-" for none), or only the names where that would
// be too long; nil where even those are (pre-receive then never shuts the
// gate).
func ScannedEnv(followed []Followed) []string {
	if len(followed) == 0 {
		return []string{PostReceiveVar + "=-"}
	}
	full := make([]string, len(followed))
	names := make([]string, len(followed))
	for i, f := range followed {
		tip := f.Tip
		if tip == "" {
			tip = "-"
		}
		full[i] = f.Branch + ":" + tip + ":" + strings.Join(f.IDs, ",")
		names[i] = f.Branch
	}
	for _, v := range []string{strings.Join(full, " "), strings.Join(names, " ")} {
		if len(v) <= maxScanned {
			return []string{PostReceiveVar + "=" + v}
		}
	}
	return nil
}

// decodeScanned reads ScannedEnv's value; nil where there is none or
// it is malformed (no gate: post-receive runs).
func decodeScanned(v string) map[string]Followed {
	if v == "" {
		return nil
	}
	out := map[string]Followed{}
	if v == "-" {
		return out
	}
	for _, e := range strings.Fields(v) {
		var f Followed
		var rest string
		var full bool
		f.Branch, rest, full = strings.Cut(e, ":")
		if !git.IsFullRef(pushcheck.HeadsPrefix + f.Branch) {
			return nil
		}
		if full {
			tip, list, ok := strings.Cut(rest, ":")
			if !ok || tip != "-" && !git.IsOID(tip) {
				return nil
			}
			if tip != "-" {
				f.Tip = tip
			}
			if list != "" {
				f.IDs = strings.Split(list, ",")
			}
			for _, id := range f.IDs {
				if !ids.Valid(id) {
					return nil
				}
			}
		}
		out[f.Branch] = f
	}
	return out
}

// UnmergedOffVar, set to "off" in the environment of the process that
// runs pre-receive (serve), turns off the proof that a move of a followed
// branch merges nothing (Unmerged): post-receive then runs and scans every
// such move. For measuring the proof against its absence (bench/builds
// -old-env COLLAB_UNMERGED_PROOF=off).
const UnmergedOffVar = "COLLAB_UNMERGED_PROOF"

// PostReceiveIdle reports whether post-receive would find nothing to do
// in a push of updates, where serve made the gate: each branch the merge
// scan follows that the push moves is moved from where its last scan
// ended, by commits new to the repository that name none of the
// branches' open patches (Unmerged). Those moves are unmerged, for serve
// to record as scanned (ops.Skips). Without a gate it is false.
func (h Handoff) PostReceiveIdle(updates []pushcheck.Update, read CommitReader) (idle bool, unmerged []pushcheck.Update) {
	if h.Scanned == nil {
		return false, nil
	}
	for _, u := range updates {
		b, ok := strings.CutPrefix(u.Ref, pushcheck.HeadsPrefix)
		if !ok || u.New == git.ZeroOID {
			continue
		}
		f, ok := h.Scanned[b]
		if !ok {
			continue
		}
		if os.Getenv(UnmergedOffVar) == "off" || !Unmerged(f, u, read) {
			return false, nil
		}
		unmerged = append(unmerged, u)
	}
	return true, unmerged
}

// Passed is what a pre-receive that passed does about post-receive
// (Handoff.Pass).
type Passed struct {
	// Skipped: the gate is shut, and git skips post-receive.
	Skipped bool
	// Unmerged are the followed branches' moves that merge nothing, to
	// be recorded as scanned once their refs have moved (ops.Skips).
	Unmerged []pushcheck.Update
	// Prefetch: post-receive or proc-receive will run, and serve may
	// start their reads (ops.Prefetch).
	Prefetch bool
	// ShutErr is a gate that would not shut: post-receive then runs, and
	// scans.
	ShutErr error
}

// Pass decides, for a push that passed pre-receive, whether post-receive
// has anything to do, and where it has not, shuts the gate with shut.
// getenv is the hook's environment, for the push's quarantine.
func (h Handoff) Pass(updates []pushcheck.Update, getenv func(string) string, shut func() error) Passed {
	var read CommitReader
	if q := getenv("GIT_QUARANTINE_PATH"); q != "" {
		read = func(oid string) ([]byte, error) { return git.LooseCommit(q, oid) }
	}
	idle, unmerged := h.PostReceiveIdle(updates, read)
	p := Passed{Unmerged: unmerged}
	if idle {
		if p.ShutErr = shut(); p.ShutErr != nil {
			p.Unmerged = nil
		} else {
			p.Skipped = true
		}
	}
	// A gate that would not shut leaves post-receive to run: its reads
	// start as for any push that has one.
	p.Prefetch = !p.Skipped && pushcheck.MovesBranches(updates) || pushcheck.HasFor(updates)
	return p
}

// CommitReader reads a commit the push brought (git.LooseCommit on its
// quarantine).
type CommitReader func(oid string) ([]byte, error)

// maxUnmergedWalk bounds Unmerged's walk: git writes a push's objects
// loose only below transfer.unpackLimit (100) objects.
const maxUnmergedWalk = 100

// Unmerged reports whether u, a move of followed branch f, certainly
// merges none of f's open patches: it starts where f's last scan ended,
// and every commit it brings (NEW ^OLD) is one read can read (new to the
// repository, so no pinned revision of a patch) whose object names none of
// f.IDs in any case (so no Patch: or Change-Id: trailer of one). Anything
// else (a commit that was there before, a pack, a commit in another
// encoding, too many) is false: post-receive then scans the move.
func Unmerged(f Followed, u pushcheck.Update, read CommitReader) bool {
	if read == nil || f.Tip == "" || u.Old != f.Tip || u.Old == git.ZeroOID || !git.IsOID(u.New) {
		return false
	}
	seen := map[string]bool{}
	todo := []string{u.New}
	for len(todo) > 0 {
		oid := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if oid == u.Old || seen[oid] {
			continue
		}
		if seen[oid] = true; len(seen) > maxUnmergedWalk {
			return false
		}
		body, err := read(oid)
		if err != nil || declaresEncoding(body) {
			return false
		}
		lower := bytes.ToLower(body)
		for _, id := range f.IDs {
			if bytes.Contains(lower, []byte(id)) {
				return false
			}
		}
		todo = append(todo, git.CommitParents(body)...)
	}
	return true
}

// declaresEncoding reports whether a commit's headers name an encoding
// for its message, in which a patch id might not be spelled in ASCII.
func declaresEncoding(body []byte) bool {
	head, _, _ := bytes.Cut(body, []byte("\n\n"))
	return bytes.HasPrefix(head, []byte("encoding ")) || bytes.Contains(head, []byte("\nencoding "))
}
