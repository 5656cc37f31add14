package git

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ErrMoved is a compare-and-swap of a ref that found it elsewhere.
var ErrMoved = errors.New("the ref moved")

// CompareAndSwap moves ref from old to new in one update-ref, with msg
// as the reflog message (r's committer identity, set With, is the reflog's
// name). When ref no longer points to old, nothing changes and the error
// is ErrMoved.
func (r Repo) CompareAndSwap(ctx context.Context, ref, newOID, oldOID, msg string) error {
	if !IsFullRef(ref) || !IsOID(newOID) || !IsOID(oldOID) || strings.ContainsAny(msg, "\n\x00") {
		return fmt.Errorf("update-ref %q %q %q: bad arguments", ref, newOID, oldOID)
	}
	in := fmt.Sprintf("update %s %s %s\n", ref, newOID, oldOID)
	_, err := r.Run(ctx, strings.NewReader(in), "-c", "core.filesRefLockTimeout=2000", "update-ref", "-m", msg, "--stdin")
	if err == nil {
		return nil
	}
	at, ok, rerr := r.ResolveRef(ctx, ref)
	if rerr == nil && (!ok && oldOID != ZeroOID || ok && at != oldOID) {
		return fmt.Errorf("update-ref %s: %w", ref, ErrMoved)
	}
	return err
}
