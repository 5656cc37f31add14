package testscript

// Script commands for the "try again later" scenarios (issue 13): a writer
// lock held by another process, a full disk, a read-only root, a long
// reader and the WAL.
//
//	runs [-n N] [-within DURATION] CMD ARGS…
//	    Runs N copies of CMD at once with the script's environment; each
//	    copy's stdout is followed by the line "exit CODE". With -within it
//	    fails when they did not all end within DURATION.
//	db-lock [-sqlite]
//	    Holds the forge's writer lock from this (another) process until
//	    db-unlock or the end of the script, as a stuck collab writer would:
//	    the flock queue and SQLite's write lock. With -sqlite only SQLite's
//	    lock, as a program that is not collab would.
//	db-unlock
//	hold-reader / release-reader
//	    Opens a read transaction on the database and keeps its snapshot
//	    (a long reader), until release-reader or the end of the script.
//	wal-size [-min BYTES]
//	    Prints "wal N bytes"; with -min fails when the WAL is smaller.
//	wal-shrinks BYTES
//	    Waits (up to a minute) until the WAL is at most BYTES long.
//	tmpfs-root SIZE
//	    Mounts a tmpfs of SIZE (e.g. 8m) at $WORK/mnt and makes a fresh
//	    forge root there ($ROOT and $COLLAB_ROOT point at it); unmounted at
//	    the end. Scripts check [tmpfs] first.
//	fill-disk
//	    Fills the tmpfs until it has no byte left ($WORK/mnt/fill).
//	remount ro|rw
//	    Remounts the tmpfs read-only or read-write.
//	wait-file PATH
//	    Waits (up to a minute) until PATH exists.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	_ "modernc.org/sqlite" // the driver

	"github.com/collab-forge/collab/internal/flock"
	"github.com/collab-forge/collab/internal/pgtest"
)

// robustState is what one script's commands hold between lines.
type robustState struct {
	unlock  func()
	release func()
}

// robustStates keys each running script's state by its TestScript.
type robustStates struct {
	mu sync.Mutex
	m  map[*testscript.TestScript]*robustState
}

func (s *robustStates) of(ts *testscript.TestScript) *robustState {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.m[ts]
	if !ok {
		st = &robustState{}
		s.m[ts] = st
		ts.Defer(func() {
			if st.unlock != nil {
				st.unlock()
			}
			if st.release != nil {
				st.release()
			}
			s.mu.Lock()
			delete(s.m, ts)
			s.mu.Unlock()
		})
	}
	return st
}

func robustCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	states := &robustStates{m: map[*testscript.TestScript]*robustState{}}
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"runs":           cmdRuns,
		"db-lock":        func(ts *testscript.TestScript, neg bool, args []string) { cmdDBLock(ts, neg, args, states.of(ts)) },
		"db-unlock":      func(ts *testscript.TestScript, neg bool, args []string) { cmdDBUnlock(ts, states.of(ts)) },
		"hold-reader":    func(ts *testscript.TestScript, neg bool, args []string) { cmdHoldReader(ts, states.of(ts)) },
		"release-reader": func(ts *testscript.TestScript, neg bool, args []string) { cmdReleaseReader(ts, states.of(ts)) },
		"wal-size":       cmdWALSize,
		"wal-shrinks":    cmdWALShrinks,
		"tmpfs-root":     cmdTmpfsRoot,
		"fill-disk":      cmdFillDisk,
		"remount":        cmdRemount,
		"wait-file":      cmdWaitFile,
	}
}

// canMountTmpfs reports whether this process may mount a tmpfs (root, and
// not in a container that forbids it): the [tmpfs] condition.
func canMountTmpfs() bool {
	if os.Geteuid() != 0 {
		return false
	}
	dir, err := os.MkdirTemp("", "collab-tmpfs-")
	if err != nil {
		return false
	}
	defer os.Remove(dir)
	if err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir).Run(); err != nil {
		return false
	}
	return exec.Command("umount", dir).Run() == nil
}

