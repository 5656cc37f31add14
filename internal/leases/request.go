package leases

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/labels"
	"github.com/collab-forge/collab/internal/store"
)

// A work-queue claim may carry an idempotency key (`--request KEY`,
// HTTP Idempotency-Key). A claim's answer can be lost after the claim
// committed (a dropped connection, a killed client); without a key the
// retry claims another issue and the first one sits leased to nobody who
// knows its token. With one, the retry gets the first claim back.

// MaxRequestKey is the longest idempotency key, in bytes.
const MaxRequestKey = 128

// FieldRequest names the idempotency key in refusals (--request,
// Idempotency-Key:).
const FieldRequest = "request"

// CheckRequest refuses an idempotency key that is empty, longer than
// MaxRequestKey or has a byte outside printable ASCII (fault.Usage, the
// field "request").
func CheckRequest(key string) error {
	if key == "" || len(key) > MaxRequestKey {
		return fault.NewField(fault.Usage, FieldRequest, "bad %s: want 1 to %d printable bytes, got %d bytes", fault.Field(FieldRequest), MaxRequestKey, len(key))
	}
	for i := 0; i < len(key); i++ {
		if b := key[i]; b < 0x20 || b > 0x7e {
			return fault.NewField(fault.Usage, FieldRequest, "bad %s: byte %d is not printable (0x%02x)", fault.Field(FieldRequest), i+1, b)
		}
	}
	return nil
}

// requestArgs is what a key's claim was asked with, as stored: a retry
// must ask the same. ls must be a set (labels.Set).
func requestArgs(repo string, ls []string, ttl time.Duration) string {
	return fmt.Sprintf("%s\x00%s\x00%d", repo, strings.Join(ls, ","), ttl.Milliseconds())
}

// Requested returns the claim that holder's key made, when it asked with
// the same arguments and its tenure is still live at now (ok false when
// the key made none, or its tenure ended: the key may then claim anew).
// The same key with other arguments is fault.Unprocessable. It writes
// nothing, so a retry that finds its claim costs one read.
func Requested(ctx context.Context, q store.Querier, holder, key, repo string, ls []string, ttl time.Duration, now time.Time) (l Lease, ok bool, err error) {
	ls, err = labels.Set(ls)
	if err != nil {
		return Lease{}, false, err
	}
	var args, trepo, issue string
	var token int64
	var r row
	var tok sql.NullInt64
	var acquired sql.NullString
	err = q.QueryRowContext(ctx, `SELECT t.request_args, t.repo, t.issue_id, t.token, l.holder, l.token, l.acquired_at, l.expires_at
		FROM tenures t LEFT JOIN leases l ON l.repo = t.repo AND l.issue_id = t.issue_id
		WHERE t.holder = ? AND t.request = ? ORDER BY t.acquired_at DESC LIMIT 1`, holder, key).
		Scan(&args, &trepo, &issue, &token, &r.holder, &tok, &acquired, &r.expiresAt)
	if errors.Is(err, sql.ErrNoRows) {
		return Lease{}, false, nil
	}
	if err != nil {
		return Lease{}, false, fmt.Errorf("read the claim of request %q: %w", key, err)
	}
	if args != requestArgs(repo, ls, ttl) {
		return Lease{}, false, fault.NewField(fault.Unprocessable, FieldRequest, "%s %q was first sent with other arguments (repository, labels or TTL): make a fresh key for another claim", fault.Field(FieldRequest), key)
	}
	r.exists, r.token, r.acquiredAt = tok.Valid, tok.Int64, acquired.String
	if !r.live(store.FormatTime(now)) || r.holder.String != holder || r.token != token {
		return Lease{}, false, nil
	}
	l, err = r.lease(trepo, issue)
	return l, err == nil, err
}

// AcquireNextRequest is AcquireNext under holder's idempotency key, in the
// caller's write transaction: the key's live claim when it has one
// (Requested: unchanged, nothing written), else a new claim whose tenure
// records the key in its own insert.
func AcquireNextRequest(ctx context.Context, tx store.Querier, repo, holder, key string, ls []string, ttl time.Duration, now time.Time) (Lease, error) {
	if err := CheckRequest(key); err != nil {
		return Lease{}, err
	}
	if l, ok, err := Requested(ctx, tx, holder, key, repo, ls, ttl, now); err != nil || ok {
		return l, err
	}
	ls, err := labels.Set(ls)
	if err != nil {
		return Lease{}, err
	}
	return acquireNext(ctx, tx, repo, holder, ls, ttl, &request{key: key, args: requestArgs(repo, ls, ttl)}, now)
}

// request is the idempotency key a tenure is claimed with, and what it
// asked (requestArgs).
type request struct{ key, args string }
