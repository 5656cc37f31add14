package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/fault"
)

func openTest(t *testing.T) *DB {
	t.Helper()
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "collab.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestOpenTwiceKeepsVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "collab.db")
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		db, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		var v int
		if err := db.R().QueryRow("PRAGMA user_version").Scan(&v); err != nil || v < 1 {
			t.Fatalf("user_version = %d, %v", v, err)
		}
		var mode string
		if err := db.R().QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
			t.Fatalf("journal_mode = %q, %v", mode, err)
		}
		db.Close()
	}
}

func TestWriteRollsBack(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	boom := errors.New("boom")
	err := db.Write(ctx, func(tx *sql.Tx) error {
		if err := SetSetting(ctx, tx, "url", "http://x"); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Write = %v, want boom", err)
	}
	if v, _ := Setting(ctx, db.R(), "url"); v != "" {
		t.Fatalf("rolled-back setting visible: %q", v)
	}
}

// Writers from many goroutines (one connection, the flock) never see BUSY.
func TestConcurrentWrites(t *testing.T) {
	db := openTest(t)
	writeConcurrently(t, context.Background(), db, db, 32)
}

// writeConcurrently inserts n events through db from n goroutines at once,
// fails on any error, and checks through check that all n are there.
func writeConcurrently(t *testing.T, ctx context.Context, db, check *DB, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- db.Write(ctx, func(tx *sql.Tx) error {
				_, err := tx.ExecContext(ctx, "INSERT INTO events(event, repo, actor, at, data) VALUES ('x', 'r', 'a', 't', '{}')")
				return err
			})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var got int
	if err := check.R().QueryRow("SELECT count(*) FROM events").Scan(&got); err != nil || got != n {
		t.Fatalf("events = %d, %v", got, err)
	}
}

func TestResolve(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	now := FormatTime(time.Now())
	for _, id := range []string{"abcd0001", "abcd0002", "ffff0000"} {
		if _, err := db.R().Exec("INSERT INTO issues(repo, id, title, author, created_at, updated_at) VALUES ('r.git', ?, 't', 'a', ?, ?)", id, now, now); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.R().Exec("INSERT INTO issues(repo, id, title, author, created_at, updated_at) VALUES ('other.git', 'eeee0000', 't', 'a', ?, ?)", now, now); err != nil {
		t.Fatal(err)
	}
	const q = "SELECT id FROM issues WHERE repo = ? AND id >= ? AND id < ? LIMIT 11"
	for _, tc := range []struct {
		prefix, want string
		kind         fault.Kind
	}{
		{"ffff", "ffff0000", 0},
		{"FFFF0000", "ffff0000", 0},
		{"abcd0001", "abcd0001", 0},
		{"abcd", "", fault.Usage},
		{"eeee", "", fault.NotFound},
		{"1234", "", fault.NotFound},
		{"zz12", "", fault.Usage},
		{"ab", "", fault.Usage},
	} {
		got, err := Resolve(ctx, db.R(), "issue", tc.prefix, q, "r.git")
		if tc.want != "" {
			if err != nil || got != tc.want {
				t.Errorf("Resolve(%q) = %q, %v; want %q", tc.prefix, got, err, tc.want)
			}
			continue
		}
		if err == nil || fault.KindOf(err) != tc.kind {
			t.Errorf("Resolve(%q) = %q, %v; want kind %d", tc.prefix, got, err, tc.kind)
		}
	}
}

func TestTimeSortsAsText(t *testing.T) {
	a := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	b := a.Add(1500 * time.Microsecond)
	if !(FormatTime(a) < FormatTime(b)) {
		t.Fatalf("%s !< %s", FormatTime(a), FormatTime(b))
	}
	got, err := ParseTime(FormatTime(b))
	if err != nil || !got.Equal(b.Truncate(time.Millisecond)) {
		t.Fatalf("ParseTime = %v, %v", got, err)
	}
}

// A full id that also prefixes a longer one still names itself.
func TestResolveExactWins(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	now := FormatTime(time.Now())
	for _, id := range []string{"abcdef12", "abcdef1234567890"} {
		if _, err := db.R().Exec("INSERT INTO issues(repo, id, title, author, created_at, updated_at) VALUES ('r.git', ?, 't', 'a', ?, ?)", id, now, now); err != nil {
			t.Fatal(err)
		}
	}
	const q = "SELECT id FROM issues WHERE repo = ? AND id >= ? AND id < ? LIMIT 11"
	if got, err := Resolve(ctx, db.R(), "issue", "abcdef12", q, "r.git"); err != nil || got != "abcdef12" {
		t.Errorf("exact id = %q, %v", got, err)
	}
	if _, err := Resolve(ctx, db.R(), "issue", "abcdef1", q, "r.git"); fault.KindOf(err) != fault.Usage {
		t.Errorf("shorter prefix = %v, want ambiguous", err)
	}
}

// OpenShort: one connection for a short process, yet a read through R()
// inside a Write callback (which holds that connection) must neither wait
// forever nor miss what it should see, concurrent writers still never see
// BUSY, and a read transaction does not take the write lock.
func TestOpenShort(t *testing.T) {
	path := filepath.Join(t.TempDir(), "collab.db")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // only spent when stuck
	defer cancel()
	if _, err := OpenShort(ctx, path); err == nil {
		t.Fatal("OpenShort created a missing database")
	}
	long, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer long.Close()
	db, err := OpenShort(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.R() != db.w {
		t.Fatal("OpenShort: reads and writes should share one pool")
	}
	err = db.Write(ctx, func(tx *sql.Tx) error {
		if err := SetSetting(ctx, tx, "url", "http://inside"); err != nil {
			return err
		}
		v, err := Setting(ctx, db.R(), "url") // another connection: not yet committed
		if err != nil || v != "" {
			return fmt.Errorf("read inside Write = %q, %v", v, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := Setting(ctx, db.R(), "url"); err != nil || v != "http://inside" {
		t.Fatalf("after Write: %q, %v", v, err)
	}
	// A read transaction of the short process beside the other process's
	// writer: BEGIN (deferred), not BEGIN IMMEDIATE.
	err = db.Read(ctx, func(tx *sql.Tx) error {
		return long.Write(ctx, func(wtx *sql.Tx) error { return SetSetting(ctx, wtx, "ssh", "git@x") })
	})
	if err != nil {
		t.Fatalf("write beside a short read transaction: %v", err)
	}
	writeConcurrently(t, ctx, db, long, 16)
}

// Settings reads the table once per settingsTTL: a change made meanwhile
// is seen once the TTL has passed, and a failed read is not kept.
func TestSettings(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	set := func(k, v string) {
		t.Helper()
		if err := db.Write(ctx, func(tx *sql.Tx) error { return SetSetting(ctx, tx, k, v) }); err != nil {
			t.Fatal(err)
		}
	}
	set("url", "http://one.test")
	db.settings.at = time.Time{}
	s, err := db.Settings(ctx)
	if err != nil || s["url"] != "http://one.test" {
		t.Fatalf("Settings = %v, %v", s, err)
	}
	set("url", "http://two.test")
	if s, _ := db.Settings(ctx); s["url"] != "http://one.test" {
		t.Errorf("within the TTL: url %q, want the value read", s["url"])
	}
	db.settings.at = db.settings.at.Add(-settingsTTL)
	if s, _ := db.Settings(ctx); s["url"] != "http://two.test" {
		t.Errorf("after the TTL: url %q, want the new value", s["url"])
	}
	db.settings.at = time.Time{}
	if _, err := db.w.ExecContext(ctx, "ALTER TABLE settings RENAME TO settings_gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Settings(ctx); err == nil {
		t.Fatal("Settings without a settings table: no error")
	}
	if _, err := db.w.ExecContext(ctx, "ALTER TABLE settings_gone RENAME TO settings"); err != nil {
		t.Fatal(err)
	}
	if s, err := db.Settings(ctx); err != nil || s["url"] != "http://two.test" {
		t.Errorf("after a failed read: %v, %v", s, err)
	}
}
