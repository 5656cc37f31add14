package store

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/flock"
)

// holdSQLiteLock takes SQLite's write lock on path from a connection of its
// own (as another program would, without collab's flock) until the test
// ends or release is called.
func holdSQLiteLock(t *testing.T, path string) (release func()) {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := raw.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
			conn.Close()
			raw.Close()
		})
	}
	t.Cleanup(release)
	return release
}

func setBusyTimeout(t *testing.T, db *DB, v string) {
	t.Helper()
	ctx := context.Background()
	if err := db.Write(ctx, func(tx *sql.Tx) error { return SetSetting(ctx, tx, SettingBusyTimeout, v) }); err != nil {
		t.Fatal(err)
	}
	db.settings.at = time.Time{} // as if settingsTTL had passed
}

func insertEvent(ctx context.Context) func(*sql.Tx) error {
	return func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO events(event, repo, actor, at, data) VALUES ('x', 'r', 'a', 't', '{}')")
		return err
	}
}

func wantBusy(t *testing.T, err error) {
	t.Helper()
	fe := fault.As(err)
	if fe.Kind != fault.Unavailable || !strings.HasPrefix(fe.Msg, "database busy") {
		t.Fatalf("err = %v (kind %d), want a database-busy refusal", err, fe.Kind)
	}
	if fault.ExitCode(err) != 6 || fault.HTTPStatus(err) != 503 || fault.RetryAfterSeconds(err) < 1 {
		t.Fatalf("exit %d, status %d, Retry-After %d", fault.ExitCode(err), fault.HTTPStatus(err), fault.RetryAfterSeconds(err))
	}
}

// waits records the waits a DB's writes are granted, stage by stage.
type waits struct {
	mu  sync.Mutex
	got []wait
}

type wait struct {
	stage string
	d     time.Duration
}

func (w *waits) record(db *DB) {
	db.granted = func(stage string, d time.Duration) {
		w.mu.Lock()
		w.got = append(w.got, wait{stage, d})
		w.mu.Unlock()
	}
}

func (w *waits) all() []wait {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]wait(nil), w.got...)
}

// Writers queued behind a stuck writer each give up after one
// busy_timeout, not one busy_timeout per writer ahead of them: the flock
// queue and SQLite's lock wait share one deadline. What is checked is the
// waits each writer is granted, which no load on the machine changes: the
// queue gets the whole budget, SQLite's lock only what the queue left.
func TestWritersShareOneDeadline(t *testing.T) {
	path := filepath.Join(t.TempDir(), "collab.db")
	ctx := context.Background()
	first, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	const budget = time.Second
	setBusyTimeout(t, first, budget.String())
	holdSQLiteLock(t, path)

	const n = 5
	var wg sync.WaitGroup
	errs := make([]error, n)
	granted := make([]waits, n)
	for i := 0; i < n; i++ {
		db, err := OpenShort(ctx, path) // a process of its own, in effect
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		granted[i].record(db)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = db.Write(WithWaitBudget(ctx), insertEvent(ctx))
		}()
	}
	wg.Wait()
	reachedLock := 0
	for i := range errs {
		wantBusy(t, errs[i])
		ws := granted[i].all()
		if len(ws) == 0 || ws[0] != (wait{waitQueue, budget}) {
			t.Fatalf("writer %d was granted %v; want the queue to get the whole budget, %v", i, ws, budget)
		}
		if len(ws) > 1 {
			reachedLock++
			if len(ws) != 2 || ws[1].stage != waitLock || ws[1].d >= budget {
				t.Errorf("writer %d was granted %v; want SQLite's lock to get only what the queue left of %v", i, ws, budget)
			}
		}
	}
	if reachedLock == 0 {
		t.Error("no writer got past the flock queue to SQLite's lock")
	}
}

// One request that writes several times waits for the writer lock no
// longer than one busy_timeout in all: once the first write has spent it,
// the others are granted no wait at all (checked as granted, not timed).
func TestBudgetIsPerRequest(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	const budget = 800 * time.Millisecond
	setBusyTimeout(t, db, budget.String())
	holdSQLiteLock(t, db.Path())
	var granted waits
	granted.record(db)
	req := WithWaitBudget(ctx)
	for i := 0; i < 4; i++ {
		wantBusy(t, db.Write(req, insertEvent(ctx)))
	}
	// SQLite counts its lock wait in the sleeps it asks for, so on a
	// loaded machine it may wait longer, never shorter.
	if spent := budgetOf(req).spent(); spent < budget-50*time.Millisecond {
		t.Fatalf("budget spent %s, want at least about %s", spent, budget)
	}
	ws := granted.all()
	if len(ws) != 8 || ws[0] != (wait{waitQueue, budget}) || ws[1].stage != waitLock || ws[1].d > budget {
		t.Fatalf("granted %v; want the first write to get the budget", ws)
	}
	// SQLite's wait is set in whole milliseconds, so the first write may
	// leave less than one of the budget unspent.
	for _, w := range ws[2:] {
		if w.d >= time.Millisecond {
			t.Fatalf("granted %v; want no wait for the writes after the budget was spent", ws)
		}
	}
}

