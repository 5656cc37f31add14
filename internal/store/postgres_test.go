//go:build postgres

package store

import (
	"context"
	"database/sql"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/pgtest"
)

func TestRebind(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"SELECT 1", "SELECT 1"},
		{"SELECT a FROM t WHERE b = ? AND c = ?", "SELECT a FROM t WHERE b = $1 AND c = $2"},
		{"SELECT a FROM t WHERE b = ?1 OR c = ?1 AND d = ?2", "SELECT a FROM t WHERE b = $1 OR c = $1 AND d = $2"},
		{"SELECT ?2, ?", "SELECT $2, $3"},
		{"SELECT '?', \"a?\", ? -- what?\n, ?", "SELECT '?', \"a?\", $1 -- what?\n, $2"},
		{"SELECT 'it''s', ?", "SELECT 'it''s', $1"},
		{"SELECT id FROM deliveries INDEXED BY deliveries_finished\n\tWHERE x = ?", "SELECT id FROM deliveries\n\tWHERE x = $1"},
	} {
		if got := Rebind(tc.in); got != tc.want {
			t.Errorf("Rebind(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCheckURL(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"postgres://collab@db.example/forge", true},
		{"postgresql://u:p@127.0.0.1:5433/forge?sslmode=disable", true},
		{"postgres://u@h/forge?connect_timeout=x", false},
		{"mysql://u@h/forge", false},
		{"/srv/collab/collab.db", false},
	} {
		err := CheckURL(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("CheckURL(%q) = %v, want ok %v", tc.in, err, tc.ok)
		}
		if err != nil && (fault.KindOf(err) != fault.Usage || strings.Contains(err.Error(), "\n")) {
			t.Errorf("CheckURL(%q) = %q: want one line of usage", tc.in, err)
		}
	}
	if got := Redact("postgres://u:secret@h/db"); strings.Contains(got, "secret") {
		t.Errorf("Redact kept the password: %s", got)
	}
}

// cluster starts a throwaway PostgreSQL cluster for one test.
func cluster(t *testing.T) *pgtest.Cluster { return pgtest.ForTest(t) }

func openPG(t *testing.T, c *pgtest.Cluster) *DB {
	t.Helper()
	return openPGAs(t, c, "forge", "")
}

// openPGAs opens a new database name of c, with query added to its URL.
func openPGAs(t *testing.T, c *pgtest.Cluster, name, query string) *DB {
	t.Helper()
	ctx := context.Background()
	u, err := c.CreateDB(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	db, err := Open(ctx, u+query)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestPostgresRacers: 64 writers read a value and write it back plus one,
// and 64 claimants each insert a row where they read none. SERIALIZABLE
// and the retry in Write make both what one writer at a time would give:
// 64, and one winner whose racers all read the winner's row (no error).
func TestPostgresRacers(t *testing.T) {
	c := cluster(t)
	for _, tc := range []struct {
		writers string
		serial  bool
	}{{"", true}, {"serial", true}, {"serializable", false}} {
		t.Run("writers="+tc.writers, func(t *testing.T) {
			name, query := "racers", ""
			if tc.writers != "" {
				name, query = "racers_"+tc.writers, "&collab_writers="+tc.writers
			}
			db := openPGAs(t, c, name, query)
			if db.serial != tc.serial {
				t.Fatalf("serial writers = %v, want %v", db.serial, tc.serial)
			}
			retries := race(t, db)
			// One writer at a time never runs a write again; concurrent
			// SERIALIZABLE ones do (their retries are what makes them
			// right), however many that is on a given machine.
			if tc.serial && retries != 0 {
				t.Errorf("serial writers ran %d writes again, want none", retries)
			}
			t.Logf("writers %s: %d writes run again", tc.writers, retries)
		})
	}
	if _, err := Open(context.Background(), c.URL("racers")+"&collab_writers=sometimes"); err == nil || !strings.Contains(err.Error(), "serial or serializable") {
		t.Errorf("collab_writers=sometimes: %v, want a refusal", err)
	}
}

// race runs the racers on db and returns how many writes ran again.
func race(t *testing.T, db *DB) int {
	t.Helper()
	ctx := context.Background()
	var retries atomic.Int64
	// write is db.Write with a wait budget of its own, whose retries it
	// counts.
	write := func(fn func(tx Tx) error) error {
		bctx := WithWaitBudget(ctx)
		err := db.Write(bctx, fn)
		retries.Add(int64(LockUseOf(bctx).Retries))
		return err
	}
	if err := db.Write(ctx, func(tx Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO settings(key, value) VALUES ('n', '0')")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	const n = 64
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	won := make(chan int, n)
	for i := range n {
		wg.Add(2)
		go func() {
			defer wg.Done()
			errs <- write(func(tx Tx) error {
				var v int
				if err := tx.QueryRowContext(ctx, "SELECT CAST(value AS BIGINT) FROM settings WHERE key = 'n'").Scan(&v); err != nil {
					return err
				}
				_, err := tx.ExecContext(ctx, "UPDATE settings SET value = ? WHERE key = 'n'", strconv.Itoa(v+1))
				return err
			})
		}()
		go func() {
			defer wg.Done()
			var mine bool
			errs <- write(func(tx Tx) error {
				mine = false
				var holder string
				err := tx.QueryRowContext(ctx, "SELECT value FROM settings WHERE key = 'claim'").Scan(&holder)
				if !errors.Is(err, sql.ErrNoRows) {
					return err
				}
				mine = true
				_, err = tx.ExecContext(ctx, "INSERT INTO settings(key, value) VALUES ('claim', ?)", strconv.Itoa(i))
				return err
			})
			if mine {
				won <- i
			}
		}()
	}
	wg.Wait()
	close(errs)
	close(won)
	for err := range errs {
		if err != nil {
			t.Errorf("racer: %v", err)
		}
	}
	var v int
	if err := db.R().QueryRowContext(ctx, "SELECT CAST(value AS BIGINT) FROM settings WHERE key = 'n'").Scan(&v); err != nil || v != n {
		t.Errorf("counter = %d, %v; want %d", v, err, n)
	}
	if w := len(won); w != 1 {
		t.Errorf("%d claimants won, want 1", w)
	}
	return int(retries.Load())
}

// TestPostgresDown: with the server stopped, a write, and a read on the
// pool, are "try again later" (exit 6 / 503), and the write changes
// nothing; once it is back the same handle writes again.
func TestPostgresDown(t *testing.T) {
	c := cluster(t)
	db := openPG(t, c)
	ctx := context.Background()
	write := func(k string) error {
		return db.Write(ctx, func(tx Tx) error { return SetSetting(ctx, tx, k, "v") })
	}
	if err := write("a"); err != nil {
		t.Fatal(err)
	}
	if err := c.Down(ctx); err != nil {
		t.Fatal(err)
	}
	err := write("b")
	if fault.KindOf(err) != fault.Unavailable {
		t.Errorf("write with the server down = %v (%v), want unavailable", err, fault.KindOf(err))
	}
	// A read straight on the pool, as a token's lookup is, meets the
	// stopped server as well.
	if _, err := ReadSettings(ctx, db.R()); fault.KindOf(err) != fault.Unavailable {
		t.Errorf("read with the server down = %v (%v), want unavailable", err, fault.KindOf(err))
	}
	if err := c.Up(ctx); err != nil {
		t.Fatal(err)
	}
	if err := write("c"); err != nil {
		t.Fatalf("write once the server is back: %v", err)
	}
	s, err := ReadSettings(ctx, db.R())
	if err != nil || s["a"] != "v" || s["b"] != "" || s["c"] != "v" {
		t.Errorf("settings = %v, %v; want a and c only", s, err)
	}
}

// TestPostgresRowsMidRead: a listing whose connection the server ends
// after its first rows meets "try again later", as a query does.
func TestPostgresRowsMidRead(t *testing.T) {
	c := cluster(t)
	db := openPG(t, c)
	ctx := context.Background()
	const q = "SELECT g, repeat('x', 200) FROM generate_series(1, 200000) g"
	rows, err := db.R().QueryContext(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if !rows.Next() {
		t.Fatalf("no first row: %v", rows.Err())
	}
	var ended bool
	if err := db.R().QueryRowContext(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = $1", q).Scan(&ended); err != nil || !ended {
		t.Fatalf("end the listing's session: %v, %v", ended, err)
	}
	n := 1
	for rows.Next() {
		n++
	}
	if err := rows.Err(); fault.KindOf(err) != fault.Unavailable {
		t.Errorf("after %d rows: %v (%v), want unavailable", n, err, fault.KindOf(err))
	}
}

// TestPostgresOpenExisting: the opens for a forge's existing record
// refuse a database that holds none, and give it no schema; Open (init's)
// makes the record, which they then open.
func TestPostgresOpenExisting(t *testing.T) {
	c := cluster(t)
	ctx := context.Background()
	u, err := c.CreateDB(ctx, "empty")
	if err != nil {
		t.Fatal(err)
	}
	opens := map[string]func(context.Context, string) (*DB, error){"OpenExisting": OpenExisting, "OpenShort": OpenShort}
	for name, open := range opens {
		if db, err := open(ctx, u); err == nil || !strings.Contains(err.Error(), "no forge record") {
			t.Errorf("%s of an empty database = %v; want no forge record", name, err)
			if db != nil {
				db.Close()
			}
		}
	}
	db, err := OpenNoMigrate(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	if have, _, err := db.versionPG(ctx, db.R()); have != 0 || err != nil {
		t.Errorf("after the refused opens the database has schema version %d (%v); want none", have, err)
	}
	db.Close()
	db, err = Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	for name, open := range opens {
		db, err := open(ctx, u)
		if err != nil {
			t.Errorf("%s of the record init made: %v", name, err)
			continue
		}
		db.Close()
	}
}

// TestPostgresUnreachable: a URL whose server does not answer is refused
// in one line as "try again later", and nothing is made.
func TestPostgresUnreachable(t *testing.T) {
	_, err := Open(context.Background(), pgtest.BaseURL(t.TempDir(), "forge"))
	if fault.KindOf(err) != fault.Unavailable {
		t.Errorf("open = %v (%v), want unavailable", err, fault.KindOf(err))
	}
	if msg := fault.Public(err); strings.Contains(msg, "\n") {
		t.Errorf("message is not one line: %q", msg)
	}
}

// TestPostgresMigratesOnce: processes that open a new database together
// apply each step once and agree on the version.
func TestPostgresMigratesOnce(t *testing.T) {
	c := cluster(t)
	ctx := context.Background()
	u, err := c.CreateDB(ctx, "forge")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := Open(ctx, u)
			if err == nil {
				db.Close()
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("open: %v", err)
		}
	}
	db, err := OpenNoMigrate(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	v, err := db.Version(ctx)
	if err != nil || v < 1 {
		t.Errorf("version = %d, %v", v, err)
	}
	var rows int
	if err := db.R().QueryRowContext(ctx, "SELECT count(*) FROM schema_version").Scan(&rows); err != nil || rows != 1 {
		t.Errorf("schema_version rows = %d, %v; want 1", rows, err)
	}
}

// TestPostgresLead: of two processes (two handles on one record) calling
// Lead, one runs the work at a time; when the leader's session dies (its
// host gone), the lock is released and a leader runs the work again.
func TestPostgresLead(t *testing.T) {
	c := cluster(t)
	a := openPG(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b, err := Open(ctx, c.URL("forge"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var active, most atomic.Int32
	led := make(chan string, 16)
	var wg sync.WaitGroup
	for name, db := range map[string]*DB{"a": a, "b": b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// collab-web's poll: the margin between an old leader's
			// last ping and a new leader's start is one poll, which a
			// loaded machine could spend on a shorter one.
			db.Lead(ctx, "test", time.Second, func(ctx context.Context) {
				n := active.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				led <- name
				<-ctx.Done()
				active.Add(-1)
			})
		}()
	}
	wait := func() string {
		select {
		case who := <-led:
			return who
		case <-time.After(time.Minute):
			t.Fatal("no leader within a minute")
			return ""
		}
	}
	wait()
	var killed int
	if err := a.R().QueryRowContext(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND classid = 7368201`).Scan(&killed); err != nil || killed != 1 {
		t.Fatalf("terminate the leader's session: %d, %v", killed, err)
	}
	wait()
	cancel()
	wg.Wait()
	if m := most.Load(); m != 1 {
		t.Errorf("at most %d leaders at once, want 1", m)
	}
}

// TestPostgresLeadThroughBouncer: Lead holds through pgbouncer in
// transaction pooling, which a host's collab-web reaches the record
// through where the db setting names the host's pgbouncer: while one
// leads no other process gets the lock (a session's lock would have
// stayed on the pooled server connection, which pgbouncer hands to the
// next client), the leader's open transaction holds back no vacuum, and
// once it stops another leads.
func TestPostgresLeadThroughBouncer(t *testing.T) {
	c := cluster(t)
	direct := openPG(t, c)
	ctx := context.Background()
	bouncer, u, err := pgtest.StartBouncer(ctx, c.Sock(), "forge", 2)
	if err != nil {
		t.Fatal(err)
	}
	defer bouncer.Stop()
	open := func() *DB {
		db, err := Open(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	a, b := open(), open()
	actx, stopA := context.WithCancel(ctx)
	defer stopA()
	led := make(chan string, 4)
	aDone := make(chan struct{})
	go func() {
		defer close(aDone)
		a.Lead(actx, "test", time.Second, func(ctx context.Context) {
			led <- "a"
			<-ctx.Done()
		})
	}()
	select {
	case <-led:
	case <-time.After(time.Minute):
		t.Fatal("a did not lead within a minute")
	}
	if l, ok := b.tryLock(ctx, "test"); ok {
		l.release()
		t.Fatal("b took the lock while a led")
	}
	// Between its pings the leader's session holds no snapshot; a read
	// may meet a ping, so one read of several without one will do.
	var xmin sql.NullString
	for range 5 {
		if err := direct.R().QueryRowContext(ctx, `SELECT a.backend_xmin::text FROM pg_locks l
			JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE l.locktype = 'advisory' AND l.granted AND l.classid = 7368201`).Scan(&xmin); err != nil {
			t.Fatalf("the leader's lock: %v", err)
		}
		if !xmin.Valid {
			break
		}
	}
	if xmin.Valid {
		t.Errorf("the leader's session holds back vacuum: backend_xmin %s", xmin.String)
	}
	stopA()
	<-aDone
	bctx, stopB := context.WithCancel(ctx)
	defer stopB()
	go b.Lead(bctx, "test", time.Second, func(ctx context.Context) {
		led <- "b"
		<-ctx.Done()
	})
	select {
	case <-led:
	case <-time.After(time.Minute):
		t.Fatal("b did not lead within a minute of a stopping")
	}
}

// TestPostgresClock: the forge's clock on PostgreSQL is the server's, so
// that a host whose clock is a minute off still agrees with the others on
// when a lease expires.
func TestPostgresClock(t *testing.T) {
	c := cluster(t)
	openPG(t, c)
	ctx := context.Background()
	db := &DB{pg: true, hostClock: func() time.Time { return time.Now().Add(-time.Minute) }}
	p, err := Open(ctx, c.URL("forge"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	db.w, db.r = p.w, p.r
	if err := db.measureSkew(ctx); err != nil {
		t.Fatal(err)
	}
	var ms float64
	if err := db.R().QueryRowContext(ctx, "SELECT extract(epoch FROM clock_timestamp()) * 1000").Scan(&ms); err != nil {
		t.Fatal(err)
	}
	if d := db.Now().Sub(time.UnixMilli(int64(ms))).Abs(); d > 5*time.Second {
		t.Errorf("a host a minute behind reads the forge's clock %v off the server's", d)
	}
	if d := db.hostClock().Sub(time.UnixMilli(int64(ms))).Abs(); d < 55*time.Second {
		t.Errorf("the host's clock is only %v off: the test sets nothing off", d)
	}
}

// TestSchemasAgree: schema.postgres.sql gives every table of schema.sql
// (as migrated) the same columns, so that the domain packages' one SQL
// text reads and writes both; PostgreSQL may add rowid columns (SQLite's
// are implicit) and tables of its own (schema_version).
func TestSchemasAgree(t *testing.T) {
	ctx := context.Background()
	lite, err := Open(ctx, t.TempDir()+"/collab.db")
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	pg := openPG(t, cluster(t))
	columns := func(db *DB, tables, cols string) map[string]map[string]bool {
		t.Helper()
		have := map[string]map[string]bool{}
		var names []string
		if err := Each(ctx, db.R(), tables, nil, func(rows *sql.Rows) error {
			var n string
			err := rows.Scan(&n)
			names = append(names, n)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			have[n] = map[string]bool{}
			if err := Each(ctx, db.R(), cols, []any{n}, func(rows *sql.Rows) error {
				var c string
				err := rows.Scan(&c)
				have[n][c] = true
				return err
			}); err != nil {
				t.Fatal(err)
			}
		}
		return have
	}
	want := columns(lite, `SELECT name FROM sqlite_master WHERE type = 'table'
		AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'issues_fts%'`, `SELECT name FROM pragma_table_info(?)`)
	got := columns(pg, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`,
		`SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?`)
	if len(want) < 20 {
		t.Fatalf("SQLite's schema has %d tables", len(want))
	}
	for table, cols := range want {
		if got[table] == nil {
			t.Errorf("table %s: not in schema.postgres.sql", table)
			continue
		}
		for c := range cols {
			if !got[table][c] {
				t.Errorf("table %s: column %s not in schema.postgres.sql", table, c)
			}
		}
		for c := range got[table] {
			if !cols[c] && c != "rowid" {
				t.Errorf("table %s: column %s only in schema.postgres.sql", table, c)
			}
		}
	}
}

// TestPostgresWriterWaitBounded: a write that waits behind another for
// the writer lock gives up, busy, after its budget, though the
// connection's own lock_timeout is none (as behind pgbouncer, which drops
// the startup parameter); one that queued and then wrote reports its
// queueing as its wait (LockUseOf).
func TestPostgresWriterWaitBounded(t *testing.T) {
	c := cluster(t)
	db := openPGAs(t, c, "bounded", "&lock_timeout=0")
	ctx := context.Background()
	// hold starts a write that holds the writer lock until release is
	// called, which returns that write's error.
	hold := func() (release func() error) {
		held, let := make(chan struct{}), make(chan struct{})
		done := make(chan error, 1)
		go func() {
			done <- db.Write(ctx, func(tx Tx) error {
				close(held)
				<-let
				return nil
			})
		}()
		<-held
		return func() error { close(let); return <-done }
	}
	release := hold()
	start := time.Now()
	err := db.Write(ctx, func(tx Tx) error { return nil })
	waited := time.Since(start)
	if err := release(); err != nil {
		t.Fatalf("the holder's write: %v", err)
	}
	if fault.KindOf(err) != fault.Unavailable || !strings.Contains(err.Error(), "busy") {
		t.Fatalf("a write behind the holder: %v, want busy", err)
	}
	if waited < DefaultBusyTimeout-busySlack || waited > 3*DefaultBusyTimeout {
		t.Errorf("it gave up after %s, want its budget, %s", waited, DefaultBusyTimeout)
	}

	// A write that queued, then wrote, counts its queueing as its wait
	// (LOCK_WAIT_MS), as on SQLite, and the rest as held.
	release = hold()
	queued := WithWaitBudget(ctx)
	wrote := make(chan error, 1)
	go func() { wrote <- db.Write(queued, func(tx Tx) error { return nil }) }()
	for deadline := time.Now().Add(time.Minute); ; {
		var waiting int
		if err := db.R().QueryRowContext(ctx, `SELECT count(*) FROM pg_locks
			WHERE locktype = 'advisory' AND NOT granted AND classid = 7368201 AND objid = 2`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second writer never queued for the writer lock")
		}
		runtime.Gosched()
	}
	if err := errors.Join(release(), <-wrote); err != nil {
		t.Fatal(err)
	}
	if u := LockUseOf(queued); u.Writes != 1 || u.Wait <= 0 || u.Held <= 0 || u.Retries != 0 {
		t.Errorf("lock use of a write that queued: %+v, want one write that waited and held", u)
	}
}
