package testscript

import (
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestWorkflowDoc runs the command blocks of docs/workflow.md as written,
// in order, against a fresh forge with collab-web running: each block as
// the principal its first line names ("# as NAME"), in that principal's
// own home, with ssh reaching the forge through serve as sshd would; "# on
// the forge" blocks run as the operator. The webhook the doc subscribes is
// received here, and its revision.pushed body saved as the CI bot's
// payload.json before the bot's block runs.
func TestWorkflowDoc(t *testing.T) {
	doc, err := os.ReadFile("../docs/workflow.md")
	if err != nil {
		t.Fatal(err)
	}
	type block struct{ as, script string }
	var blocks []block
	who := regexp.MustCompile(`^# (?:as ([a-z0-9][a-z0-9._-]*)|on the forge)`)
	rest := string(doc)
	for {
		_, after, ok := strings.Cut(rest, "```sh\n")
		if !ok {
			break
		}
		body, after2, ok := strings.Cut(after, "```")
		if !ok {
			t.Fatal("unterminated ```sh block")
		}
		m := who.FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("a block of docs/workflow.md does not say who runs it:\n%s", body)
		}
		blocks = append(blocks, block{as: m[1], script: body})
		rest = after2
	}
	if len(blocks) < 8 {
		t.Fatalf("found %d sh blocks in docs/workflow.md", len(blocks))
	}

	tmp := t.TempDir()
	root := filepath.Join(tmp, "root")
	bin := filepath.Join(tmp, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// ssh [options] HOST COMMAND…, as git and people call it.
	fakeSSH := `#!/bin/sh
while [ $# -gt 0 ]; do
	case "$1" in
	-o|-p|-i|-F|-l) shift 2 ;;
	-*) shift ;;
	*) break ;;
	esac
done
shift
SSH_ORIGINAL_COMMAND="$*" exec collab-hook --root "$DOC_ROOT" serve --as "$DOC_AS"
`
	if err := os.WriteFile(filepath.Join(bin, "ssh"), []byte(fakeSSH), 0o755); err != nil {
		t.Fatal(err)
	}
	path := bin + ":" + binDir + ":" + os.Getenv("PATH")
	operatorEnv := append(os.Environ(), "COLLAB_ROOT="+root, "PATH="+path)
	run := func(as, dir, script string) string {
		t.Helper()
		env := operatorEnv
		if as != "" {
			env = append(os.Environ(), "PATH="+path, "HOME="+dir, "DOC_AS="+as, "DOC_ROOT="+root, "GIT_CONFIG_NOSYSTEM=1", "GIT_SSH_VARIANT=ssh")
		}
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("as %q: %v\n%s\n---\n%s", as, err, script, out)
		}
		return string(out)
	}

	// The CI bot's endpoint: it keeps the first revision.pushed body.
	var mu sync.Mutex
	var payload []byte
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		if r.Header.Get("X-Collab-Event") == "revision.pushed" && payload == nil {
			payload = b
		}
		mu.Unlock()
	})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	hookURL := "http://" + l.Addr().String() + "/hooks/collab"

	run("", tmp, "collab-hook init --url http://forge.example")
	web, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := web.Addr().String()
	web.Close()
	wcmd := exec.Command(filepath.Join(binDir, "collab-web"), "--root", root, "--listen", addr)
	wlog, _ := os.Create(filepath.Join(tmp, "collab-web.log"))
	wcmd.Stdout, wcmd.Stderr = wlog, wlog
	if err := wcmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = wcmd.Process.Signal(syscall.SIGTERM); _ = wcmd.Wait(); wlog.Close() })

	homes := map[string]string{}
	home := func(as string) string {
		if h, ok := homes[as]; ok {
			return h
		}
		h := filepath.Join(tmp, "home", as)
		os.MkdirAll(h, 0o755)
		gitconfig := "[user]\n\tname = " + as + "\n\temail = " + as + "@example.com\n[init]\n\tdefaultBranch = main\n"
		if err := os.WriteFile(filepath.Join(h, ".gitconfig"), []byte(gitconfig), 0o644); err != nil {
			t.Fatal(err)
		}
		homes[as] = h
		return h
	}
	var all strings.Builder
	for _, b := range blocks {
		script := strings.ReplaceAll(b.script, "https://ci.example/hooks/collab", hookURL)
		dir := tmp
		if b.as != "" {
			dir = home(b.as)
		}
		if strings.Contains(script, "payload.json") {
			for end := time.Now().Add(patience); ; time.Sleep(50 * time.Millisecond) {
				mu.Lock()
				got := payload
				mu.Unlock()
				if got != nil {
					if err := os.WriteFile(filepath.Join(dir, "payload.json"), got, 0o644); err != nil {
						t.Fatal(err)
					}
					break
				}
				if time.Now().After(end) {
					t.Fatal("no revision.pushed delivery reached the CI bot's endpoint")
				}
			}
		}
		all.WriteString(run(b.as, dir, script))
	}
	out := all.String()
	for _, want := range []string{
		`branch main protected`,
		`remote: patch [0-9a-f]{40} revision 1`,
		`remote: collab: branch main is protected: push to refs/for/main and use patch submit`,
		`refused, as it should be`,
		`"submittable": true`,
		`"name": "check:ci/test"`,
		`merged into main`,
		`(?m)^Reviewed-by: bob$`,
		`(?m)^Patch: [0-9a-f]{40}$`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("output of docs/workflow.md's commands lacks %q:\n%s", want, out)
		}
	}
}
