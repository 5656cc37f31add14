//go:build postgres

package store

// The record on PostgreSQL (the root's db setting, docs/scale.md "The
// record on PostgreSQL"). The domain packages' SQL is the same on both
// stores: a connection here rewrites SQLite's ? and ?NNN placeholders to
// $N, and schema.postgres.sql gives the tables the same columns (rowid
// included where the SQL names it). What differs is here:
//
//   - Write runs one writer at a time, as on SQLite: every domain function
//     was written as if it were the only writer. The one writer is the
//     holder of a transaction-level advisory lock, which a READ COMMITTED
//     transaction takes first, so that each of its statements sees every
//     write committed before (serialWriters). No flock: writers of several
//     hosts meet in the database. The busy budget is lock_timeout.
//     The URL's collab_writers=serializable runs writers concurrently
//     instead, each a SERIALIZABLE transaction run again (whole) on a
//     serialization failure or deadlock; writers of one repository then
//     conflict on the B-tree pages they share and run again, and fewer get
//     through: API comments through two hosts fell from 751 to 465 and
//     from 432 to 402 a second as clients went from 1 to 4, where serial
//     writers held 630-715 (bench/capacity -store postgres -webs 2
//     -web-direct, and -writers serializable; docs/scale.md has the table).
//   - Read is one REPEATABLE READ, READ ONLY transaction: its reads agree.
//   - Migrations are counted in a schema_version table, applied under an
//     advisory lock so that two processes starting together apply each
//     step once.
//   - "Try again later" comes from PostgreSQL's own error codes
//     (classifyPG), told apart where an error leaves the driver (rebindConn,
//     classifiedRows), so that reads meet an outage as writes do.
//   - Only init (Open) makes a record: the opens for an existing forge
//     refuse a database that holds none (schemaMode).

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/collab-forge/collab"
	"github.com/collab-forge/collab/internal/dbfile"
	"github.com/collab-forge/collab/internal/fault"
)

// checkPostgresURL is what pgx says of loc.
func checkPostgresURL(loc string) error {
	if _, err := pgx.ParseConfig(loc); err != nil {
		return fault.New(fault.Usage, "bad database URL: %s", oneLine(err.Error()))
	}
	return nil
}

// pgMaxRetries bounds how often Write runs its transaction again after a
// serialization failure or deadlock; past it the write is "busy".
const pgMaxRetries = 64

// openPostgres opens the database at loc with a pool of at most conns
// connections, checks that it answers, and does to its schema what mode
// says.
func openPostgres(ctx context.Context, loc string, conns int, mode schemaMode) (*DB, error) {
	if err := CheckURL(loc); err != nil {
		return nil, err
	}
	loc, serial, err := writersOf(loc)
	if err != nil {
		return nil, err
	}
	cfg, _ := pgx.ParseConfig(loc)
	if _, ok := cfg.RuntimeParams["lock_timeout"]; !ok {
		cfg.RuntimeParams["lock_timeout"] = strconv.FormatInt(DefaultBusyTimeout.Milliseconds(), 10)
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	if !strings.Contains(loc, "default_query_exec_mode=") {
		// Statements are not prepared: a process that lives for one
		// request runs each once, and preparing it first (pgx's default)
		// would cost a round trip more each; and pgbouncer in transaction
		// pooling, which each host runs in front of the server
		// (docs/scale.md), keeps no prepared statement from one
		// transaction to the next. The URL may say otherwise.
		cfg.DefaultQueryExecMode = pgx.QueryExecModeExec
	}
	p := sql.OpenDB(rebinding{stdlib.GetConnector(*cfg)})
	p.SetMaxOpenConns(conns)
	p.SetMaxIdleConns(min(conns, 4))
	return finishPG(ctx, &DB{path: Redact(loc), w: p, r: p, pg: true, serial: serial}, mode)
}

// writersParam is the URL parameter that chooses how writers meet:
// "serial" (the default) or "serializable". It is collab's, and taken out
// of the URL before pgx (which would send it to the server) sees it.
const writersParam = "collab_writers"

// writersOf is loc without writersParam, and whether it asks for serial
// writers.
func writersOf(loc string) (string, bool, error) {
	u, err := url.Parse(loc)
	if err != nil {
		return "", false, fault.New(fault.Usage, "bad database URL: want postgres://USER@HOST/DBNAME")
	}
	q := u.Query()
	if !q.Has(writersParam) {
		return loc, true, nil
	}
	v := q.Get(writersParam)
	if v != "serial" && v != "serializable" {
		return "", false, fault.New(fault.Usage, "bad database URL: %s is serial or serializable, not %q", writersParam, v)
	}
	q.Del(writersParam)
	u.RawQuery = q.Encode()
	return u.String(), v == "serial", nil
}

// serialWriters is the advisory lock the one writer holds (serial
// writers); migrations hold (7368201, 0) and events (7368201, 1).
const serialWriters = "SELECT pg_advisory_xact_lock(7368201, 2)"

// finishPG checks that db answers, measures its clock and does to its
// schema what mode says.
func finishPG(ctx context.Context, db *DB, mode schemaMode) (*DB, error) {
	if err := db.measureSkew(ctx); err != nil {
		db.w.Close()
		return nil, db.classify(fmt.Errorf("connect to %s: %w", db.path, err))
	}
	have, known, err := db.versionPG(ctx, db.r)
	switch {
	case err != nil:
	case have == 0 && mode == schemaExisting:
		err = fmt.Errorf("no forge record in %s (run collab-hook init --db?)", db.path)
	case have < known && mode != schemaAsIs:
		err = db.migratePG(ctx, have, known)
	}
	if err != nil {
		db.w.Close()
		return nil, err
	}
	return db, nil
}

// rebinding is pgx's connector whose connections take SQLite's
// placeholders.
type rebinding struct{ driver.Connector }

func (c rebinding) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, classifyPG(err)
	}
	return rebindConn{conn.(*stdlib.Conn)}, nil
}

