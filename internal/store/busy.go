package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"modernc.org/sqlite"

	"github.com/collab-forge/collab/internal/fault"
)

// SettingBusyTimeout is the root setting that bounds how long one request
// waits for the writer lock, in total (a Go duration, e.g. "10s").
const SettingBusyTimeout = "busy_timeout"

// DefaultBusyTimeout is busy_timeout when the setting is absent.
const DefaultBusyTimeout = 10 * time.Second

// MaxBusyTimeout bounds the setting: a writer that waits longer than this
// is better told to come back.
const MaxBusyTimeout = 10 * time.Minute

// ParseBusyTimeout reads a busy_timeout value.
func ParseBusyTimeout(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > MaxBusyTimeout {
		return 0, fault.New(fault.Usage, "bad busy_timeout %q: want a duration from 0s to %s, such as 10s", v, MaxBusyTimeout)
	}
	return d, nil
}

// busyTimeoutOf is a busy_timeout setting's value, or the default when it
// is absent or bad.
func busyTimeoutOf(v string) time.Duration {
	if v == "" {
		return DefaultBusyTimeout
	}
	d, err := ParseBusyTimeout(v)
	if err != nil {
		return DefaultBusyTimeout
	}
	return d
}

// busySlack is how far a write's remaining budget may be from the
// connections' own busy_timeout before it is set for that write.
const busySlack = 100 * time.Millisecond

// busyTimeout is the root's busy_timeout setting as Settings last read
// it (it is asked before every write), or its default when it is absent
// or unreadable (the settings table may not exist yet).
func (db *DB) busyTimeout(ctx context.Context) time.Duration {
	s, err := db.Settings(ctx)
	if err != nil {
		return DefaultBusyTimeout
	}
	return busyTimeoutOf(s[SettingBusyTimeout])
}

// waitBudget is what one request has spent waiting for the writer lock,
// and (for its log entry) how long it held the lock over how many writes.
type waitBudget struct {
	mu      sync.Mutex
	used    time.Duration
	held    time.Duration
	writes  int
	retries int
}

func (b *waitBudget) spent() time.Duration {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

func (b *waitBudget) add(d time.Duration) {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.used += d
	b.mu.Unlock()
}

// held adds one write's time holding the writer lock.
func (b *waitBudget) hold(d time.Duration) {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.held += d
	b.writes++
	b.mu.Unlock()
}

// LockUse is what one request did with the writer lock: the serial part
// of its cost, which bounds how many writes a second the forge takes. On
// PostgreSQL Wait is the wait for the writer lock (serial writers: the
// advisory lock) and the whole time of the write transactions that failed,
// Held the rest of those that committed, and Retries how many ran again
// (SERIALIZABLE writers).
type LockUse struct {
	Wait    time.Duration // queued for it (the flock, then SQLite's lock)
	Held    time.Duration // held it: BEGIN IMMEDIATE to the commit's fsync
	Writes  int           // write transactions
	Retries int           // write transactions run again (PostgreSQL)
}

// LockUseOf is the lock use of the request that ctx (WithWaitBudget)
// carries so far; zero without one.
func LockUseOf(ctx context.Context) LockUse {
	b := budgetOf(ctx)
	if b == nil {
		return LockUse{}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return LockUse{Wait: b.used, Held: b.held, Writes: b.writes, Retries: b.retries}
}

// Attrs are the journal fields of u (LOCK_WAIT_MS, LOCK_HELD_MS with
// microseconds, WRITES): the figures bench/capacity reads back, so that a
// slow request tells queueing from its own work.
func (u LockUse) Attrs() []any {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	a := []any{"LOCK_WAIT_MS", ms(u.Wait), "LOCK_HELD_MS", ms(u.Held), "WRITES", u.Writes}
	if u.Retries > 0 {
		a = append(a, "RETRIES", u.Retries)
	}
	return a
}

type budgetKey struct{}

// WithWaitBudget starts one request's wait budget: every Write under the
// returned context draws its waiting time (the flock queue and SQLite's
// lock alike) from one busy_timeout, so a request that writes three times
// behind a stuck writer still gives up after busy_timeout, not three times
// that. Without it each Write has a budget of its own.
func WithWaitBudget(ctx context.Context) context.Context {
	return context.WithValue(ctx, budgetKey{}, &waitBudget{})
}

func budgetOf(ctx context.Context) *waitBudget {
	b, _ := ctx.Value(budgetKey{}).(*waitBudget)
	return b
}

// SQLite's primary result codes (the low byte of an extended code).
const (
	sqliteBusy     = 5
	sqliteLocked   = 6
	sqliteReadOnly = 8
	sqliteIOErr    = 10
	sqliteFull     = 13
	sqliteCantOpen = 14
	sqliteCorrupt  = 11
	sqliteNotADB   = 26
)

// Damaged turns an error of a damaged database (SQLite's "database disk
// image is malformed", a -wal file overwritten under a live reader, a
// file that is no database) into what it is, with what to run; any other
// error is returned as it is. Reads meet it as writes do, so the
// transports pass every error through it.
func Damaged(err error) error {
	if code := sqliteCode(err); code != sqliteCorrupt && code != sqliteNotADB {
		return err
	}
	return fault.Wrap(err, "the forge database is damaged (SQLite: "+sqliteMessage(err)+"): run collab-hook fsck, which says what to restore")
}

// sqliteMessage is SQLite's own words for err's code.
func sqliteMessage(err error) string {
	if sqliteCode(err) == sqliteNotADB {
		return "file is not a database"
	}
	return "database disk image is malformed"
}

func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() & 0xff
	}
	return 0
}

