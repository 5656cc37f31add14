package serve

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"path"
	"strings"
	"time"

	collab "github.com/collab-forge/collab"
	"github.com/collab-forge/collab/internal/fault"
)

// HookPath is the one file the scp source serves: where Gerrit serves its
// commit-msg hook, which git-review -s fetches with
// "scp -O -P PORT USER@HOST:hooks/commit-msg .git/hooks/commit-msg".
const HookPath = "hooks/commit-msg"

// scpRequest is what an "scp -f …" command line asks for.
type scpRequest struct {
	path string
}

// parseSCP reads the command line OpenSSH's scp runs on the remote side in
// its legacy protocol: "scp [-v] [-r] [-p] [-d] -f [--] PATH". Only the
// source side (-f) of exactly HookPath is served; uploads (-t) and any
// other path are refused. No shell ever sees the line.
func parseSCP(words []string) (scpRequest, error) {
	var from bool
	var paths []string
	flags := true
	for _, w := range words[1:] {
		switch {
		case flags && w == "--":
			flags = false
		case flags && strings.HasPrefix(w, "-") && len(w) > 1:
			for _, c := range w[1:] {
				switch c {
				case 'f':
					from = true
				case 't':
					return scpRequest{}, fault.New(fault.Usage, "scp: nothing can be copied to the forge; it serves only %s (scp -O HOST:%s FILE)", HookPath, HookPath)
				case 'v', 'r', 'p', 'd':
					// verbose, recursive, keep times, target is a directory:
					// nothing changes for one file sent without its times.
				default:
					return scpRequest{}, fault.New(fault.Usage, "scp: unsupported option -%c; the forge serves only %s (scp -O HOST:%s FILE)", c, HookPath, HookPath)
				}
			}
		default:
			paths = append(paths, w)
		}
	}
	if !from {
		return scpRequest{}, fault.New(fault.Usage, "scp: the forge only sends files (scp -f); it serves only %s", HookPath)
	}
	if len(paths) != 1 || paths[0] != HookPath {
		return scpRequest{}, fault.New(fault.NotFound, "scp: no such file %q: the forge serves only %s", clip(strings.Join(paths, " ")), HookPath)
	}
	return scpRequest{path: paths[0]}, nil
}

// scpSend speaks the source side of the legacy scp protocol for one file
// named name (mode 0755, no times): wait for the sink's go-ahead, send
// "C0755 SIZE NAME", the bytes and a NUL, each acknowledged by a NUL.
func scpSend(in io.Reader, out io.Writer, name string, body []byte) error {
	br := bufio.NewReader(in)
	if err := scpAck(br); err != nil {
		return fmt.Errorf("scp: sink not ready: %w", err)
	}
	if _, err := fmt.Fprintf(out, "C0755 %d %s\n", len(body), name); err != nil {
		return fmt.Errorf("scp: send header: %w", err)
	}
	if err := scpAck(br); err != nil {
		return fmt.Errorf("scp: header refused: %w", err)
	}
	if _, err := out.Write(append(append([]byte{}, body...), 0)); err != nil {
		return fmt.Errorf("scp: send file: %w", err)
	}
	if err := scpAck(br); err != nil {
		return fmt.Errorf("scp: file refused: %w", err)
	}
	return nil
}

// scpAck reads one response of the sink: a NUL, or 1 (warning) or 2
// (fatal) and a message line.
func scpAck(r *bufio.Reader) error {
	b, err := r.ReadByte()
	if err != nil {
		return err
	}
	switch b {
	case 0:
		return nil
	case 1, 2:
		msg, _ := r.ReadString('\n')
		return fmt.Errorf("the client said %q", clip(strings.TrimSpace(msg)))
	}
	return fmt.Errorf("unexpected response byte %#x", b)
}

// hookFile is what the scp source sends for HookPath.
func hookFile() []byte { return []byte(collab.CommitMsgHook) }

// runSCP serves an "scp …" command line: the commit-msg hook, or a
// one-line refusal.
func runSCP(r *Request, log *slog.Logger, words []string, start time.Time, refuse func(error, ...any) int) int {
	req, err := parseSCP(words)
	if err != nil {
		return refuse(err, "command", clip(strings.Join(words, " ")))
	}
	if err := scpSend(r.Stdin, r.Stdout, path.Base(req.path), hookFile()); err != nil {
		return refuse(&fault.Error{Kind: fault.Usage, Msg: "scp: the transfer failed", Err: err}, "command", "scp -f "+req.path)
	}
	log.Info("ssh scp", "command", "scp -f "+req.path, "OUTCOME", "ok", "DURATION_MS", time.Since(start).Milliseconds())
	return 0
}
