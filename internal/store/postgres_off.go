//go:build !postgres

package store

import (
	"context"
	"database/sql"
	"time"

	"github.com/collab-forge/collab/internal/fault"
)

// Without the postgres build tag the binaries link no PostgreSQL driver:
// pgx's package inits and the larger binary cost every collab-hook start
// 2.0-2.5 ms of CPU (perf stat -r 300 of --version: 14.95 -> 17.24 and
// 12.71 -> 14.77 ms task-clock), which every push and verb pays. A forge
// whose record is on PostgreSQL runs binaries built with it (make build
// TAGS=postgres).

var errNoPostgres = fault.New(fault.Usage, "this collab was built without PostgreSQL: build it with the postgres tag (make build TAGS=postgres)")

func checkPostgresURL(string) error { return nil }

func openPostgres(context.Context, string, int, bool) (*DB, error) { return nil, errNoPostgres }

func (db *DB) writePG(context.Context, time.Duration, func(*sql.Tx) error) error {
	return errNoPostgres
}

func (db *DB) readPG(context.Context, func(*sql.Tx) error) error { return errNoPostgres }

func (db *DB) migratePG(context.Context) error { return errNoPostgres }

func (db *DB) versionPG(context.Context, Querier) (int, int, error) { return 0, 0, errNoPostgres }

func classifyPG(err error) error { return err }
