package ratelimit

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/store/storetest"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/store"
)

func openDB(t *testing.T, settings map[string]string) *store.DB {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, storetest.Loc(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	err = db.Write(ctx, func(tx *sql.Tx) error {
		for k, v := range settings {
			if err := store.SetSetting(ctx, tx, k, v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func take(t *testing.T, db *store.DB, who string, now time.Time) error {
	t.Helper()
	return db.Write(context.Background(), func(tx *sql.Tx) error { return Take(context.Background(), tx, who, now) })
}

// The bucket: a burst, then refusals with a Retry-After that is enough,
// refills at the rate and never past the burst, per principal.
func TestTake(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	type step struct {
		who    string
		at     time.Duration // after t0
		n      int           // writes
		wantOK int           // of which allowed
		retry  time.Duration // RetryAfter of the first refusal, if any
	}
	for _, tc := range []struct {
		name     string
		settings map[string]string
		steps    []step
	}{
		{"burst then refuse", map[string]string{SettingBurst: "3", SettingRefill: "1"}, []step{
			{"alice", 0, 5, 3, time.Second},
		}},
		{"refill at the rate", map[string]string{SettingBurst: "3", SettingRefill: "2"}, []step{
			{"alice", 0, 3, 3, 0},
			{"alice", 500 * time.Millisecond, 2, 1, 500 * time.Millisecond},
			{"alice", 1500 * time.Millisecond, 3, 2, 500 * time.Millisecond},
		}},
		{"never past the burst", map[string]string{SettingBurst: "2", SettingRefill: "10"}, []step{
			{"alice", 0, 1, 1, 0},
			{"alice", time.Hour, 4, 2, 100 * time.Millisecond},
		}},
		{"per principal", map[string]string{SettingBurst: "1", SettingRefill: "1"}, []step{
			{"alice", 0, 2, 1, time.Second},
			{"bob", 0, 1, 1, 0},
		}},
		{"clock set back refills nothing", map[string]string{SettingBurst: "2", SettingRefill: "1"}, []step{
			{"alice", time.Minute, 2, 2, 0},
			{"alice", 0, 1, 0, time.Second},
		}},
		{"defaults never touch normal use", nil, []step{
			{"alice", 0, 1000, 1000, 0},
			{"alice", 0, 1, 0, 10 * time.Millisecond},
			{"alice", time.Second, 100, 100, 0},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t, tc.settings)
			for i, s := range tc.steps {
				ok := 0
				var first error
				for j := 0; j < s.n; j++ {
					err := take(t, db, s.who, t0.Add(s.at))
					if err == nil {
						ok++
						continue
					}
					if fault.KindOf(err) != fault.RateLimited {
						t.Fatalf("step %d: %v, want a rate-limit refusal", i, err)
					}
					if first == nil {
						first = err
					}
				}
				if ok != s.wantOK {
					t.Errorf("step %d: %d of %d allowed, want %d", i, ok, s.n, s.wantOK)
				}
				if first != nil {
					fe := fault.As(first)
					if d := fe.RetryAfter - s.retry; d < -time.Millisecond || d > time.Millisecond {
						t.Errorf("step %d: RetryAfter %s, want %s", i, fe.RetryAfter, s.retry)
					}
					if fault.ExitCode(first) != 6 || fault.HTTPStatus(first) != 429 || fault.RetryAfterSeconds(first) < 1 {
						t.Errorf("step %d: exit %d, status %d, Retry-After %d", i, fault.ExitCode(first), fault.HTTPStatus(first), fault.RetryAfterSeconds(first))
					}
				}
			}
		})
	}
}

// A write that rolls back returns its token: the bucket is spent in the
// write's own transaction.
func TestRolledBackWriteSpendsNothing(t *testing.T) {
	db := openDB(t, map[string]string{SettingBurst: "1", SettingRefill: "1"})
	ctx := context.Background()
	now := time.Now()
	err := db.Write(ctx, func(tx *sql.Tx) error {
		if err := Take(ctx, tx, "alice", now); err != nil {
			return err
		}
		return fault.New(fault.Conflict, "lease held by another")
	})
	if fault.KindOf(err) != fault.Conflict {
		t.Fatalf("write = %v", err)
	}
	if err := take(t, db, "alice", now); err != nil {
		t.Fatalf("after a rolled-back write: %v", err)
	}
}

// A Limiter spends like Take and reads the settings again once its TTL
// has passed, never in between.
func TestLimiter(t *testing.T) {
	db := openDB(t, map[string]string{SettingBurst: "2", SettingRefill: "0.001"})
	ctx := context.Background()
	var lim Limiter
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	spend := func() error {
		return db.Write(ctx, func(tx *sql.Tx) error { return lim.Take(ctx, tx, "alice", now) })
	}
	for i := 0; i < 2; i++ {
		if err := spend(); err != nil {
			t.Fatal(err)
		}
	}
	if err := spend(); fault.KindOf(err) != fault.RateLimited {
		t.Fatalf("third write = %v, want rate limited", err)
	}
	// A faster refill set now is not seen until the TTL has passed.
	if err := db.Write(ctx, func(tx *sql.Tx) error { return store.SetSetting(ctx, tx, SettingRefill, "100") }); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second)
	if err := spend(); fault.KindOf(err) != fault.RateLimited {
		t.Fatalf("within the TTL = %v, want rate limited", err)
	}
	lim.mu.Lock()
	lim.at = lim.at.Add(-TTL)
	lim.mu.Unlock()
	if err := spend(); err != nil {
		t.Fatalf("after the TTL = %v, want the new refill", err)
	}
}
