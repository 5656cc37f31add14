package repos

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/pktline"
)

// TestConnectivityCheck speaks git's push protocol to receive-pack in a
// repository with collab's configuration (Config, whose
// core.alternateRefsCommand lists no known tips) and sends packs that
// leave out an object the pushed commit needs: each is refused and main
// stays. A pack that leaves out only a parent the repository holds under
// refs/collab/ (hidden from --all) is complete, and accepted, as is the
// whole pack. The same holds with the objects in ObjectStore, where git
// lists no alternate refs at all.
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
		for _, relocated := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/relocated=%v", tc.name, relocated), func(t *testing.T) {
				bare := configured(t, w, relocated)
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
}

// configured makes a bare repository with Config, its objects relocated
// to ObjectStore or not.
func configured(t *testing.T, w string, relocated bool) string {
	t.Helper()
	bare := filepath.Join(t.TempDir(), "r.git")
	gitIn(t, w, "init", "-q", "--bare", "-b", "main", bare)
	for _, kv := range Config() {
		gitIn(t, bare, "config", kv[0], kv[1])
	}
	if relocated {
		mustRelocate(t, bare)
	}
	return bare
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
	out, err := rp.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	rp.Stderr = &stderr
	if err := rp.Start(); err != nil {
		t.Fatal(err)
	}
	r := pktline.NewReader(out)
	if adv, err := r.ReadSection(); err != nil || len(adv) == 0 {
		t.Fatalf("ref advertisement: %q, %v", adv, err)
	}
	w := pktline.NewWriter(in)
	if err := w.Line(fmt.Sprintf("%s %s refs/heads/main\x00report-status", old, newOID)); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Write(data); err != nil {
		t.Fatal(err)
	}
	in.Close()
	var report strings.Builder
	lines, err := r.ReadSection()
	for _, l := range lines {
		report.Write(l)
		report.WriteByte('\n')
	}
	_, _ = io.Copy(io.Discard, out)
	if werr := rp.Wait(); werr != nil || err != nil {
		t.Logf("receive-pack: %v, %v: %s", werr, err, stderr.String())
	}
	return report.String() + stderr.String()
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
