// Package store opens collab's record and runs transactions on it: the
// SQLite file, or with the postgres build tag a PostgreSQL database
// (postgres.go says what differs there).
//
// On SQLite writers take BEGIN IMMEDIATE (so a transaction never upgrades a read lock
// and dies with SQLITE_BUSY) on one connection per process, and serialise
// across processes on a flock of a side file, because SQLite's own lock wait
// is a sleeping poll with no queue. Commits are synchronous=FULL: with NORMAL
// a power loss could forget a granted lease and hand its token out twice.
package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"modernc.org/sqlite"

	"github.com/collab-forge/collab"
	"github.com/collab-forge/collab/internal/dbfile"
	"github.com/collab-forge/collab/internal/flock"
)

// Querier is what both *sql.DB and *sql.Tx offer.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Tx is a write or read transaction as Write and Read hand it to their
// callback. The use-case layer (internal/ops) names it only this way and
// only passes it on, to domain functions that take a Querier: that and
// DB's Write, Read, R and Ping are the seam between the use cases and the
// database engine (docs/scale.md).
type Tx = *sql.Tx

// DB is an open collab database.
type DB struct {
	path string
	w    *sql.DB
	r    *sql.DB
	// pg is set for a PostgreSQL record (postgres.go); path is then its
	// URL without the password, and beside the path that the files kept
	// beside the record start with (SetBeside).
	pg     bool
	beside string
	// serial: a PostgreSQL record's writers write one at a time
	// (postgres.go's writersParam).
	serial bool //lint:ignore U1000 read by postgres.go, which the build without the postgres tag leaves out
	// skew is what the PostgreSQL server's clock is ahead of this host's
	// (Now), measured when the record was opened; hostClock is this
	// host's clock (time.Now; tests set it off).
	skew      time.Duration
	hostClock func() time.Time
	// readOnly is set when the database sits on a read-only filesystem:
	// reads work, every write is refused as "try again later".
	readOnly bool
	// settings caches the settings table for a long-running process
	// (Settings).
	settings settingsCache
	// granted, when set (by tests), is told each wait a write is allowed:
	// waitQueue for the flock queue, then waitLock for SQLite's own lock.
	// How the budget is shared is then checked exactly, where timing the
	// waits would depend on how loaded the machine is.
	granted func(stage string, wait time.Duration)
}

// The stages of a write's wait for the writer lock, as told to granted.
const (
	waitQueue = "queue"
	waitLock  = "lock"
)

// WALLimit is journal_size_limit: after a checkpoint resets the WAL, the
// file is cut back to this size, so one burst (or one long reader) does not
// leave a large WAL behind for good.
const WALLimit = 4 << 20

func dsn(path string, txlock string, immutable bool) string {
	q := url.Values{}
	if immutable {
		// A read-only filesystem with no -wal file: the database file is
		// all there is and nothing can change it, so SQLite may read it
		// without the -shm file it could not create.
		q.Set("immutable", "1")
		q.Add("_pragma", "foreign_keys(1)")
		return "file:" + path + "?" + q.Encode()
	}
	q.Add("_pragma", "busy_timeout("+strconv.Itoa(int(DefaultBusyTimeout/time.Millisecond))+")")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "journal_size_limit("+strconv.Itoa(WALLimit)+")")
	q.Set("_txlock", txlock)
	return "file:" + path + "?" + q.Encode()
}

// Open opens (creating if needed) the database at path and brings its
// schema up to date. A new file is made private to the forge's user
// (0640, whatever the umask); SQLite gives the -wal and -shm files the
// mode of the database file.
func Open(ctx context.Context, path string) (*DB, error) {
	if IsURL(path) {
		return openPostgres(ctx, path, 8, schemaCreate)
	}
	if err := create(path); err != nil {
		return nil, err
	}
	db, err := open(path)
	if err != nil {
		return nil, err
	}
	if err := db.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// schemaMode is what opening a record on PostgreSQL does to its schema.
type schemaMode int

const (
	// schemaCreate makes the schema in an empty database, or brings it up
	// to date (init, and the moves into an empty database).
	schemaCreate schemaMode = iota
	// schemaExisting brings a forge's record up to date, and refuses a
	// database that holds none.
	schemaExisting
	// schemaAsIs leaves the schema as it is.
	schemaAsIs
)

// FileMode is the mode of the database file (and so of its -wal and -shm).
const FileMode = 0o640

// create makes an empty database file with FileMode when there is none:
// SQLite itself would create it 0644.
func create(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, FileMode)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	return f.Close()
}

