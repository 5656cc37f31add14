// Package ratelimit keeps each principal's write budget: a token bucket
// stored in the database and taken inside the write's own transaction, so
// that every process (hooks, verbs, collab-web) draws on the same bucket
// and a write that rolls back spends nothing. Reads never pass here. The
// one caller is ops.Service.CountWrite, through which every write of a
// principal passes (each use case's, and a refs/for push's revisions).
//
// The defaults (a burst of 1,000 writes, refilled at 100 a second) never
// touch normal use; they stop a runaway script or agent from filling the
// database. Both are root settings (rate_burst, rate_refill).
package ratelimit

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strconv"
	"sync"
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

// takeSQL refills the bucket for the time since its last write (never past
// the burst; a clock set back refills nothing), spends one write and
// returns what is left, negative when the bucket was empty (the caller's
// refusal rolls the transaction back). Times are stored to the
// millisecond, and the elapsed time is rounded to it (julianday's floating
// point would make 1 s 0.99999… s). One plain statement: modernc's SQLite
// parses every statement anew, and a write pays for each. ?1 is the
// principal, ?2 the burst, ?3 the time, ?4 the refill rate; the casts let
// PostgreSQL know the numbers' type (its julianday, min and max of two
// are schema.postgres.sql's).
const takeSQL = `INSERT INTO rate_buckets(principal, tokens, updated_at) VALUES (?1, CAST(?2 AS DOUBLE PRECISION) - 1, ?3)
ON CONFLICT(principal) DO UPDATE SET
  tokens = min(CAST(?2 AS DOUBLE PRECISION), rate_buckets.tokens + max(0, round((julianday(?3) - julianday(rate_buckets.updated_at)) * 86400000.0) / 1000.0) * CAST(?4 AS DOUBLE PRECISION)) - 1,
  updated_at = ?3
RETURNING tokens`

// Take spends one write from principal's bucket at now, inside tx (the
// write's own transaction, which a refusal rolls back). An empty bucket is
// a fault.RateLimited whose RetryAfter says when the next write will be
// allowed.
func Take(ctx context.Context, tx store.Querier, principal string, now time.Time) error {
	l, err := Read(ctx, tx)
	if err != nil {
		return err
	}
	return l.Take(ctx, tx, principal, now)
}

// Take is Take with these limits.
func (l Limits) Take(ctx context.Context, tx store.Querier, principal string, now time.Time) error {
	left := 0.0
	err := store.Each(ctx, tx, takeSQL, []any{principal, l.Burst, store.FormatTime(now), l.Refill},
		func(rows *sql.Rows) error { return rows.Scan(&left) })
	if err != nil {
		return fmt.Errorf("spend rate bucket of %s: %w", principal, err)
	}
	if left >= 0 {
		return nil
	}
	wait := time.Duration(-left / l.Refill * float64(time.Second))
	e := fault.New(fault.RateLimited, "rate limit: %s made more than %g writes in a burst (refilled at %g a second); try again in %s",
		principal, l.Burst, l.Refill, roundUp(wait))
	e.RetryAfter = wait
	return e
}

// roundUp is d in whole seconds, rounded up: a caller told "1s" must not
// be refused again when it comes back after one second.
func roundUp(d time.Duration) time.Duration {
	return max(time.Second, time.Duration(math.Ceil(d.Seconds()))*time.Second)
}

// Limiter is a process's rate limit: the limits read from the settings at
// most once per TTL of wall time (a config set reaches a running
// collab-web within it), so that a write pays for one statement, not
// three. The zero value is ready.
type Limiter struct {
	mu sync.Mutex
	l  Limits
	at time.Time
}

// TTL is how long a Limiter trusts the limits it read.
const TTL = 2 * time.Second

// Take spends one write from principal's bucket at now, inside tx (the
// write's own transaction), with the limits read at most once per TTL.
func (lim *Limiter) Take(ctx context.Context, tx store.Querier, principal string, now time.Time) error {
	wall := time.Now()
	lim.mu.Lock()
	if lim.at.IsZero() || wall.Sub(lim.at) >= TTL {
		l, err := Read(ctx, tx)
		if err != nil {
			lim.mu.Unlock()
			return err
		}
		lim.l, lim.at = l, wall
	}
	l := lim.l
	lim.mu.Unlock()
	return l.Take(ctx, tx, principal, now)
}
