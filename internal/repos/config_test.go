package repos

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestConnectivityCheck speaks git's push protocol to receive-pack in a
// repository with collab's configuration (Config) and sends packs that
// leave out an object the pushed commit needs: receive-pack must refuse
// each, whatever core.alternateRefsCommand lists (nothing: the check's
// known tips are its --all), and even where the missing parent is one of
// refs/collab's, which receive.hideRefs keeps out of --all. The complete
// pack is accepted.
func TestConnectivityCheck(t *testing.T) {
	w := t.TempDir()
	client := filepath.Join(w, "client")
	gitIn(t, w, "init", "-q", "-b", "main", client)
	commit := func(msg string) string {
		if err := os.WriteFile(filepath.Join(client, "f"), []byte(msg), 0o644); err != nil {
			t.Fatal(err)
		}
		gitIn(t, client, "add", "f")
		gitIn(t, client, "commit", "-q", "-m", msg)
		return strings.TrimSpace(gitIn(t, client, "rev-parse", "HEAD"))
	}
	base := commit("base")
	parent := commit("parent")
	tip := commit("tip")
	objects := func(rev string) []string { // the commit, its tree and blob
		return []string{rev, rev + "^{tree}", rev + ":f"}
	}
	for _, tc := range []struct {
		name     string
		revision bool     // the server has parent, under refs/collab/ only
		send     []string // what the pack holds (with base's objects on the server)
		ok       bool
	}{
		{"complete", false, append(objects(tip), objects(parent)...), true},
		{"no parent", false, objects(tip), false},
		{"no blob", false, append(objects(tip)[:2], objects(parent)...), false},
		{"parent hidden", true, objects(tip), true},
		{"no blob, parent hidden", true, objects(tip)[:2], false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bare := filepath.Join(t.TempDir(), "r.git")
			gitIn(t, w, "init", "-q", "--bare", "-b", "main", bare)
			for _, kv := range Config() {
				gitIn(t, bare, "config", kv[0], kv[1])
			}
			gitIn(t, client, "push", "-q", bare, base+":refs/heads/main")
			if tc.revision {
				gitIn(t, bare, "fetch", "-q", client, parent+":refs/collab/patches/ab/rev/"+parent)
			}
			report := pushPack(t, bare, client, base, tip, tc.send)
			if got := strings.Contains(report, "ok refs/heads/main"); got != tc.ok {
				t.Fatalf("accepted %v, want %v; receive-pack said:\n%s", got, tc.ok, report)
			}
			head := strings.TrimSpace(gitIn(t, bare, "rev-parse", "refs/heads/main"))
			if want := map[bool]string{true: tip, false: base}[tc.ok]; head != want {
				t.Fatalf("main is %s, want %s", head, want)
			}
		})
	}
}

// pushPack runs receive-pack in bare and asks it to move main from old to
// newOID with a pack of exactly the objects send (resolved in client),
// as a client that lies about what it sends would; it returns the status
// report.
func pushPack(t *testing.T, bare, client, old, newOID string, send []string) string {
	t.Helper()
	var list bytes.Buffer
	for _, rev := range send {
		fmt.Fprintln(&list, strings.TrimSpace(gitIn(t, client, "rev-parse", rev)))
	}
	pack := exec.Command("git", "pack-objects", "--stdout", "-q")
	pack.Dir, pack.Stdin = client, &list
	data, err := pack.Output()
	if err != nil {
		t.Fatalf("pack-objects: %v", err)
	}
	rp := exec.Command("git", "receive-pack", bare)
	in, err := rp.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := rp.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	rp.Stderr = &stderr
	if err := rp.Start(); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(outPipe)
	for { // the ref advertisement, up to its flush
		if line, ok := readPkt(t, out); !ok {
			break
		} else if line == "" {
			t.Fatal("receive-pack advertised nothing")
		}
	}
	cmd := fmt.Sprintf("%s %s refs/heads/main\x00report-status\n", old, newOID)
	fmt.Fprintf(in, "%04x%s0000", len(cmd)+4, cmd)
	if _, err := in.Write(data); err != nil {
		t.Fatal(err)
	}
	in.Close()
	var report strings.Builder
	for {
		line, ok := readPkt(t, out)
		if !ok {
			break
		}
		report.WriteString(line)
	}
	_, _ = io.Copy(io.Discard, out)
	if err := rp.Wait(); err != nil {
		t.Logf("receive-pack: %v: %s", err, stderr.String())
	}
	return report.String() + stderr.String()
}

// readPkt reads one pkt-line; false at a flush packet.
func readPkt(t *testing.T, r *bufio.Reader) (string, bool) {
	t.Helper()
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		t.Fatalf("read pkt-line: %v", err)
	}
	var n int
	if _, err := fmt.Sscanf(string(hdr[:]), "%04x", &n); err != nil {
		t.Fatalf("pkt-line length %q: %v", hdr, err)
	}
	if n == 0 {
		return "", false
	}
	buf := make([]byte, n-4)
	if _, err := io.ReadFull(r, buf); err != nil {
		t.Fatalf("read pkt-line: %v", err)
	}
	return string(buf), true
}

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@e")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