// rebindConn is a pgx connection that rewrites each statement's
// placeholders (Rebind), and classifies its errors (classifyPG) where they
// leave the driver, so that a lost server is "try again later" for every
// query, not only for Write's: the reads that sit on R() (a token's
// lookup, the settings) meet a stopped server first. The rest of what
// database/sql asks of it, the embedded connection answers.
type rebindConn struct{ *stdlib.Conn }

func (c rebindConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c rebindConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := c.Conn.PrepareContext(ctx, Rebind(query))
	if err != nil {
		return nil, classifyPG(err)
	}
	return boolStmt{st.(*stdlib.Stmt)}, nil
}

func (c rebindConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.Conn.BeginTx(ctx, opts)
	return tx, classifyPG(err)
}

// boolStmt is a prepared statement that passes bools as intBools does.
type boolStmt struct{ *stdlib.Stmt }

func (s boolStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	r, err := s.Stmt.ExecContext(ctx, intBools(args))
	return r, classifyPG(err)
}

func (s boolStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := s.Stmt.QueryContext(ctx, intBools(args))
	return classifyRows(rows), classifyPG(err)
}

// classifiedRows are pgx's rows whose Next classifies its errors too: a
// listing whose connection the server ends after its first row (pgx reads
// that one with the query) meets the outage there. Its other methods,
// the optional column-type ones included, are pgx's.
type classifiedRows struct{ *stdlib.Rows }

func (r classifiedRows) Next(dest []driver.Value) error {
	err := r.Rows.Next(dest)
	if err == io.EOF { // the end of the rows, compared as database/sql does
		return err
	}
	return classifyPG(err)
}

func classifyRows(rows driver.Rows) driver.Rows {
	if r, ok := rows.(*stdlib.Rows); ok {
		return classifiedRows{r}
	}
	return rows
}

func (c rebindConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	r, err := c.Conn.ExecContext(ctx, Rebind(query), intBools(args))
	return r, classifyPG(err)
}

func (c rebindConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := c.Conn.QueryContext(ctx, Rebind(query), intBools(args))
	return classifyRows(rows), classifyPG(err)
}

// intBools passes a Go bool as 0 or 1: the schema keeps SQLite's integer
// flags, which PostgreSQL will not take a boolean for.
func intBools(args []driver.NamedValue) []driver.NamedValue {
	for i, a := range args {
		if b, ok := a.Value.(bool); ok {
			args[i].Value = int64(0)
			if b {
				args[i].Value = int64(1)
			}
		}
	}
	return args
}

