// Package pgtest runs a throwaway PostgreSQL cluster for tests: Debian's
// postgresql binaries, a data directory and socket in a temporary
// directory, trust authentication, no TCP port (RECIPES.md). PostgreSQL
// refuses to run as root, so under root the cluster runs as the postgres
// user (Debian's package makes it). StartBouncer puts a pgbouncer in
// transaction pooling in front of it, as each forge host runs one.
package pgtest

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver
)

// EnvStore selects the store the store-aware tests run on: "postgres" runs
// them on a cluster Main starts; anything else on SQLite.
const EnvStore = "COLLAB_TEST_STORE"

// envURL carries the cluster's base URL from Main to the tests.
const envURL = "COLLAB_TEST_PG"

// Cluster is a running throwaway cluster.
type Cluster struct {
	dir  string // data directory's parent: data/, sock/, log
	bin  string
	cred *syscall.Credential
}

// Bin is the directory of the newest installed PostgreSQL's binaries.
func Bin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("no PostgreSQL server installed (Debian: apt-get install postgresql; scripts/deps.sh does)")
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// Start makes and starts a cluster under a new temporary directory.
func Start(ctx context.Context) (*Cluster, error) {
	bin, err := Bin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "collab-pg-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("PostgreSQL will not run as root, and there is no postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chmod(dir, 0o755); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	for _, d := range []string{"data", "sock"} {
		p := filepath.Join(dir, d)
		if err := os.Mkdir(p, 0o700); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		if c.cred != nil {
			if err := os.Chown(p, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
				os.RemoveAll(dir)
				return nil, err
			}
		}
	}
	if c.cred != nil {
		f, err := os.OpenFile(filepath.Join(dir, "log"), os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			f.Close()
			err = os.Chown(filepath.Join(dir, "log"), int(c.cred.Uid), int(c.cred.Gid))
		}
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if err := c.run(ctx, "initdb", "-D", c.data(), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale", "C"); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := c.Up(ctx); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return c, nil
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }

// Sock is the directory of the cluster's Unix socket.
func (c *Cluster) Sock() string { return filepath.Join(c.dir, "sock") }

// Up starts the cluster's server (again, after Down).
func (c *Cluster) Up(ctx context.Context) error {
	// fsync off: a test cluster is thrown away, and the suite's writes
	// would otherwise wait for the disk.
	opts := "-c listen_addresses='' -k " + c.Sock() + " -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
	return c.run(ctx, "pg_ctl", "-D", c.data(), "-o", opts, "-l", filepath.Join(c.dir, "log"), "-w", "-t", "120", "start")
}

// Down stops the server, ending its sessions (the data stays: with
// synchronous_commit off, an immediate stop could lose the last commits).
func (c *Cluster) Down(ctx context.Context) error {
	return c.run(ctx, "pg_ctl", "-D", c.data(), "-m", "fast", "-w", "stop")
}

// Stop stops the server at once and removes the cluster.
func (c *Cluster) Stop(ctx context.Context) error {
	err := c.run(ctx, "pg_ctl", "-D", c.data(), "-m", "immediate", "-w", "stop")
	return errors.Join(err, os.RemoveAll(c.dir))
}

func (c *Cluster) run(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, name), args...)
	cmd.Dir = c.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w\n%s", name, err, out.Bytes())
	}
	return nil
}

// URL is the URL of database name in the cluster.
func (c *Cluster) URL(name string) string {
	return BaseURL(c.Sock(), name)
}

// BaseURL is the URL of database name on the server whose socket is in
// sock.
func BaseURL(sock, name string) string {
	return "postgres://postgres@/" + name + "?host=" + url.QueryEscape(sock)
}

// CreateDB makes an empty database and returns its URL.
func (c *Cluster) CreateDB(ctx context.Context, name string) (string, error) {
	if err := c.run(ctx, "createdb", "-h", c.Sock(), "-U", "postgres", name); err != nil {
		return "", err
	}
	return c.URL(name), nil
}

// Main runs a package's tests, on a cluster of their own when EnvStore is
// "postgres": func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }.
func Main(m *testing.M) int {
	if os.Getenv(EnvStore) != "postgres" {
		return m.Run()
	}
	ctx := context.Background()
	c, err := Start(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		return 1
	}
	os.Setenv(envURL, c.Sock())
	code := m.Run()
	if err := c.Stop(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
	}
	return code
}

// DB is a new empty database's URL on the cluster Main started, or "" when
// the tests run on SQLite.
func DB(t testing.TB) string {
	t.Helper()
	sock := os.Getenv(envURL)
	if sock == "" {
		return ""
	}
	name := fmt.Sprintf("t_%016x", rand.Uint64())
	admin, err := sql.Open("pgx", BaseURL(sock, "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	return BaseURL(sock, name)
}

// ForTest starts a cluster for t, stopped when t ends. Without
// PostgreSQL's binaries t is skipped (make test installs them:
// scripts/deps.sh).
func ForTest(t testing.TB) *Cluster {
	t.Helper()
	if _, err := Bin(); err != nil {
		t.Skip(err)
	}
	ctx := context.Background()
	c, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop(ctx) })
	return c
}
