package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/collab-forge/collab/internal/fastpath"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/layout"
	"github.com/collab-forge/collab/internal/store"
)

// handOver runs collab-hook-pg (this program built with the PostgreSQL
// store) in this process's place, with the same arguments and
// environment, where the root's record is on PostgreSQL (or an argument
// names one: init --db URL) and this binary links no driver: the driver's start-up would cost every run on SQLite
// 2.0-2.5 ms of CPU (internal/store/postgres_off.go). ok is false where
// this binary serves the root itself; what it costs then is a lookup of
// COLLAB_DB and a failed open of ROOT/db.
func handOver(args []string) (code int, ok bool) {
	if store.PostgresBuilt() {
		return 0, false
	}
	root := forge.Root{Dir: fastpath.Root(args, os.LookupEnv)}
	if !store.IsURL(root.DBLocation()) && !slices.ContainsFunc(args[1:], namesPostgres) {
		return 0, false
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "collab: find own path: %v\n", err)
		return 1, true
	}
	pg := filepath.Join(filepath.Dir(self), layout.PostgresBinary)
	// args[0] stays: a hook git runs by its own path is told by it.
	err = syscall.Exec(pg, args, os.Environ())
	fmt.Fprintf(os.Stderr, "collab: the forge's record is on PostgreSQL, and %s (collab-hook built with it) cannot run: %v\n", pg, err)
	return 1, true
}

// namesPostgres: an argument that is a PostgreSQL URL, or --db=URL.
func namesPostgres(arg string) bool {
	return store.IsURL(strings.TrimPrefix(arg, "--db="))
}