// OpenShort is OpenExisting for a process that lives for one request (a
// hook, one ssh command): one pool, whose single connection serves reads
// and writes alike, instead of a writer and a reader pool. Each SQLite
// connection parses the whole schema when it opens, the larger part of
// what such a process spends on the database; a second connection is only
// opened when one is needed while the first is busy (a read through R()
// inside a Write callback, say), so nothing can wait on itself. Writers
// still serialise on the flock and BEGIN IMMEDIATE; Read stays a deferred
// read transaction.
func OpenShort(ctx context.Context, path string) (*DB, error) {
	if IsURL(path) {
		return openPostgres(ctx, path, 2, schemaExisting)
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("no forge database (run collab-hook init?): %w", err)
	}
	ro := readOnlyFS(path)
	p, err := pool(dsn(path, "immediate", ro && !exists(path+"-wal")))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	p.SetMaxIdleConns(2)
	db := &DB{path: path, w: p, r: p, readOnly: ro}
	if err := db.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// OpenNoMigrate opens an existing database as it is, for programs that must
// not write, such as sshd's AuthorizedKeysCommand, which runs twice a login.
// A schema newer than this binary knows is still refused.
func OpenNoMigrate(ctx context.Context, path string) (*DB, error) {
	if IsURL(path) {
		return openPostgres(ctx, path, 2, schemaAsIs)
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("no forge database (run collab-hook init?): %w", err)
	}
	db, err := open(path)
	if err != nil {
		return nil, err
	}
	if _, _, err := db.version(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

func open(path string) (*DB, error) {
	ro := readOnlyFS(path)
	imm := ro && !exists(path+"-wal")
	w, err := pool(dsn(path, "immediate", imm))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	r, err := pool(dsn(path, "deferred", imm))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	r.SetMaxOpenConns(8)
	return &DB{path: path, w: w, r: r, readOnly: ro}, nil
}

// pool is sql.Open("sqlite", dsn) whose connections keep the -wal and
// -shm files when they close (SQLITE_FCNTL_PERSIST_WAL; the WAL is still
// checkpointed and cut to zero bytes). Without it the last connection to
// close deletes both, and a forge without collab-web running (every hook
// and ssh command then being the last) creates and deletes two files per
// process: on ext4, allocating an inode is the costliest part of opening
// the database (about 1 ms of CPU of each hook here).
func pool(dsn string) (*sql.DB, error) {
	c, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(persistWAL{c}), nil
}

type persistWAL struct{ driver.Connector }

func (p persistWAL) Connect(ctx context.Context) (driver.Conn, error) {
	c, err := p.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	if fc, ok := c.(sqlite.FileControl); ok {
		if _, err := fc.FileControlPersistWAL("main", 1); err != nil {
			c.Close()
			return nil, fmt.Errorf("keep the WAL: %w", err)
		}
	}
	return c, nil
}

// readOnlyFS reports whether the directory holding path is on a read-only
// filesystem (a read-only mount or bind mount): access(2) says EROFS.
func readOnlyFS(path string) bool {
	return errors.Is(syscall.Access(filepath.Dir(path), 2 /* W_OK */), syscall.EROFS)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// OpenExisting is Open for a database that must already exist, so that a
// mistyped root is reported rather than silently created. On PostgreSQL
// that is a database that holds a forge's record: an empty one (a
// mistyped COLLAB_DB, say) is refused, not given a schema.
func OpenExisting(ctx context.Context, path string) (*DB, error) {
	if IsURL(path) {
		return openPostgres(ctx, path, 8, schemaExisting)
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("no forge database (run collab-hook init?): %w", err)
	}
	return Open(ctx, path)
}

// Close closes both pools.
func (db *DB) Close() error {
	if db.r == db.w {
		return db.w.Close()
	}
	return errors.Join(db.w.Close(), db.r.Close())
}

// Path is the database file, or a PostgreSQL record's URL without its
// password.
func (db *DB) Path() string { return db.path }

// Beside is the path the files kept beside the record start with (the
// key index, authorized_keys): the SQLite file's, or for a PostgreSQL
// record what SetBeside said (its root's collab.db).
func (db *DB) Beside() string {
	if db.beside != "" {
		return db.beside
	}
	return db.path
}

// SetBeside says where a PostgreSQL record's side files go, before the DB
// is shared.
func (db *DB) SetBeside(path string) { db.beside = path }

// Lead runs work, until ctx ends, in only one of the processes of a
// forge that call it with name at once: what must run once per forge
// (webhook delivery, the sweepers) however many hosts share the record.
// On SQLite, whose forge is one host, it is work(ctx). On PostgreSQL the
// process that leads holds an advisory lock in a transaction it keeps open
// (through pgbouncer too: leadLock), and the others try for it every
// poll: where the leader's host dies its session ends, the server
// releases the lock, and another takes over within three polls.
func (db *DB) Lead(ctx context.Context, name string, poll time.Duration, work func(ctx context.Context)) {
	if !db.pg {
		work(ctx)
		return
	}
	db.leadPG(ctx, name, poll, work)
}

// Now is the forge's clock: this host's on SQLite, whose forge is one
// host; on PostgreSQL the server's, as measured when the record was
// opened, so that hosts whose clocks differ agree on when a lease expires.
func (db *DB) Now() time.Time {
	now := time.Now
	if db.hostClock != nil {
		now = db.hostClock
	}
	return now().Add(db.skew)
}

// Postgres reports whether the record is on PostgreSQL.
func (db *DB) Postgres() bool { return db.pg }

// ReadOnly reports whether the database sits on a read-only filesystem, so
// that every write is refused.
func (db *DB) ReadOnly() bool { return db.readOnly }

// R is the reader pool, for single statements and short reads. It never
// blocks behind a writer (WAL).
func (db *DB) R() *sql.DB { return db.r }

// Ping checks that the database answers a query.
func (db *DB) Ping(ctx context.Context) error {
	var one int
	if err := db.r.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return db.classify(fmt.Errorf("ping the database: %w", err))
	}
	return nil
}

// Each runs query with args on q and calls fn on every row, stopping at
// the first error.
func Each(ctx context.Context, q Querier, query string, args []any, fn func(*sql.Rows) error) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Write runs fn in one BEGIN IMMEDIATE transaction and commits it, or rolls
// back when fn fails. Every change and the event it emits go through here.
//
// Waiting for the writer lock (the flock queue, then SQLite's own lock) is
// bounded by the busy_timeout setting, counted once per request (see
// WithWaitBudget); past it, and on a full disk or a read-only root, the
// error is a fault.Unavailable that says which, and nothing was written.
func (db *DB) Write(ctx context.Context, fn func(tx Tx) error) error {
	return db.classify(db.write(ctx, db.busyTimeout(ctx), fn))
}

// TryWrite is Write that never waits: when another writer holds the lock
// it returns a fault.Unavailable at once. For bookkeeping that may be
// skipped (a token's last use), so that a read never queues behind writers.
func (db *DB) TryWrite(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return db.classify(db.write(ctx, 0, fn))
}

func (db *DB) write(ctx context.Context, limit time.Duration, fn func(tx *sql.Tx) error) error {
	if db.pg {
		return db.writePG(ctx, limit, fn)
	}
	if db.readOnly {
		return errReadOnly
	}
	b := budgetOf(ctx)
	left := limit - b.spent()
	start := time.Now()
	db.grant(waitQueue, left)
	unlock, err := db.lock(ctx, left)
	if err != nil {
		b.add(time.Since(start))
		return err
	}
	got := time.Now()
	defer func() {
		unlock()
		b.hold(time.Since(got))
	}()
	left -= got.Sub(start)
	db.grant(waitLock, left)
	tx, release, err := db.begin(ctx, left)
	b.add(time.Since(start))
	if err != nil {
		return err
	}
	defer release()
	if err := fn(tx); err != nil {
		return rollback(tx, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

func (db *DB) grant(stage string, wait time.Duration) {
	if db.granted != nil {
		db.granted(stage, wait)
	}
}

func rollback(tx *sql.Tx, err error) error {
	if rerr := tx.Rollback(); rerr != nil && !errors.Is(rerr, sql.ErrTxDone) {
		return errors.Join(err, fmt.Errorf("rollback: %w", rerr))
	}
	return err
}

// begin starts BEGIN IMMEDIATE on a writer connection whose SQLite lock
// wait is what is left of the budget, so that the flock queue and SQLite's
// own wait share one deadline. release hands the connection back.
func (db *DB) begin(ctx context.Context, left time.Duration) (*sql.Tx, func(), error) {
	conn, err := db.w.Conn(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("writer connection: %w", err)
	}
	release := func() { conn.Close() }
	// Connections wait DefaultBusyTimeout (the DSN); only a write with
	// another budget left (it waited in the queue, or the setting differs)
	// pays for two more statements.
	if d := left - DefaultBusyTimeout; d < -busySlack || d > busySlack {
		ms := max(left.Milliseconds(), 0)
		if _, err := conn.ExecContext(ctx, "PRAGMA busy_timeout = "+strconv.FormatInt(ms, 10)); err != nil {
			conn.Close()
			return nil, nil, fmt.Errorf("set busy_timeout: %w", err)
		}
		release = func() {
			// The connection may serve reads next (OpenShort): give it
			// back with the usual wait.
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), "PRAGMA busy_timeout = "+strconv.Itoa(int(DefaultBusyTimeout/time.Millisecond)))
			conn.Close()
		}
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		release()
		if sqliteCode(err) == sqliteBusy {
			return nil, nil, busyError{err}
		}
		return nil, nil, fmt.Errorf("begin: %w", err)
	}
	return tx, release, nil
}

// Read runs fn in one read transaction, for reads that must agree with each
// other. Keep it short: a long reader stops the WAL from resetting.
func (db *DB) Read(ctx context.Context, fn func(tx Tx) error) error {
	if db.pg {
		return db.readPG(ctx, fn)
	}
	tx, err := db.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("begin read: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only; nothing to lose
	return fn(tx)
}

// lock takes the cross-process writer lock: an exclusive flock of
// PATH.lock, queued by the kernel instead of SQLite's sleeping poll, for at
// most left (not at all when left <= 0).
func (db *DB) lock(ctx context.Context, left time.Duration) (func(), error) {
	path := db.path + ".lock"
	if left <= 0 {
		unlock, ok, err := flock.TryLock(path, FileMode)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, busyError{errors.New("writer lock held by another process")}
		}
		return unlock, nil
	}
	lctx, cancel := context.WithTimeout(ctx, left)
	defer cancel()
	unlock, err := flock.Lock(lctx, path, FileMode)
	if err != nil && ctx.Err() == nil && lctx.Err() != nil {
		return nil, busyError{fmt.Errorf("waited %s for the writer lock: %w", left.Round(time.Millisecond), err)}
	}
	return unlock, err
}

func (db *DB) migrate(ctx context.Context) error {
	have, known, err := db.version(ctx)
	if err != nil {
		return err
	}
	if have >= known {
		return nil
	}
	steps, err := dbfile.Migrations(collab.Schema)
	if err != nil {
		return err
	}
	return db.Write(ctx, func(tx *sql.Tx) error {
		// Another process may have migrated while we waited for the lock.
		if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&have); err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		for v := have; v < len(steps); v++ {
			if _, err := tx.ExecContext(ctx, steps[v]); err != nil {
				return fmt.Errorf("migrate to version %d: %w", v+1, err)
			}
		}
		if _, err := tx.ExecContext(ctx, "PRAGMA user_version = "+strconv.Itoa(len(steps))); err != nil {
			return fmt.Errorf("set schema version: %w", err)
		}
		return nil
	})
}

// version reads the database's schema version and the number of steps this
// binary knows. A version newer than that is refused: a newer collab has
// written this database, and an older one must not guess at its meaning.
// Only counting the steps (dbfile.Known) keeps splitting the schema off
// the path of every hook and ssh command, which find it up to date.
func (db *DB) version(ctx context.Context) (have, known int, err error) {
	if db.pg {
		return db.versionPG(ctx, db.r)
	}
	known = dbfile.Known(collab.Schema)
	if err := db.r.QueryRowContext(ctx, "PRAGMA user_version").Scan(&have); err != nil {
		return 0, 0, db.classify(fmt.Errorf("read schema version: %w", err))
	}
	if have > known {
		return have, known, dbfile.Newer(have, known)
	}
	return have, known, nil
}

// CheckFileVersion refuses, as opening it would, a database at path whose
// schema is newer than this binary knows (dbfile.Check).
func CheckFileVersion(path string) error { return dbfile.Check(path) }

// TimeLayout is RFC 3339 in UTC with fixed-width milliseconds, so that times
// stored as text sort and compare correctly in SQL.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// FormatTime renders t for the database and for JSON.
func FormatTime(t time.Time) string { return string(appendTime(make([]byte, 0, len(TimeLayout)), t)) }

// ParseTime reads a time written by FormatTime (or any RFC 3339 time).
func ParseTime(s string) (time.Time, error) {
	if t, ok := parseLayout(s); ok {
		return t, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("bad stored time %q: %w", s, err)
	}
	return t.UTC(), nil
}

// Exclusive holds the writer lock (the flock and SQLite's own) while fn
// runs, so that no write commits meanwhile; fn reads through R(), whose
// connections still see the last commit (WAL). A backup takes its snapshot
// of the database and the refs together this way.
func (db *DB) Exclusive(ctx context.Context, fn func() error) error {
	if db.pg {
		return errNotOnPostgres
	}
	if db.readOnly {
		return fn() // nothing can write: no lock needed, nor possible
	}
	return db.Write(ctx, func(*sql.Tx) error { return fn() })
}

// errNotOnPostgres is what the file-level operations of an SQLite record
// (a copy, a snapshot under the writer lock) say of a PostgreSQL one.
var errNotOnPostgres = errors.New("the record is on PostgreSQL, not in an SQLite file")

// CopyTo writes a consistent copy of the database to path, a file that must
// not exist yet (VACUUM INTO: one read transaction, compacted, no WAL).
func (db *DB) CopyTo(ctx context.Context, path string) error {
	if db.pg {
		return errNotOnPostgres
	}
	if _, err := db.r.ExecContext(ctx, "VACUUM INTO ?", path); err != nil {
		return db.classify(fmt.Errorf("copy the database to %s: %w", path, err))
	}
	if err := os.Chmod(path, FileMode); err != nil {
		return fmt.Errorf("copy the database: %w", err)
	}
	return nil
}

// Version is the database's schema version.
func (db *DB) Version(ctx context.Context) (int, error) {
	v, _, err := db.version(ctx)
	return v, err
}

// QuickCheck runs SQLite's quick_check over the database (and its WAL):
// the problems it finds, none where the database is sound.
func (db *DB) QuickCheck(ctx context.Context) ([]string, error) {
	if db.pg {
		// PostgreSQL checks its own pages (and reports XX001 when one is
		// damaged); an index check is pg_amcheck, an operator's tool.
		return nil, nil
	}
	rows, err := db.r.QueryContext(ctx, "PRAGMA quick_check(20)")
	if err != nil {
		if d := Damaged(err); d != err {
			return []string{sqliteMessage(err)}, nil
		}
		return nil, fmt.Errorf("check the database: %w", err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return nil, fmt.Errorf("check the database: %w", err)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		if d := Damaged(err); d != err {
			return append(problems, sqliteMessage(err)), nil
		}
		return nil, fmt.Errorf("check the database: %w", err)
	}
	return problems, nil
}