func cmdRuns(ts *testscript.TestScript, neg bool, args []string) {
	n, within := 1, time.Duration(0)
	for len(args) >= 2 && (args[0] == "-n" || args[0] == "-within") {
		var err error
		if args[0] == "-n" {
			n, err = strconv.Atoi(args[1])
		} else {
			within, err = time.ParseDuration(args[1])
		}
		ts.Check(err)
		args = args[2:]
	}
	if neg || len(args) == 0 || n < 1 {
		ts.Fatalf("usage: runs [-n N] [-within DURATION] CMD ARGS…")
	}
	const script = `n=$1; shift; i=0
while [ "$i" -lt "$n" ]; do ( "$@"; echo "exit $?" ) & i=$((i+1)); done
wait`
	start := time.Now()
	err := ts.Exec("sh", append([]string{"-c", script, "sh", strconv.Itoa(n)}, args...)...)
	took := time.Since(start)
	ts.Check(err)
	ts.Logf("%d runs of %s ended within %s", n, args[0], took.Round(time.Millisecond))
	if within > 0 && took > within {
		ts.Fatalf("%d runs of %s took %s, want at most %s", n, args[0], took.Round(time.Millisecond), within)
	}
}

func dbPath(ts *testscript.TestScript) string { return filepath.Join(ts.Getenv("ROOT"), "collab.db") }

func cmdDBLock(ts *testscript.TestScript, neg bool, args []string, st *robustState) {
	sqliteOnly := len(args) == 1 && args[0] == "-sqlite"
	if neg || (len(args) > 0 && !sqliteOnly) || st.unlock != nil {
		ts.Fatalf("usage: db-lock [-sqlite] (once, until db-unlock)")
	}
	ctx := context.Background()
	var unlockFlock func()
	if !sqliteOnly {
		u, err := flock.Lock(ctx, dbPath(ts)+".lock", 0o640)
		ts.Check(err)
		unlockFlock = u
	}
	db, err := sql.Open("sqlite", "file:"+dbPath(ts))
	ts.Check(err)
	conn, err := db.Conn(ctx)
	ts.Check(err)
	_, err = conn.ExecContext(ctx, "BEGIN IMMEDIATE")
	ts.Check(err)
	st.unlock = func() {
		_, _ = conn.ExecContext(ctx, "ROLLBACK")
		conn.Close()
		db.Close()
		if unlockFlock != nil {
			unlockFlock()
		}
	}
}

func cmdDBUnlock(ts *testscript.TestScript, st *robustState) {
	if st.unlock == nil {
		ts.Fatalf("db-unlock: no db-lock held")
	}
	st.unlock()
	st.unlock = nil
}

func cmdHoldReader(ts *testscript.TestScript, st *robustState) {
	if st.release != nil {
		ts.Fatalf("hold-reader: already holding")
	}
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+dbPath(ts))
	ts.Check(err)
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	ts.Check(err)
	var n int
	ts.Check(tx.QueryRowContext(ctx, "SELECT count(*) FROM issues").Scan(&n))
	st.release = func() {
		_ = tx.Rollback()
		db.Close()
	}
}

func cmdReleaseReader(ts *testscript.TestScript, st *robustState) {
	if st.release == nil {
		ts.Fatalf("release-reader: no hold-reader")
	}
	st.release()
	st.release = nil
}

func walSize(ts *testscript.TestScript) int64 {
	fi, err := os.Stat(dbPath(ts) + "-wal")
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	ts.Check(err)
	return fi.Size()
}

func cmdWALSize(ts *testscript.TestScript, neg bool, args []string) {
	size := walSize(ts)
	fmt.Fprintf(ts.Stdout(), "wal %d bytes\n", size)
	ts.Logf("WAL: %d bytes (%.1f MB)", size, float64(size)/1e6)
	if len(args) == 2 && args[0] == "-min" {
		min, err := strconv.ParseInt(args[1], 10, 64)
		ts.Check(err)
		if (size < min) != neg {
			ts.Fatalf("WAL %d bytes, want at least %d", size, min)
		}
	}
}