// busyError is a writer-lock wait that ran past the budget.
type busyError struct{ err error }

func (e busyError) Error() string { return "database busy: " + e.err.Error() }
func (e busyError) Unwrap() error { return e.err }

var errReadOnly = fmt.Errorf("database on a read-only filesystem: %w", syscall.EROFS)

// Retry-After of each "try again later".
const (
	retryBusy     = 2 * time.Second
	retryFull     = 60 * time.Second
	retryReadOnly = 60 * time.Second
)

// ReadOnlyNow refuses a write to the database at path when its
// filesystem is read-only at this moment (a remount since a process
// opened it included), with the line every write on a read-only root
// gets: for a push, which must be told before git unpacks anything into
// the root beside it.
func ReadOnlyNow(path string) error {
	if readOnlyFS(path) {
		return fault.Later(errReadOnly, retryReadOnly, readOnlyMsg)
	}
	return nil
}

// readOnlyMsg is what a write on a read-only root is told.
const readOnlyMsg = "the forge root is read-only: writes are refused for now (reads still work); try again later"

// classify turns what a write can meet that is no bug — a busy database, a
// full disk, a read-only root — into a fault.Unavailable whose one line
// says which. Other errors are returned as they are.
func (db *DB) classify(err error) error {
	if err == nil {
		return nil
	}
	var fe *fault.Error
	if errors.As(err, &fe) && fe.Kind != fault.Internal {
		return err
	}
	if db.pg {
		return classifyPG(err)
	}
	if d := Damaged(err); d != err {
		return d
	}
	code := sqliteCode(err)
	var be busyError
	switch {
	case errors.As(err, &be) || code == sqliteBusy || code == sqliteLocked:
		return fault.Later(err, retryBusy, "database busy: other writers held it past busy_timeout; try again later")
	case code == sqliteFull || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) ||
		(code == sqliteIOErr && db.diskFull()):
		return fault.Later(err, retryFull, "disk full: the forge cannot write now; try again later")
	case code == sqliteReadOnly || errors.Is(err, syscall.EROFS) ||
		((code == sqliteCantOpen || code == sqliteIOErr) && readOnlyFS(db.path)):
		return fault.Later(err, retryReadOnly, readOnlyMsg)
	}
	return err
}

// diskFull reports whether the database's filesystem has no block left for
// this user: SQLite reports some ENOSPC failures (growing the -shm file, a
// sync) as plain I/O errors.
func (db *DB) diskFull() bool {
	var st syscall.Statfs_t
	if err := syscall.Statfs(filepath.Dir(db.path), &st); err != nil {
		return false
	}
	return st.Bavail == 0
}
