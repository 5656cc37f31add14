package journal

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// patience bounds every wait in these tests (for a datagram, for journald
// to start or to show an entry): generous for a loaded machine, and only
// spent when something is broken.
const patience = 2 * time.Minute

// listen opens a unixgram socket in a short temporary directory (socket
// paths are limited to 108 bytes, and t.TempDir() can be long).
func listen(t *testing.T) (*net.UnixConn, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "jt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "s")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, path
}

// Receive reads one entry the way journald does, including entries passed
// as a memfd. It returns each field's values.
func Receive(t *testing.T, c *net.UnixConn) map[string][]string {
	t.Helper()
	buf := make([]byte, 1<<20)
	oob := make([]byte, 256)
	_ = c.SetReadDeadline(time.Now().Add(patience))
	n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		t.Fatal(err)
	}
	data := buf[:n]
	if oobn > 0 {
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil {
			t.Fatal(err)
		}
		fds, err := unix.ParseUnixRights(&msgs[0])
		if err != nil {
			t.Fatal(err)
		}
		f := os.NewFile(uintptr(fds[0]), "memfd")
		defer f.Close()
		if _, err := f.Seek(0, 0); err != nil {
			t.Fatal(err)
		}
		if data, err = io.ReadAll(f); err != nil {
			t.Fatal(err)
		}
	}
	return Decode(t, data)
}

// Decode parses the native protocol.
func Decode(t *testing.T, b []byte) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for len(b) > 0 {
		nl := bytes.IndexByte(b, '\n')
		if nl < 0 {
			t.Fatalf("unterminated line %q", b)
		}
		line := b[:nl]
		if eq := bytes.IndexByte(line, '='); eq >= 0 {
			out[string(line[:eq])] = append(out[string(line[:eq])], string(line[eq+1:]))
			b = b[nl+1:]
			continue
		}
		name := string(line)
		b = b[nl+1:]
		if len(b) < 8 {
			t.Fatalf("short binary field %s", name)
		}
		size := binary.LittleEndian.Uint64(b)
		b = b[8:]
		if uint64(len(b)) < size+1 || b[size] != '\n' {
			t.Fatalf("bad binary field %s", name)
		}
		out[name] = append(out[name], string(b[:size]))
		b = b[size+1:]
	}
	return out
}

func one(t *testing.T, e map[string][]string, name string) string {
	t.Helper()
	if len(e[name]) != 1 {
		t.Fatalf("field %s = %q, want exactly one value (entry %v)", name, e[name], e)
	}
	return e[name][0]
}

