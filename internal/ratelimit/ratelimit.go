// Package ratelimit keeps each principal's write budget: a token bucket
// stored in the database and taken inside the write's own transaction, so
// that every process (hooks, verbs, collab-web) draws on the same bucket
// and a write that rolls back spends nothing. Reads never pass here.
//
// The defaults (a burst of 1,000 writes, refilled at 100 a second) never
// touch normal use; they stop a runaway script or agent from filling the
// database. Both are root settings (rate_burst, rate_refill).
package ratelimit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/store"
)

// Setting keys and their defaults.
const (
	SettingBurst  = "rate_burst"
	SettingRefill = "rate_refill"

	DefaultBurst  = 1000.0
	DefaultRefill = 100.0
)

// Limits are a bucket's size and its refill rate per second.
type Limits struct {
	Burst  float64
	Refill float64
}

// Read returns the root's limits, with the defaults for unset or
// unreadable values (config set checks what it stores).
func Read(ctx context.Context, q store.Querier) (Limits, error) {
	l := Limits{Burst: DefaultBurst, Refill: DefaultRefill}
	err := store.Each(ctx, q, "SELECT key, value FROM settings WHERE key IN (?, ?)", []any{SettingBurst, SettingRefill},
		func(rows *sql.Rows) error {
			var k, v string
			if err := rows.Scan(&k, &v); err != nil {
				return err
			}
			n, err := strconv.ParseFloat(v, 64)
			switch {
			case err != nil || math.IsInf(n, 0):
			case k == SettingBurst && n >= 1:
				l.Burst = n
			case k == SettingRefill && n > 0:
				l.Refill = n
			}
			return nil
		})
	if err != nil {
		return l, fmt.Errorf("read rate limits: %w", err)
	}
	return l, nil
}

// Take spends one write from principal's bucket at now, inside tx (the
// write's own transaction). An empty bucket is a fault.RateLimited whose
// RetryAfter says when the next write will be allowed.
func Take(ctx context.Context, tx store.Querier, principal string, now time.Time) error {
	l, err := Read(ctx, tx)
	if err != nil {
		return err
	}
	tokens := l.Burst
	var have float64
	var at string
	err = tx.QueryRowContext(ctx, "SELECT tokens, updated_at FROM rate_buckets WHERE principal = ?", principal).Scan(&have, &at)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return fmt.Errorf("read rate bucket of %s: %w", principal, err)
	default:
		tokens = refill(l, have, at, now)
	}
	if tokens < 1 {
		wait := time.Duration((1 - tokens) / l.Refill * float64(time.Second))
		e := fault.New(fault.RateLimited, "rate limit: %s made more than %g writes in a burst (refilled at %g a second); try again in %s",
			principal, l.Burst, l.Refill, roundUp(wait))
		e.RetryAfter = wait
		return e
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO rate_buckets(principal, tokens, updated_at) VALUES (?, ?, ?)
		ON CONFLICT(principal) DO UPDATE SET tokens = excluded.tokens, updated_at = excluded.updated_at`,
		principal, tokens-1, store.FormatTime(now))
	if err != nil {
		return fmt.Errorf("spend rate bucket of %s: %w", principal, err)
	}
	return nil
}

// refill is what a bucket that held have at time at holds at now: never
// more than the burst. A stored time that cannot be read, or one in the
// future (a clock set back), refills nothing rather than everything.
func refill(l Limits, have float64, at string, now time.Time) float64 {
	t, err := store.ParseTime(at)
	if err != nil {
		return math.Min(have, l.Burst)
	}
	elapsed := now.Sub(t).Seconds()
	if elapsed < 0 {
		elapsed = 0
	}
	return math.Min(l.Burst, have+elapsed*l.Refill)
}

// roundUp is d in whole seconds, rounded up: a caller told "1s" must not
// be refused again when it comes back after one second.
func roundUp(d time.Duration) time.Duration {
	return max(time.Second, time.Duration(math.Ceil(d.Seconds()))*time.Second)
}

// Check is Take at the wall clock, in the shape of store.WriteCheck: the
// hook through which every write a principal makes is counted.
func Check(ctx context.Context, tx *sql.Tx, principal string) error {
	return Take(ctx, tx, principal, time.Now())
}