// Rebind rewrites an SQLite statement for PostgreSQL: ?NNN becomes $NNN
// and each bare ? the next number after the largest so far, as SQLite
// numbers them, and SQLite's planner hint INDEXED BY NAME goes (PostgreSQL
// plans by its statistics). Quoted strings, quoted names and comments are
// left alone.
func Rebind(query string) string {
	if i := strings.Index(query, " INDEXED BY "); i >= 0 {
		rest := query[i+len(" INDEXED BY "):]
		j := strings.IndexFunc(rest, func(r rune) bool { return !(r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') })
		if j < 0 {
			j = len(rest)
		}
		query = query[:i] + rest[j:]
	}
	if !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 8)
	n := 0
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(query) && query[j] != c {
				j++
			}
			b.WriteString(query[i:min(j+1, len(query))])
			i = j
		case c == '-' && i+1 < len(query) && query[i+1] == '-':
			j := strings.IndexByte(query[i:], '\n')
			if j < 0 {
				j = len(query) - i
			}
			b.WriteString(query[i : i+j])
			i += j - 1
		case c == '?':
			j := i + 1
			for j < len(query) && query[j] >= '0' && query[j] <= '9' {
				j++
			}
			if j > i+1 {
				k, _ := strconv.Atoi(query[i+1 : j])
				n = max(n, k)
				b.WriteString("$" + query[i+1:j])
			} else {
				n++
				b.WriteString("$" + strconv.Itoa(n))
			}
			i = j - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// writePG runs fn in a transaction as the one writer (or, with serializable
// writers, a SERIALIZABLE one) and commits it, again from the start after
// a serialization failure or deadlock, so fn must only write through tx and
// set what it returns (it may run more than once). Lock waits are bounded
// by what is left of limit (lock_timeout).
func (db *DB) writePG(ctx context.Context, limit time.Duration, fn func(tx *sql.Tx) error) error {
	b := budgetOf(ctx)
	for attempt := 0; ; attempt++ {
		start := time.Now()
		queued, err := db.txPG(ctx, limit-b.spent(), fn)
		if err == nil {
			b.add(queued)
			b.hold(time.Since(start) - queued)
			return nil
		}
		// A failed attempt's time counts against the busy budget.
		b.add(time.Since(start))
		if !retryable(err) || attempt >= pgMaxRetries || ctx.Err() != nil {
			return err
		}
		b.retry()
		// Racers that collided would collide again in step.
		backoff := time.Duration(rand.Int64N(int64(time.Millisecond) << min(attempt, 5)))
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
	}
}

// txPG runs one attempt of writePG. queued is how long it waited for the
// writer lock (serial writers; SERIALIZABLE ones queue for none).
func (db *DB) txPG(ctx context.Context, left time.Duration, fn func(tx *sql.Tx) error) (queued time.Duration, err error) {
	level := sql.LevelSerializable
	if db.serial {
		level = sql.LevelReadCommitted
	}
	start := time.Now()
	tx, err := db.w.BeginTx(ctx, &sql.TxOptions{Isolation: level})
	if err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	setTimeout := "SET LOCAL lock_timeout = " + strconv.FormatInt(max(left.Milliseconds(), 1), 10) // 0 would be no limit
	switch {
	case db.serial:
		// The wait for the writer lock is the write's wait: bounded by
		// its budget always, not by the connection's lock_timeout, which
		// pgbouncer drops (ignore_startup_parameters). One round trip:
		// without arguments both go as one simple query.
		if _, err := tx.ExecContext(ctx, setTimeout+"; "+serialWriters); err != nil {
			return 0, rollback(tx, fmt.Errorf("wait to write: %w", err))
		}
		queued = time.Since(start)
	case left-DefaultBusyTimeout < -busySlack || left-DefaultBusyTimeout > busySlack:
		// Connections wait DefaultBusyTimeout (the URL's lock_timeout);
		// only a write with another budget left pays for a statement more.
		if _, err := tx.ExecContext(ctx, setTimeout); err != nil {
			return 0, rollback(tx, fmt.Errorf("set lock_timeout: %w", err))
		}
	}
	if err := fn(tx); err != nil {
		return queued, rollback(tx, err)
	}
	if err := tx.Commit(); err != nil {
		return queued, fmt.Errorf("commit: %w", err)
	}
	return queued, nil
}

// readPG runs fn in one read-only snapshot.
func (db *DB) readPG(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := db.r.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return db.classify(fmt.Errorf("begin read: %w", err))
	}
	defer tx.Rollback() //nolint:errcheck // read-only; nothing to lose
	return fn(tx)
}

// pgCode is PostgreSQL's SQLSTATE of err, or "".
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// retryable: the transaction lost a race (40001 serialization_failure,
// 40P01 deadlock_detected) and would succeed run again.
func retryable(err error) bool {
	c := pgCode(err)
	return c == "40001" || c == "40P01"
}

// classifyPG is classify for PostgreSQL: what a write or read can meet
// that is no bug, as a fault.Unavailable whose one line says which.
func classifyPG(err error) error {
	code := pgCode(err)
	var ne net.Error
	var ce *pgconn.ConnectError
	switch {
	case retryable(err) || code == "55P03" || code == "57014":
		// Lost every retry, or waited past lock_timeout / statement_timeout.
		return fault.Later(err, retryBusy, "database busy: other writers held it past busy_timeout; try again later")
	case code == "53100":
		return fault.Later(err, retryFull, "disk full: the forge database cannot write now; try again later")
	case code == "25006":
		return fault.Later(err, retryReadOnly, "the forge database is read-only: writes are refused for now (reads still work); try again later")
	case code == "XX001" || code == "XX002":
		return fault.Wrap(err, "the forge database is damaged (PostgreSQL: "+code+"): restore it from a backup")
	case strings.HasPrefix(code, "08") || strings.HasPrefix(code, "57P") || code == "53300" ||
		errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, io.ErrUnexpectedEOF): // the server closed the connection mid-message
		return fault.Later(err, retryBusy, "the forge database is unavailable: try again later")
	}
	return err
}

// migratePG applies schema.postgres.sql's steps the database lacks, in
// one transaction under an advisory lock. READ COMMITTED, not Write's
// SERIALIZABLE: a snapshot taken before the lock was granted would not see
// the steps that the process holding it applied.
func (db *DB) migratePG(ctx context.Context, have, known int) error {
	if have >= known {
		return nil
	}
	steps, err := dbfile.Migrations(collab.PostgresSchema)
	if err != nil {
		return err
	}
	tx, err := db.w.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return db.classify(fmt.Errorf("begin migration: %w", err))
	}
	if err := db.migrateTx(ctx, tx, steps); err != nil {
		return db.classify(rollback(tx, err))
	}
	if err := tx.Commit(); err != nil {
		return db.classify(fmt.Errorf("commit migration: %w", err))
	}
	return nil
}

