package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/pushcheck"
	"github.com/collab-forge/collab/internal/reponame"
)

// The gate fails closed. Where serve points git at the root's hooks
// (hookhost.OpenDirect) the gate always runs, whatever the repository's own hooks
// are. Elsewhere git runs the repository's pre-receive, and one it cannot
// run (hookdir.GateDown) it skips: protected branches would take any
// push. There, serve reads the push's commands itself before git sees
// them and refuses a push that touches a protected branch, telling the
// operator to run fsck (which rewrites the shims and names the exposure).
// The direct path never reaches this.

// maxCommands bounds the command section serve reads (git's own limit on
// refs per push is the push limits', checked later by the gate).
const maxCommands = 1 << 20

// readCommands reads the client's command section of a receive-pack
// exchange (pkt-lines up to the first flush) and returns its raw bytes,
// to be handed on to git, and the refs the commands name.
func readCommands(in io.Reader) (raw []byte, refs []string, err error) {
	var buf bytes.Buffer
	for buf.Len() < maxCommands {
		var head [4]byte
		if _, err := io.ReadFull(in, head[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return buf.Bytes(), refs, nil // nothing pushed
			}
			return nil, nil, fmt.Errorf("read the push's commands: %w", err)
		}
		buf.Write(head[:])
		n, err := strconv.ParseUint(string(head[:]), 16, 16)
		if err != nil {
			return nil, nil, fmt.Errorf("read the push's commands: bad length %q", head[:])
		}
		if n == 0 {
			return buf.Bytes(), refs, nil
		}
		if n < 4 {
			continue
		}
		line := make([]byte, n-4)
		if _, err := io.ReadFull(in, line); err != nil {
			return nil, nil, fmt.Errorf("read the push's commands: %w", err)
		}
		buf.Write(line)
		cmd, _, _ := strings.Cut(strings.TrimSuffix(string(line), "\n"), "\x00")
		if f := strings.Fields(cmd); len(f) == 3 && len(f[0]) >= 40 && len(f[1]) >= 40 {
			refs = append(refs, f[2])
		}
	}
	return nil, nil, errors.New("read the push's commands: too long")
}

// protectedTouched returns the protected branch one of refs names (through
// an operator's alias too), or "".
func protectedTouched(ctx context.Context, g git.Repo, refs []string, rules map[string]pushcheck.Rule) (string, error) {
	for _, ref := range refs {
		if !strings.HasPrefix(ref, pushcheck.HeadsPrefix) {
			continue
		}
		if target, sym, err := g.SymbolicRef(ctx, ref); err != nil {
			return "", err
		} else if sym {
			ref = target
		}
		if b := strings.TrimPrefix(ref, pushcheck.HeadsPrefix); rules[b].Branch != "" {
			return b, nil
		}
	}
	return "", nil
}

// gateDownRefusal is the refusal of a push that touches protected branch
// b of the repository key while its gate cannot run (why).
func gateDownRefusal(key, b, why string) error {
	return fault.New(fault.Denied, "branch %s is protected and the gate of %s cannot run (%s): push refused; the operator must run collab-hook fsck", b, reponame.Display(key), why)
}
