package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"

	"github.com/collab-forge/collab/internal/fault"
)

// A backup of a PostgreSQL record is PostgreSQL's own: pg_dump, reading a
// snapshot that the backup exports while it holds every repository's refs
// lock, so that the dump and the refs are of one moment (internal/backup);
// a restore is pg_restore into an empty database. Both are the stock
// client tools (Debian: postgresql-client), found on PATH.

// Snapshot is a moment of a PostgreSQL record, held open (one REPEATABLE
// READ transaction) so that pg_dump --snapshot can read it too.
type Snapshot struct {
	// ID is what pg_export_snapshot returned.
	ID string
	tx *sql.Tx
}

// Q reads the snapshot.
func (s *Snapshot) Q() Querier { return s.tx }

// Close lets the moment go: whoever read it through ID has finished.
func (s *Snapshot) Close() error { return s.tx.Rollback() }

// ExportSnapshot takes a snapshot of the record: the rows committed now.
func (db *DB) ExportSnapshot(ctx context.Context) (*Snapshot, error) {
	if !db.pg {
		return nil, errors.New("export a snapshot: the record is not on PostgreSQL")
	}
	tx, err := db.r.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return nil, db.classify(fmt.Errorf("export a snapshot: %w", err))
	}
	s := &Snapshot{tx: tx}
	if err := tx.QueryRowContext(ctx, "SELECT pg_export_snapshot()").Scan(&s.ID); err != nil {
		tx.Rollback()
		return nil, db.classify(fmt.Errorf("export a snapshot: %w", err))
	}
	return s, nil
}

// Tables counts the tables in the record's schema: none in a database
// that a restore may fill.
func (db *DB) Tables(ctx context.Context) (int, error) {
	if !db.pg {
		return 0, errors.New("count tables: the record is not on PostgreSQL")
	}
	var n int
	err := db.r.QueryRowContext(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()").Scan(&n)
	if err != nil {
		return 0, db.classify(fmt.Errorf("count tables: %w", err))
	}
	return n, nil
}

// Dump writes the record at loc, as the snapshot id saw it, to file in
// pg_dump's custom format (without owners or grants: a restore makes its
// objects the restoring role's).
func Dump(ctx context.Context, loc, id, file string) error {
	return runClient(ctx, loc, "pg_dump", "--format=custom", "--no-owner", "--no-privileges",
		"--snapshot="+id, "--file="+file)
}

// LoadDump restores file, made by Dump, into the empty database at loc, in
// one transaction: a failed restore leaves the database empty.
func LoadDump(ctx context.Context, loc, file string) error {
	return runClient(ctx, loc, "pg_restore", "--single-transaction", "--exit-on-error",
		"--no-owner", "--no-privileges", file)
}

// runClient runs PostgreSQL's client tool name on the database at loc. The
// URL is given as libpq reads it: its password in PGPASSWORD (not on a
// command line that ps shows), and without the parameters only pgx knows.
func runClient(ctx context.Context, loc, name string, args ...string) error {
	if _, err := exec.LookPath(name); err != nil {
		return fault.New(fault.Usage, "%s is not installed (Debian: apt-get install postgresql-client)", name)
	}
	conn, password, err := libpqURL(loc)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, name, append(args, "--dbname="+conn)...)
	cmd.Env = os.Environ()
	if password != "" {
		cmd.Env = append(cmd.Env, "PGPASSWORD="+password)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		detail := strings.TrimSpace(stderr.String())
		return &fault.Error{Kind: fault.Internal, Msg: name + " failed: " + oneLine(detail),
			Err: fmt.Errorf("%s on %s: %w: %s", name, Redact(loc), err, detail)}
	}
	return nil
}

// libpqParams are the URL parameters libpq knows; pgx takes others
// (default_query_exec_mode, or a server setting such as lock_timeout),
// which libpq would refuse.
var libpqParams = map[string]bool{
	"host": true, "hostaddr": true, "port": true, "dbname": true, "user": true, "passfile": true,
	"channel_binding": true, "connect_timeout": true, "client_encoding": true, "options": true,
	"application_name": true, "fallback_application_name": true, "keepalives": true,
	"keepalives_idle": true, "keepalives_interval": true, "keepalives_count": true,
	"tcp_user_timeout": true, "sslmode": true, "sslcert": true, "sslkey": true,
	"sslpassword": true, "sslrootcert": true, "sslcrl": true, "sslcrldir": true, "sslsni": true,
	"requirepeer": true, "ssl_min_protocol_version": true, "ssl_max_protocol_version": true,
	"gssencmode": true, "krbsrvname": true, "gsslib": true, "service": true,
	"target_session_attrs": true, "load_balance_hosts": true, "require_auth": true,
}

// libpqURL is loc without its password and the parameters libpq does not
// know, and the password.
func libpqURL(loc string) (conn, password string, err error) {
	u, err := url.Parse(loc)
	if err != nil || !IsURL(loc) {
		return "", "", fault.New(fault.Usage, "bad database URL: want postgres://USER@HOST/DBNAME")
	}
	if u.User != nil {
		password, _ = u.User.Password()
		u.User = url.User(u.User.Username())
	}
	q := u.Query()
	for k := range q {
		if !libpqParams[k] {
			q.Del(k)
		}
	}
	u.RawQuery = q.Encode()
	return u.String(), password, nil
}

func oneLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
