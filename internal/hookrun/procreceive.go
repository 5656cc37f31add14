package hookrun

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/collab-forge/collab/internal/ops"
	"github.com/collab-forge/collab/internal/pktline"
	"github.com/collab-forge/collab/internal/text"
)

// procReceive speaks git's proc-receive protocol on in/out (pkt-lines and
// nothing else on out): it reads the refs/for commands and the push
// options, has receive record them, and writes its reports back.
func procReceive(ctx context.Context, in io.Reader, out io.Writer, receive func(context.Context, []ops.Update, []string) []ops.Report) error {
	r := pktline.NewReader(in)
	w := pktline.NewWriter(out)
	hello, err := r.ReadSection()
	if err != nil {
		return fmt.Errorf("proc-receive: read version: %w", err)
	}
	if len(hello) == 0 || !bytes.HasPrefix(hello[0], []byte("version=1")) {
		return fmt.Errorf("proc-receive: unsupported protocol %q", hello)
	}
	gitOptions := bytes.Contains(hello[0], []byte("push-options"))
	if err := w.Line("version=1\x00push-options"); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	lines, err := r.ReadSection()
	if err != nil {
		return fmt.Errorf("proc-receive: read commands: %w", err)
	}
	var rawOpts []string
	if gitOptions {
		opts, err := r.ReadSection()
		if err != nil {
			return fmt.Errorf("proc-receive: read push options: %w", err)
		}
		for _, o := range opts {
			rawOpts = append(rawOpts, string(o))
		}
	}
	var cmds []ops.Update
	for _, l := range lines {
		f := strings.Fields(string(l))
		if len(f) != 3 {
			return fmt.Errorf("proc-receive: bad command %q", l)
		}
		cmds = append(cmds, ops.Update{Old: f[0], New: f[1], Ref: f[2]})
	}
	for _, rep := range receive(ctx, cmds, rawOpts) {
		for _, l := range ReportLines(rep) {
			if err := w.Line(l); err != nil {
				return err
			}
		}
	}
	return w.Flush()
}

// ReportLines are the pkt-line payloads of one report in git's
// proc-receive protocol. An ng reason is one line a terminal only shows:
// git prints it to the pusher as it is.
func ReportLines(r ops.Report) []string {
	if r.NG != "" {
		return []string{"ng " + r.Ref + " " + text.Line(r.NG)}
	}
	lines := []string{"ok " + r.Ref, "option refname " + r.Refname, "option old-oid " + r.Old, "option new-oid " + r.New}
	if r.Forced {
		lines = append(lines, "option forced-update")
	}
	return lines
}