func TestNativeFields(t *testing.T) {
	c, path := listen(t)
	t.Setenv(SocketEnv, path)
	log, closeLog := Open(t.TempDir())
	defer closeLog()
	log = log.With("PRINCIPAL", "alice", "REPO", "demo.git")
	log.Warn("pre-receive", "REF", "refs/heads/main", "OLD_oid", "0000", "new oid", "abcd",
		"error", "two\nlines", "MESSAGE", "ignored", slog.Group("http", "status", 500),
		"DURATION_MS", 12, "took", 1500*time.Millisecond)
	e := Receive(t, c)
	for name, want := range map[string]string{
		"SYSLOG_IDENTIFIER": "collab-hook",
		"MESSAGE":           "pre-receive",
		"PRIORITY":          "4",
		"PRINCIPAL":         "alice",
		"REPO":              "demo.git",
		"REF":               "refs/heads/main",
		"OLD_OID":           "0000",
		"NEW_OID":           "abcd",
		"ERROR":             "two\nlines",
		"HTTP_STATUS":       "500",
		"DURATION_MS":       "12",
		"TOOK":              "1500",
	} {
		if got := one(t, e, name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	log.Debug("dropped")
	log.Error("second")
	if got := one(t, Receive(t, c), "PRIORITY"); got != "3" {
		t.Errorf("error PRIORITY = %s", got)
	}
}

// An entry too big for one datagram travels as a sealed memfd.
func TestNativeLargeEntry(t *testing.T) {
	c, path := listen(t)
	h, err := Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	big := strings.Repeat("x", 4<<20)
	slog.New(h).Info("big", "BODY", big)
	e := Receive(t, c)
	if got := one(t, e, "BODY"); got != big {
		t.Errorf("BODY has %d bytes, want %d", len(got), len(big))
	}
}

func TestFieldName(t *testing.T) {
	for in, want := range map[string]string{
		"REPO": "REPO", "old_oid": "OLD_OID", "a-b.c": "A_B_C", "_PID": "PID", "9x": "X",
		"": "FIELD", strings.Repeat("a", 70): strings.Repeat("A", 64),
	} {
		if got := FieldName(nil, in); got != want {
			t.Errorf("FieldName(%q) = %q, want %q", in, got, want)
		}
	}
}

// Without a socket, entries go to ROOT/log/collab-hook.log as JSON lines
// with the journal's field names.
func TestFallbackFile(t *testing.T) {
	root := t.TempDir()
	t.Setenv(SocketEnv, filepath.Join(root, "no-such-socket"))
	log, closeLog := Open(root)
	log.With("PRINCIPAL", "bob").Info("post-receive", "REPO", "org/x.git", "outcome", "ok", "DURATION_MS", 3)
	log.Error("failed", "error", "boom")
	if err := closeLog(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, "log", LogFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var entries []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		entries = append(entries, m)
	}
	if len(entries) != 2 {
		t.Fatalf("%d entries, want 2", len(entries))
	}
	e := entries[0]
	for k, want := range map[string]any{
		"SYSLOG_IDENTIFIER": "collab-hook", "MESSAGE": "post-receive", "PRIORITY": "6",
		"PRINCIPAL": "bob", "REPO": "org/x.git", "OUTCOME": "ok", "DURATION_MS": 3.0,
	} {
		if e[k] != want {
			t.Errorf("%s = %v, want %v (entry %v)", k, e[k], want, e)
		}
	}
	if _, err := time.Parse(time.RFC3339Nano, e["TIMESTAMP"].(string)); err != nil {
		t.Errorf("TIMESTAMP: %v", err)
	}
	if entries[1]["PRIORITY"] != "3" || entries[1]["ERROR"] != "boom" {
		t.Errorf("second entry %v", entries[1])
	}
}

// A root whose log directory cannot be made drops entries silently.
func TestFallbackUnwritable(t *testing.T) {
	root := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(root, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(SocketEnv, "/nonexistent/socket")
	log, closeLog := Open(root)
	log.Info("nowhere")
	if err := closeLog(); err != nil && !errors.Is(err, os.ErrClosed) {
		t.Fatal(err)
	}
}

// TestRealJournald sends to a real systemd-journald, started by hand in its
// own namespace, and reads the entries back with journalctl: the plain,
// the length-prefixed (newline) and the memfd (oversized) forms.
func TestRealJournald(t *testing.T) {
	const journald = "/lib/systemd/systemd-journald"
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if _, err := os.Stat(journald); err != nil {
		t.Skip("no systemd-journald")
	}
	if _, err := exec.LookPath("journalctl"); err != nil {
		t.Skip("no journalctl")
	}
	ns := fmt.Sprintf("collabtest%d", os.Getpid())
	cmd := exec.Command(journald, ns)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		os.RemoveAll("/run/systemd/journal." + ns)
		for _, d := range []string{"/var/log/journal", "/run/log/journal"} {
			matches, _ := filepath.Glob(filepath.Join(d, "*."+ns))
			for _, m := range matches {
				os.RemoveAll(m)
			}
		}
	})
	socket := "/run/systemd/journal." + ns + "/socket"
	deadline := time.Now().Add(patience)
	for {
		if fi, err := os.Stat(socket); err == nil && fi.Mode()&os.ModeSocket != 0 {
			break
		}
		select {
		case <-exited:
			t.Fatalf("journald exited before making its socket: %v\n%s", cmd.ProcessState, out.String())
		case <-time.After(20 * time.Millisecond): // poll
		}
		if time.Now().After(deadline) {
			t.Fatalf("journald made no socket in %v", patience)
		}
	}
	log, closeLog := OpenAt(t.TempDir(), socket)
	big := strings.Repeat("y", 3<<20)
	log.Info("push", "PRINCIPAL", "alice", "REPO", "demo.git", "REF", "refs/heads/main", "OUTCOME", "ok", "NOTE", "two\nlines")
	log.Warn("big", "REPO", "big.git", "BODY", big)
	closeLog()

	// journald files an entry soon after it arrives, not at once: poll.
	var entries []map[string]any
	for deadline := time.Now().Add(patience); len(entries) < 2 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond) // poll
		out, err := exec.Command("journalctl", "--namespace="+ns, "--all", "-o", "json", "--output-fields=MESSAGE,PRIORITY,PRINCIPAL,REPO,REF,OUTCOME,NOTE,BODY",
			"SYSLOG_IDENTIFIER="+Identifier).Output()
		if err != nil {
			t.Fatalf("journalctl: %v", err)
		}
		entries = nil
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if l == "" {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("journalctl line %.80q: %v", l, err)
			}
			entries = append(entries, m)
		}
	}
	if len(entries) != 2 {
		t.Fatalf("journal holds %d entries, want 2", len(entries))
	}
	e := entries[0]
	for k, want := range map[string]string{"MESSAGE": "push", "PRIORITY": "6", "PRINCIPAL": "alice", "REPO": "demo.git",
		"REF": "refs/heads/main", "OUTCOME": "ok", "NOTE": "two\nlines"} {
		if e[k] != want {
			t.Errorf("%s = %v, want %q", k, e[k], want)
		}
	}
	if e := entries[1]; e["MESSAGE"] != "big" || e["REPO"] != "big.git" || e["PRIORITY"] != "4" || e["BODY"] != big {
		body, _ := e["BODY"].(string)
		t.Errorf("big entry: MESSAGE %v REPO %v PRIORITY %v, BODY of %d bytes", e["MESSAGE"], e["REPO"], e["PRIORITY"], len(body))
	}
}