// TryWrite never waits: with the flock or SQLite's lock held elsewhere it
// refuses at once, and it writes when both are free.
func TestTryWrite(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	unlock, err := flock.Lock(ctx, db.Path()+".lock", FileMode)
	if err != nil {
		t.Fatal(err)
	}
	wantBusy(t, db.TryWrite(ctx, insertEvent(ctx)))
	unlock()
	release := holdSQLiteLock(t, db.Path())
	wantBusy(t, db.TryWrite(ctx, insertEvent(ctx)))
	release()
	if err := db.TryWrite(ctx, insertEvent(ctx)); err != nil {
		t.Fatalf("TryWrite with the lock free: %v", err)
	}
}

// A database written by a newer collab is refused by every way of opening
// it, with one line and exit 1.
func TestNewerSchemaRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "collab.db")
	ctx := context.Background()
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.w.Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for name, open := range map[string]func() (*DB, error){
		"Open":          func() (*DB, error) { return Open(ctx, path) },
		"OpenShort":     func() (*DB, error) { return OpenShort(ctx, path) },
		"OpenNoMigrate": func() (*DB, error) { return OpenNoMigrate(ctx, path) },
		// keys-command's header check (it answers from the key index).
		"CheckFileVersion": func() (*DB, error) { return nil, CheckFileVersion(path) },
	} {
		db, err := open()
		if err == nil {
			if db != nil {
				db.Close()
			}
			t.Errorf("%s opened a database of schema 99", name)
			continue
		}
		if fault.ExitCode(err) != 1 || !strings.Contains(fault.Public(err), "schema version 99, newer than this collab knows") ||
			strings.Contains(fault.Public(err), "\n") || fault.Public(err) != err.Error() {
			t.Errorf("%s: %q (exit %d), want one line about the newer schema", name, err, fault.ExitCode(err))
		}
	}
}

// The database, its -wal, -shm and lock file are 0640 even under umask 0
// (SQLite on its own makes the database 0644).
func TestFileModesUnderUmask0(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "collab.db")
	ctx := context.Background()
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Write(ctx, insertEvent(ctx)); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm", path + ".lock"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode().Perm(); m&^FileMode != 0 {
			t.Errorf("%s: mode %04o, want 0640 or tighter", filepath.Base(p), m)
		}
	}
}

// A busy_timeout setting that cannot be read means the default.
func TestBusyTimeoutSetting(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	for _, tc := range []struct {
		value string
		want  time.Duration
	}{
		{"", DefaultBusyTimeout},
		{"2s", 2 * time.Second},
		{"0s", 0},
		{"-1s", DefaultBusyTimeout},
		{"soon", DefaultBusyTimeout},
		{"1h", DefaultBusyTimeout},
	} {
		setBusyTimeout(t, db, tc.value)
		if got := db.busyTimeout(ctx); got != tc.want {
			t.Errorf("busy_timeout %q = %s, want %s", tc.value, got, tc.want)
		}
	}
}

// CheckFileVersion passes a database of the schema this binary knows and
// refuses what is no database.
func TestCheckFileVersion(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "collab.db")
	db, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := CheckFileVersion(path); err != nil {
		t.Errorf("current schema: %v", err)
	}
	junk := filepath.Join(dir, "junk")
	if err := os.WriteFile(junk, bytes.Repeat([]byte("x"), 200), 0o640); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{junk, filepath.Join(dir, "missing")} {
		if err := CheckFileVersion(p); err == nil {
			t.Errorf("%s: accepted", p)
		}
	}
}

// A request's lock use adds up its writes: the time it queued behind
// another writer (at least as long as that writer kept the lock after
// this one asked), the time it held the lock, and the count. A failed
// write that never got the lock adds its wait but no hold.
func TestLockUseOf(t *testing.T) {
	path := filepath.Join(t.TempDir(), "collab.db")
	ctx := context.Background()
	holder, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	db, err := OpenShort(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if u := LockUseOf(ctx); u != (LockUse{}) {
		t.Fatalf("lock use without a budget: %+v", u)
	}

	held, release := make(chan struct{}), make(chan struct{})
	holderDone := make(chan error)
	go func() {
		holderDone <- holder.Write(ctx, func(*sql.Tx) error { close(held); <-release; return nil })
	}()
	<-held
	asked := make(chan time.Time, 1)
	db.granted = func(stage string, _ time.Duration) {
		if stage == waitQueue {
			asked <- time.Now()
		}
	}
	req := WithWaitBudget(ctx)
	done := make(chan error)
	go func() { done <- db.Write(req, insertEvent(req)) }()
	t0 := <-asked
	db.granted = nil
	blocked := time.Since(t0)
	close(release)
	if err := <-holderDone; err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := db.Write(req, insertEvent(req)); err != nil {
		t.Fatal(err)
	}
	u := LockUseOf(req)
	if u.Writes != 2 || u.Wait < blocked || u.Held <= 0 {
		t.Errorf("lock use %+v: want 2 writes, a wait of at least %v, some time held", u, blocked)
	}
	a := u.Attrs()
	if len(a) != 6 || a[0] != "LOCK_WAIT_MS" || a[2] != "LOCK_HELD_MS" || a[4] != "WRITES" || a[5] != 2 {
		t.Errorf("attrs %v", a)
	}
}