func cmdWALShrinks(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: wal-shrinks BYTES")
	}
	limit, err := strconv.ParseInt(args[0], 10, 64)
	ts.Check(err)
	start := time.Now()
	deadline := start.Add(time.Minute)
	for {
		size := walSize(ts)
		if size <= limit {
			ts.Logf("WAL down to %d bytes after %s", size, time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("WAL still %d bytes after a minute, want at most %d", size, limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func mountDir(ts *testscript.TestScript) string { return filepath.Join(ts.Getenv("WORK"), "mnt") }

func cmdTmpfsRoot(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: tmpfs-root SIZE")
	}
	dir := mountDir(ts)
	ts.Check(os.MkdirAll(dir, 0o755))
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+args[0], "tmpfs", dir).CombinedOutput(); err != nil {
		ts.Fatalf("mount tmpfs: %v: %s", err, out)
	}
	ts.Defer(func() {
		// Lazily: a process of the script may still hold a file there.
		_ = exec.Command("umount", "-l", dir).Run()
	})
	root := filepath.Join(dir, "root")
	ts.Setenv("ROOT", root)
	ts.Setenv("COLLAB_ROOT", root)
	hook(ts, "init", "--url", "http://forge.test")
}

func cmdFillDisk(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: fill-disk")
	}
	f, err := os.Create(filepath.Join(mountDir(ts), "fill"))
	ts.Check(err)
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		_, err := f.Write(buf)
		if errors.Is(err, syscall.ENOSPC) {
			break
		}
		ts.Check(err)
	}
	// Whatever is left is smaller than a chunk: take it byte by byte's
	// worth of pages too.
	for _, err := f.Write(buf[:4096]); err == nil; _, err = f.Write(buf[:4096]) {
	}
	for _, err := f.Write(buf[:1]); err == nil; _, err = f.Write(buf[:1]) {
	}
	var st syscall.Statfs_t
	ts.Check(syscall.Statfs(mountDir(ts), &st))
	ts.Logf("tmpfs full: %d blocks free", st.Bavail)
}

func cmdRemount(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 || (args[0] != "ro" && args[0] != "rw") {
		ts.Fatalf("usage: remount ro|rw")
	}
	if out, err := exec.Command("mount", "-o", "remount,"+args[0], mountDir(ts)).CombinedOutput(); err != nil {
		ts.Fatalf("remount %s: %v: %s", args[0], err, out)
	}
}

func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: wait-file PATH")
	}
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(ts.MkAbs(args[0])); err == nil {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%s did not appear within a minute", args[0])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestOperationsDoc runs the command blocks of docs/operations.md as
// written, in order, against a fresh forge: only the two directories they
// name are moved under a temporary directory, and ssh reaches the forge
// through serve as sshd would (joining its words as ssh does).
func TestOperationsDoc(t *testing.T) {
	doc, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	rest := string(doc)
	for {
		_, after, ok := strings.Cut(rest, "```sh\n")
		if !ok {
			break
		}
		block, after2, ok := strings.Cut(after, "```")
		if !ok {
			t.Fatal("unterminated ```sh block")
		}
		blocks = append(blocks, block)
		rest = after2
	}
	if len(blocks) < 4 {
		t.Fatalf("found %d sh blocks in docs/operations.md", len(blocks))
	}
	tmp := t.TempDir()
	root := filepath.Join(tmp, "root")
	bin := filepath.Join(tmp, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	fakeSSH := "#!/bin/sh\nshift\nSSH_ORIGINAL_COMMAND=\"$*\" exec collab-hook serve --as alice\n"
	if err := os.WriteFile(filepath.Join(bin, "ssh"), []byte(fakeSSH), 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "COLLAB_ROOT="+root, "PATH="+bin+":"+binDir+":"+os.Getenv("PATH"))
	sh := func(script string) string {
		t.Helper()
		cmd := exec.Command("bash", "-euc", script)
		cmd.Dir, cmd.Env = tmp, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s\n---\n%s", err, script, out)
		}
		return string(out)
	}
	sh("collab-hook init && collab-hook repo create demo && collab-hook user add alice && collab-hook grant alice demo write")
	// The section on PostgreSQL moves the record into a throwaway
	// cluster, and restores its backup into a second database there.
	cluster := pgtest.ForTest(t)
	pgURL, err := cluster.CreateDB(context.Background(), "collab")
	if err != nil {
		t.Fatal(err)
	}
	pgURL2, err := cluster.CreateDB(context.Background(), "collab2")
	if err != nil {
		t.Fatal(err)
	}
	script := strings.NewReplacer("/var/backups/collab", filepath.Join(tmp, "backups"), "/srv/collab-restored", filepath.Join(tmp, "restored"),
		"postgres://collab@db.example/collab", "'"+pgURL+"'", "postgres://collab@db2.example/collab", "'"+pgURL2+"'").
		Replace(strings.Join(blocks, "\n"))
	out := sh(script)
	for _, want := range []string{"backup: database and refs of 1 repositories", "restore: ", "fsck: 0 problems found", "Cloning into .demo.", "issue [0-9a-f]{40} filed",
		"moved [0-9]+ rows of [0-9]+ tables to postgres://", "(?s)moved .*fsck: 0 problems found",
		"(?s)pg_dump wrote the snapshot.*restored-pg made from the backup.*fsck: 0 problems found"} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("output of docs/operations.md's commands lacks %q:\n%s", want, out)
		}
	}
}
