package testscript

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/collab-forge/collab/internal/pgtest"
)

// onPostgres are the scenarios TestScriptsPostgres runs again with the
// forge's record on PostgreSQL: leases and the work queue, fencing, the
// gate, pushes and merges, the verbs and the API, webhooks.
var onPostgres = []string{
	"lease_race", "lease_next", "lease_sweep", "lease_merge", "fence_push", "fence_submit",
	"gate_api", "gate_submit", "push_new", "push_concurrent", "push_retry", "merge_kinds",
	"contract_ssh_verbs", "contract_api", "contract_ssh_push", "issue_verbs", "rate_limit",
	"review_threads", "webhook_cli", "webhook_repo",
}

// postgresOnly are the scenarios in postgres/ that only a record on
// PostgreSQL has: TestScriptsPostgres runs them over ssh, each given a
// second empty database, $PGSPARE.
var postgresOnly = []string{"backup_restore", "db_override", "two_hosts_keys"}

// TestScriptsPostgres runs onPostgres on a forge whose root was made with
// init --db: every collab-hook hands its run to collab-hook-pg, and
// collab-web keeps the record on the same database; then those of them
// in bothTransports over HTTP through collab-web.
func TestScriptsPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	ctx := context.Background()
	c := pgtest.ForTest(t)
	var n atomic.Int64
	db := func() (string, error) { return c.CreateDB(ctx, fmt.Sprintf("s%d", n.Add(1))) }
	run := func(t *testing.T, transport, dir string, names []string) {
		p := params(t, "")
		for _, name := range names {
			p.Files = append(p.Files, filepath.Join(dir, name+".txtar"))
		}
		p.Condition = transportCondition(transport)
		p.Setup = func(e *testscript.Env) error {
			url, err := db()
			if err != nil {
				return err
			}
			if err := setupDB(t, e, url); err != nil {
				return err
			}
			e.Setenv("TRANSPORT", transport)
			if dir == "postgres" {
				spare, err := db()
				e.Setenv("PGSPARE", spare)
				return err
			}
			return nil
		}
		testscript.Run(t, p)
	}
	t.Run("ssh", func(t *testing.T) { run(t, "ssh", "testdata", onPostgres) })
	t.Run("only", func(t *testing.T) { run(t, "ssh", "postgres", postgresOnly) })
	var http []string
	for _, name := range onPostgres {
		if slices.Contains(bothTransports, name) {
			http = append(http, name)
		}
	}
	t.Run("http", func(t *testing.T) { run(t, "http", "testdata", http) })
	t.Run("outage", func(t *testing.T) { runOutage(t, outageOnly) })
}

// outageOnly are the scenarios in postgres/ that stop the record's server
// (pg-stop, pg-start): each gets a cluster of its own.
var outageOnly = []string{"outage_sshd"}

// clusterKey is where an outage scenario's Env keeps its cluster.
type clusterKey struct{}

func runOutage(t *testing.T, names []string) {
	ctx := context.Background()
	p := params(t, "")
	for _, name := range names {
		p.Files = append(p.Files, filepath.Join("postgres", name+".txtar"))
	}
	p.Setup = func(e *testscript.Env) error {
		c, err := pgtest.Start(ctx)
		if err != nil {
			return err
		}
		e.Defer(func() { c.Stop(ctx) })
		e.Values[clusterKey{}] = c
		url, err := c.CreateDB(ctx, "forge")
		if err != nil {
			return err
		}
		e.Setenv("TRANSPORT", "ssh")
		return setupDB(t, e, url)
	}
	// pg-stop ends every session and stops the server; pg-start starts it
	// again, with the record as it was.
	updown := func(up bool) func(ts *testscript.TestScript, neg bool, args []string) {
		return func(ts *testscript.TestScript, neg bool, args []string) {
			if neg || len(args) != 0 {
				ts.Fatalf("usage: pg-stop | pg-start")
			}
			c := ts.Value(clusterKey{}).(*pgtest.Cluster)
			if up {
				ts.Check(c.Up(ctx))
			} else {
				ts.Check(c.Down(ctx))
			}
		}
	}
	p.Cmds["pg-stop"], p.Cmds["pg-start"] = updown(false), updown(true)
	testscript.Run(t, p)
}

// setupDB is setup with the record at url. The scenarios read the record
// as an operator would, with sqlite3 $ROOT/collab.db 'SQL': here a
// stand-in for sqlite3 runs the SQL on the record with psql, which prints
// rows as sqlite3 does (fields joined by |).
func setupDB(t *testing.T, e *testscript.Env, url string) error {
	work := e.WorkDir
	root := filepath.Join(work, "root")
	// setup's init makes the root on SQLite; init --db first puts it on
	// PostgreSQL, and setup's then changes nothing.
	out, err := exec.Command(filepath.Join(binDir, "collab-hook"), "--root", root, "init", "--db", url).CombinedOutput()
	if err != nil {
		return fmt.Errorf("collab-hook init --db: %v: %s", err, out)
	}
	if err := setup(t, e); err != nil {
		return err
	}
	shims := filepath.Join(work, "pgbin")
	if err := os.MkdirAll(shims, 0o755); err != nil {
		return err
	}
	sqlite3 := "#!/bin/sh\nprintf '%s\\n' \"$2\" | exec psql -X -A -t -q -v ON_ERROR_STOP=1 \"$PGURL\" -f -\n"
	if err := os.WriteFile(filepath.Join(shims, "sqlite3"), []byte(sqlite3), 0o755); err != nil {
		return err
	}
	e.Setenv("PGURL", url)
	e.Setenv("PATH", shims+string(os.PathListSeparator)+e.Getenv("PATH"))
	return nil
}
