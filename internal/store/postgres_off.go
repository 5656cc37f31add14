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
// 12.71 -> 14.77 ms task-clock), which every push and verb would pay. make
// build links it into collab-web and collab-hook-pg, and collab-hook hands
// the runs of a forge whose record is on PostgreSQL to collab-hook-pg
// (cmd/collab-hook/handover.go).

var errNoPostgres = fault.New(fault.Usage, "this binary links no PostgreSQL driver: run collab-hook-pg, or collab-web, which make build builds with it")

func checkPostgresURL(string) error { return nil }

func openPostgres(context.Context, string, int, schemaMode) (*DB, error) { return nil, errNoPostgres }

func (db *DB) writePG(context.Context, time.Duration, func(*sql.Tx) error) error {
	return errNoPostgres
}

func (db *DB) readPG(context.Context, func(*sql.Tx) error) error { return errNoPostgres }

func (db *DB) versionPG(context.Context, Querier) (int, int, error) { return 0, 0, errNoPostgres }

func classifyPG(err error) error { return err }

func (db *DB) leadPG(context.Context, string, time.Duration, func(context.Context)) {}

// PostgresBuilt reports whether this binary links the PostgreSQL store.
func PostgresBuilt() bool { return false }
