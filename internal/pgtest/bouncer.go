package pgtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Bouncer is a pgbouncer in transaction pooling in front of a cluster,
// as docs/scale.md has each host run one: a collab-hook process lives for
// one request, and without it each pays for a new server backend.
type Bouncer struct{ dir string }

// StartBouncer starts pgbouncer for database name of the cluster whose
// socket is in sock, with at most pool server connections to it, and
// returns the URL to give the forge. Stop stops it.
func StartBouncer(ctx context.Context, sock, name string, pool int) (*Bouncer, string, error) {
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		bin = "/usr/sbin/pgbouncer"
	}
	// Not in the work directory: the postgres user must reach it.
	dir, err := os.MkdirTemp("", "collab-pgbouncer-")
	if err != nil {
		return nil, "", err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, "", err
	}
	ini := fmt.Sprintf(`[databases]
%[1]s = host=%[2]s dbname=%[1]s user=postgres
[pgbouncer]
listen_addr =
unix_socket_dir = %[3]s
listen_port = 6432
auth_type = trust
auth_file = %[3]s/users.txt
pool_mode = transaction
max_client_conn = 1000
default_pool_size = %[4]d
; after a failed server login pgbouncer refuses every client for this long
; before it tries again (default 15 s; docs/operations.md)
server_login_retry = 1
; a client that set session state (pg_restore sets search_path) must not
; hand it to the next one: reset after every transaction (docs/operations.md)
server_reset_query_always = 1
; lock_timeout goes with the pool's sessions, not a client's (docs/operations.md)
ignore_startup_parameters = lock_timeout
logfile = %[3]s/pgbouncer.log
pidfile = %[3]s/pgbouncer.pid
`, name, sock, dir, pool)
	for f, body := range map[string]string{"pgbouncer.ini": ini, "users.txt": `"postgres" ""` + "\n"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(body), 0o644); err != nil {
			return nil, "", err
		}
	}
	cmd := exec.CommandContext(ctx, bin, "-d", filepath.Join(dir, "pgbouncer.ini"))
	if os.Geteuid() == 0 {
		// pgbouncer, as PostgreSQL, will not run as root.
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, "", err
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Chown(p, uid, gid)
		}); err != nil {
			return nil, "", err
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, "", fmt.Errorf("pgbouncer: %v\n%s", err, out)
	}
	b := &Bouncer{dir: dir}
	for deadline := time.Now().Add(time.Minute); ; {
		if _, err := os.Stat(filepath.Join(dir, ".s.PGSQL.6432")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			b.Stop()
			return nil, "", fmt.Errorf("pgbouncer made no socket in %s", dir)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return b, BaseURL(dir, name) + "&port=6432", nil
}

// Stop stops pgbouncer and removes its directory.
func (b *Bouncer) Stop() {
	defer os.RemoveAll(b.dir)
	pid, err := os.ReadFile(filepath.Join(b.dir, "pgbouncer.pid"))
	if err != nil {
		return
	}
	if n, err := strconv.Atoi(strings.TrimSpace(string(pid))); err == nil {
		_ = syscall.Kill(n, syscall.SIGTERM)
	}
}