func (db *DB) migrateTx(ctx context.Context, tx *sql.Tx, steps []string) error {
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(7368201, 0)"); err != nil {
		return fmt.Errorf("lock the schema: %w", err)
	}
	if _, err := tx.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL)"); err != nil {
		return fmt.Errorf("create schema_version: %w", err)
	}
	// Another process may have migrated while we waited for the lock.
	have, _, err := db.versionPG(ctx, tx)
	if err != nil {
		return err
	}
	for v := have; v < len(steps); v++ {
		if _, err := tx.ExecContext(ctx, steps[v]); err != nil {
			return fmt.Errorf("migrate to version %d: %w", v+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM schema_version"); err != nil {
		return fmt.Errorf("set schema version: %w", err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO schema_version(version) VALUES (?)", len(steps)); err != nil {
		return fmt.Errorf("set schema version: %w", err)
	}
	return nil
}

// versionPG is version for PostgreSQL: 0 before the first migration.
func (db *DB) versionPG(ctx context.Context, q Querier) (have, known int, err error) {
	known = dbfile.Known(collab.PostgresSchema)
	var exists bool
	if err := q.QueryRowContext(ctx, "SELECT to_regclass('schema_version') IS NOT NULL").Scan(&exists); err != nil {
		return 0, 0, db.classify(fmt.Errorf("read schema version: %w", err))
	}
	if exists {
		err := q.QueryRowContext(ctx, "SELECT version FROM schema_version").Scan(&have)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return 0, 0, db.classify(fmt.Errorf("read schema version: %w", err))
		}
	}
	if have > known {
		return have, known, dbfile.Newer(have, known)
	}
	return have, known, nil
}

// PostgresBuilt reports whether this binary links the PostgreSQL store.
func PostgresBuilt() bool { return true }

// leadPG runs work while this process holds the session-level advisory
// lock named name on a connection of its own, and cancels it when the lock
// is lost (the connection broke: the server then releases the lock, and
// another host takes it). It tries for the lock every poll and returns
// when ctx ends.
func (db *DB) leadPG(ctx context.Context, name string, poll time.Duration, work func(ctx context.Context)) {
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		if l, ok := db.tryLock(ctx, name); ok {
			l.hold(ctx, poll, work)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// leadLock is the lock Lead holds: a transaction-level advisory lock in a
// transaction kept open, not a session-level one. Through pgbouncer in
// transaction pooling (a host whose db setting names its pgbouncer) a
// session's lock would stay on the pooled server connection once its
// statement ended: pgbouncer would hand that connection, lock and all, to
// another client (a second leader) and keep it after the leader stopped
// (no leader until pgbouncer closed it). An open transaction keeps its
// server connection to itself, and its end, however it comes, releases
// the lock. In READ COMMITTED it holds no snapshot between statements, so
// it holds back no vacuum.
type leadLock struct {
	conn *sql.Conn
	tx   *sql.Tx
}

// tryLock takes the lock named name in a new transaction, which it
// returns open while the lock is held.
func (db *DB) tryLock(ctx context.Context, name string) (*leadLock, bool) {
	conn, err := db.w.Conn(ctx)
	if err != nil {
		return nil, false
	}
	// Not ended by ctx: the lock is let go once work has returned (hold).
	tx, err := conn.BeginTx(context.WithoutCancel(ctx), &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		conn.Close()
		return nil, false
	}
	l := &leadLock{conn: conn, tx: tx}
	var got bool
	if err := tx.QueryRowContext(ctx, "SELECT pg_try_advisory_xact_lock(7368201, hashtext(?))", name).Scan(&got); err != nil || !got {
		l.release()
		return nil, false
	}
	return l, true
}

// release ends the transaction, and with it the lock, and the session:
// a connection whose rollback did not get through must not go back to
// the pool with the transaction open.
func (l *leadLock) release() {
	_ = l.tx.Rollback()
	_ = l.conn.Raw(func(any) error { return driver.ErrBadConn })
	l.conn.Close()
}

// ping checks that the lock is still held: its transaction answers.
func (l *leadLock) ping(ctx context.Context) error {
	_, err := l.tx.ExecContext(ctx, "SELECT 1")
	return err
}

// hold runs work until ctx ends or the lock's transaction stops
// answering, then releases the lock and waits for work to return. It
// starts work two polls after it got the lock: a leader whose session the
// server ended (a broken connection, not a dead host) goes on until its
// next ping fails, within a poll, and must have stopped before the next
// starts.
func (l *leadLock) hold(ctx context.Context, poll time.Duration, work func(ctx context.Context)) {
	defer l.release()
	select {
	case <-ctx.Done():
		return
	case <-time.After(2 * poll):
	}
	if err := l.ping(ctx); err != nil {
		return
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); work(wctx) }()
	t := time.NewTicker(poll)
	defer t.Stop()
	for wctx.Err() == nil {
		select {
		case <-wctx.Done():
		case <-done:
			cancel()
		case <-t.C:
			if err := l.ping(wctx); err != nil && wctx.Err() == nil {
				cancel()
			}
		}
	}
	cancel()
	<-done
}

// measureSkew sets db.skew from the server's clock_timestamp(), taken as
// of the middle of the round trip that read it.
func (db *DB) measureSkew(ctx context.Context) error {
	now := time.Now
	if db.hostClock != nil {
		now = db.hostClock
	}
	var ms float64
	before := now()
	if err := db.r.QueryRowContext(ctx, "SELECT extract(epoch FROM clock_timestamp()) * 1000").Scan(&ms); err != nil {
		return err
	}
	after := now()
	server := time.UnixMilli(int64(ms))
	db.skew = server.Sub(before.Add(after.Sub(before) / 2)).Round(time.Millisecond)
	return nil
}

// retry counts a write transaction run again (a serialization failure or
// deadlock).
func (b *waitBudget) retry() {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.retries++
	b.mu.Unlock()
}
