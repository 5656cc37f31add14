// Package store opens collab's SQLite file and runs transactions on it.
//
// Writers take BEGIN IMMEDIATE (so a transaction never upgrades a read lock
// and dies with SQLITE_BUSY) on one connection per process, and serialise
// across processes on a flock of a side file, because SQLite's own lock wait
// is a sleeping poll with no queue. Commits are synchronous=FULL: with NORMAL
// a power loss could forget a granted lease and hand its token out twice.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/collab-forge/collab"
	"github.com/collab-forge/collab/internal/flock"
	_ "modernc.org/sqlite" // the driver
)

// Querier is what both *sql.DB and *sql.Tx offer.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// DB is an open collab database.
type DB struct {
	path string
	w    *sql.DB
	r    *sql.DB
}

func dsn(path string, txlock string) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Set("_txlock", txlock)
	return "file:" + path + "?" + q.Encode()
}

// Open opens (creating if needed) the database at path and brings its
// schema up to date.
func Open(ctx context.Context, path string) (*DB, error) {
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
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("no forge database (run collab-hook init?): %w", err)
	}
	p, err := sql.Open("sqlite", dsn(path, "immediate"))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	p.SetMaxIdleConns(2)
	db := &DB{path: path, w: p, r: p}
	if err := db.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// OpenNoMigrate opens an existing database as it is, for programs that must
// not write, such as sshd's AuthorizedKeysCommand, which runs twice a login.
func OpenNoMigrate(path string) (*DB, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("no forge database (run collab-hook init?): %w", err)
	}
	return open(path)
}

func open(path string) (*DB, error) {
	w, err := sql.Open("sqlite", dsn(path, "immediate"))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	r, err := sql.Open("sqlite", dsn(path, "deferred"))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	r.SetMaxOpenConns(8)
	return &DB{path: path, w: w, r: r}, nil
}

// OpenExisting is Open for a database that must already exist, so that a
// mistyped root is reported rather than silently created.
func OpenExisting(ctx context.Context, path string) (*DB, error) {
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

// Path is the database file.
func (db *DB) Path() string { return db.path }

// R is the reader pool, for single statements and short reads. It never
// blocks behind a writer (WAL).
func (db *DB) R() *sql.DB { return db.r }

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
func (db *DB) Write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	unlock, err := db.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(tx); err != nil {
		if rerr := tx.Rollback(); rerr != nil && !errors.Is(rerr, sql.ErrTxDone) {
			return errors.Join(err, fmt.Errorf("rollback: %w", rerr))
		}
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// Read runs fn in one read transaction, for reads that must agree with each
// other. Keep it short: a long reader stops the WAL from resetting.
func (db *DB) Read(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := db.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("begin read: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only; nothing to lose
	return fn(tx)
}

// lock takes the cross-process writer lock: an exclusive flock of
// PATH.lock, queued by the kernel instead of SQLite's sleeping poll.
func (db *DB) lock(ctx context.Context) (func(), error) {
	return flock.Lock(ctx, db.path+".lock", 0o660)
}

func (db *DB) migrate(ctx context.Context) error {
	steps, err := migrations(collab.Schema)
	if err != nil {
		return err
	}
	var have int
	if err := db.w.QueryRowContext(ctx, "PRAGMA user_version").Scan(&have); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if have >= len(steps) {
		return nil
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

// migrations splits the schema at its "-- migrate N" lines; step i holds
// the SQL that takes user_version from i to i+1.
func migrations(schema string) ([]string, error) {
	var steps []string
	cur := -1
	var b strings.Builder
	flush := func() {
		if cur >= 0 {
			steps = append(steps, b.String())
		}
		b.Reset()
	}
	for _, line := range strings.SplitAfter(schema, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "-- migrate "); ok {
			flush()
			n, err := strconv.Atoi(strings.TrimSpace(rest))
			if err != nil || n != len(steps)+1 {
				return nil, fmt.Errorf("schema.sql: migration %q out of order", strings.TrimSpace(line))
			}
			cur = n
			continue
		}
		if cur >= 0 {
			b.WriteString(line)
		}
	}
	flush()
	return steps, nil
}

// TimeLayout is RFC 3339 in UTC with fixed-width milliseconds, so that times
// stored as text sort and compare correctly in SQL.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// FormatTime renders t for the database and for JSON.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// ParseTime reads a time written by FormatTime (or any RFC 3339 time).
func ParseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("bad stored time %q: %w", s, err)
	}
	return t.UTC(), nil
}
