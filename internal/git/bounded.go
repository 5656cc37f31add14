package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
)

// ErrCut is returned by Copy when the output passed its limit and git was
// stopped: what was copied is the first max bytes.
var ErrCut = errors.New("output over its limit")

// Copy runs git with args and stdin (may be nil) and copies at most max
// bytes of its stdout to w. Past max git is killed and ErrCut returned, so
// a reader of a request-sized budget never makes git produce (or read) the
// rest; when ctx ends git is killed too and ctx's error returned.
func (r Repo) Copy(parent context.Context, w io.Writer, max int64, stdin io.Reader, args ...string) (int64, error) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	cmd := r.Command(ctx, args...)
	cmd.Stdin = stdin
	var errb bytes.Buffer
	cmd.Stderr = &capped{max: 16 << 10, b: &errb}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, fmt.Errorf("git %s: %w", args[0], err)
	}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("git %s: %w", args[0], err)
	}
	n, cerr := io.Copy(w, io.LimitReader(stdout, max))
	cut := false
	if cerr == nil && n == max {
		// One byte more says whether there was more.
		var one [1]byte
		if k, _ := stdout.Read(one[:]); k > 0 {
			cut = true
		}
	}
	if cut || cerr != nil {
		cancel()
	}
	werr := cmd.Wait()
	switch {
	case parent.Err() != nil:
		return n, fmt.Errorf("git %s: %w", args[0], parent.Err())
	case cerr != nil:
		return n, fmt.Errorf("git %s: copy output: %w", args[0], cerr)
	case cut:
		return n, ErrCut
	case werr != nil:
		return n, failed(args, errb.String(), werr)
	}
	return n, nil
}

// Output is Copy into memory: at most max bytes of stdout, and cut=true
// when git had more (and was stopped).
func (r Repo) Output(ctx context.Context, max int64, stdin io.Reader, args ...string) (out []byte, cut bool, err error) {
	var b bytes.Buffer
	_, err = r.Copy(ctx, &b, max, stdin, args...)
	if errors.Is(err, ErrCut) {
		return b.Bytes(), true, nil
	}
	return b.Bytes(), false, err
}

// capped keeps the first max bytes written to it and drops the rest, so
// that a chatty git cannot grow our memory.
type capped struct {
	max int
	b   *bytes.Buffer
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.b.Len(); room > 0 {
		c.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
