package testscript

// Script commands that run a REAL OpenSSH sshd and git daemon for a script
// (issue 3). Scripts that use them start with
//
//	[!root] skip 'sshd needs root'
//	[!exec:/usr/sbin/sshd] skip 'no sshd'
//
// Commands:
//
//	sshd-start [-keys-command | -keys-file]
//	    Starts /usr/sbin/sshd -D on a free 127.0.0.1 port with the forge's
//	    forced commands, and stops it when the script ends. By default sshd
//	    reads an authorized_keys file written from `collab-hook
//	    authorized-keys` (run sshd-keys after changing keys or users); with
//	    -keys-command it runs deploy/sshd/keys-command.awk at every login
//	    instead (which hands collab-hook-fast keys-command what the key
//	    index cannot answer); -keys-file reads $ROOT/collab.db.authorized_keys
//	    first, then runs the command (install.sh's deployment). Sets $SSH_PORT,
//	    $SSH_URL (ssh://git@127.0.0.1:PORT), $SSHD_LOG (sshd's own log).
//	    The forge's `ssh` setting is set to $SSH_URL. $GIT_URL is where
//	    git goes: $SSH_URL, or in TestScriptsHTTP's run (TRANSPORT=http,
//	    condition [http]) collab-web's $WEB_URL, which sshd-start then
//	    starts; verbs go over sshd in both.
//	    The test sshd logs every key in as root (PermitRootLogin
//	    forced-commands-only); the client wrappers below turn the git@ of
//	    the URLs scripts write into root@, so scripts use the URLs users do.
//	sshd-keys
//	    Rewrites the authorized_keys file from `collab-hook authorized-keys`.
//	keygen NAME
//	    Makes a client key pair $WORK/.ssh/id_NAME{,.pub} without
//	    registering it (a stranger's key), and the wrapper ssh-NAME (below).
//	ssh-user NAME [REPO LEVEL]…
//	    `user add NAME`, keygen NAME (unless done already), `key add` of
//	    that key, `grant NAME REPO LEVEL` for each pair given, and sshd-keys.
//	ssh-use NAME
//	    Makes NAME's key the one plain `git` uses from now on (sets
//	    GIT_SSH_COMMAND), so `exec git clone $GIT_URL/demo.git` and
//	    `exec git push` run as NAME; in the HTTP run, with NAME's token
//	    (made once with the token verb) as git's Authorization header.
//	    Before sshd-start (or without root), NAME needs no key: git then
//	    runs NAME's stand-in for ssh, the forced command itself (see
//	    git-as), and $GIT_URL is ssh://git@forge.test.
//
// Programs on PATH for `exec` (scenarios now use the `as` and `git-as`
// commands of session_test.go, which pick sshd or the forced command
// themselves and check exit codes; these stay for scripts written before):
//
//	ssh-as NAME WORD…     ssh to the forge with NAME's key. Each WORD is
//	                      shell-quoted first, so `ssh-as alice issue new demo
//	                      --title 'Two words'` arrives as those six words.
//	                      stdin passes through (`stdin FILE` before it).
//	ssh-raw NAME STRING   sends STRING as the command exactly as given
//	                      (what `ssh host STRING` would send).
//	ssh-NAME ARGS…        plain ssh with NAME's key and the forge's host key
//	                      (what GIT_SSH_COMMAND runs).
//	git-as NAME ARGS…     git with NAME's key for ssh:// remotes.
//
// The wrappers add -p $SSH_PORT, so scp-like URLs (git@127.0.0.1:demo)
// reach the test sshd too.
//
//	journal-listen
//	    Listens on a unixgram socket as journald would and sets
//	    $COLLAB_JOURNAL_SOCKET (call it before sshd-start, which passes it
//	    to the forced command with SetEnv). Every entry received is appended
//	    to $WORK/journal.jsonl as one JSON object of its fields, e.g.
//	    {"MESSAGE":"pre-receive","PRINCIPAL":"alice","REPO":"demo.git",…},
//	    so scripts can `grep '"REF":"refs/heads/main"' journal.jsonl`.
//	journal-flush
//	    Waits until every entry sent so far is in journal.jsonl; call it
//	    before grepping the file.
//	gitdaemon-start
//	    Starts `git daemon` on a free 127.0.0.1 port over $ROOT/repos
//	    (public repositories only: those with git-daemon-export-ok), stopped
//	    at the end. Sets $GIT_DAEMON_PORT and $GIT_DAEMON_URL
//	    (git://127.0.0.1:PORT).
//
// Beside the scripts, TestDeployInstall runs deploy/sshd/install.sh for a
// throwaway unix user and pushes through an sshd including its snippet,
// and TestDemo runs scripts/demo.sh and the commands it prints.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"golang.org/x/sys/unix"
)

// sshdCmds start and drive a real sshd for a script.
func sshdCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"sshd-start":      cmdSSHDStart,
		"sshd-keys":       cmdSSHDKeys,
		"keygen":          cmdKeygen,
		"ssh-user":        cmdSSHUser,
		"ssh-use":         cmdSSHUse,
		"gitdaemon-start": cmdGitDaemonStart,
		"journal-listen":  cmdJournalListen,
		"journal-flush":   cmdJournalFlush,
	}
}

// sshPaths are where a script's ssh files live.
type sshPaths struct{ dir, bin string }

func pathsOf(ts *testscript.TestScript) sshPaths {
	work := ts.Getenv("WORK")
	p := sshPaths{dir: filepath.Join(work, ".ssh"), bin: filepath.Join(work, ".sshbin")}
	for _, d := range []string{p.dir, p.bin} {
		ts.Check(os.MkdirAll(d, 0o755))
	}
	if !strings.Contains(ts.Getenv("PATH"), p.bin) {
		ts.Setenv("PATH", p.bin+string(os.PathListSeparator)+ts.Getenv("PATH"))
		writeClientTools(ts, p)
	}
	return p
}

func (p sshPaths) authorizedKeys() string { return filepath.Join(p.dir, "authorized_keys") }
func (p sshPaths) knownHosts() string     { return filepath.Join(p.dir, "known_hosts") }
func (p sshPaths) key(name string) string { return filepath.Join(p.dir, "id_"+name) }

// sshFreePort asks the kernel for a free port on 127.0.0.1.
func sshFreePort(ts *testscript.TestScript) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	port := l.Addr().(*net.TCPAddr).Port
	ts.Check(l.Close())
	return port
}

// hook runs collab-hook for the script's root and returns its stdout.
func hook(ts *testscript.TestScript, args ...string) string {
	cmd := exec.Command(filepath.Join(ts.Getenv("BIN"), "collab-hook"), append([]string{"--root", ts.Getenv("ROOT")}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		ts.Fatalf("collab-hook %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

func cmdSSHDStart(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! sshd-start")
	}
	keysCommand, keysFile := false, false
	for _, a := range args {
		switch a {
		case "-keys-command":
			keysCommand = true
		case "-keys-file":
			keysCommand, keysFile = true, true
		default:
			ts.Fatalf("usage: sshd-start [-keys-command | -keys-file]")
		}
	}
	if ts.Getenv("SSH_PORT") != "" {
		ts.Fatalf("sshd-start: sshd already running on %s", ts.Getenv("SSH_PORT"))
	}
	p := pathsOf(ts)
	sd := filepath.Join(ts.Getenv("WORK"), ".sshd")
	ts.Check(os.MkdirAll(sd, 0o755))
	ts.Check(os.MkdirAll("/run/sshd", 0o755)) // privilege separation directory
	hostKey := filepath.Join(sd, "host_ed25519")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "test-host", "-f", hostKey).CombinedOutput(); err != nil {
		ts.Fatalf("ssh-keygen host key: %v\n%s", err, out)
	}
	hostPub, err := os.ReadFile(hostKey + ".pub")
	ts.Check(err)
	hp := strings.Fields(string(hostPub))
	ts.Check(os.WriteFile(p.authorizedKeys(), []byte(hook(ts, "authorized-keys")), 0o600))

	var cfg strings.Builder
	fmt.Fprintf(&cfg, `ListenAddress 127.0.0.1
HostKey %s
PidFile %s
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PermitRootLogin forced-commands-only
AllowUsers root
StrictModes no
AcceptEnv GIT_PROTOCOL
ExposeAuthInfo yes
DisableForwarding yes
PermitTTY no
PermitUserEnvironment no
PrintMotd no
LogLevel VERBOSE
`, hostKey, filepath.Join(sd, "sshd.pid"))
	if keysCommand {
		// As install.sh's snippet: awk reading the key index, handing
		// collab-hook-fast (beside collab-hook in BIN) what it cannot answer.
		script, err := filepath.Abs("../deploy/sshd/keys-command.awk")
		ts.Check(err)
		awk, err := exec.LookPath("awk")
		ts.Check(err)
		keys := "none"
		if keysFile {
			keys = filepath.Join(ts.Getenv("ROOT"), "collab.db.authorized_keys")
		}
		fmt.Fprintf(&cfg, "AuthorizedKeysFile %s\nAuthorizedKeysCommand %s -v bin=%s -v root=%s -v u=%%u -v t=%%t -v k=%%k -f %s\nAuthorizedKeysCommandUser root\n",
			keys, awk, ts.Getenv("BIN"), ts.Getenv("ROOT"), script)
	} else {
		fmt.Fprintf(&cfg, "AuthorizedKeysFile %s\n", p.authorizedKeys())
	}
	// The login user's HOME is the runner's, whose dotfiles (a ~/.bashrc
	// that runs "pyenv init" and moves PATH, say) bash would read before
	// every forced command: the sessions get a home of their own, as the
	// forge's own user has in production.
	home := filepath.Join(sd, "home")
	ts.Check(os.MkdirAll(home, 0o755))
	setenv := []string{"HOME=" + home}
	for _, k := range serverEnv {
		if v := ts.Getenv(k); v != "" {
			setenv = append(setenv, k+"="+v)
		}
	}
	fmt.Fprintf(&cfg, "SetEnv %s\n", strings.Join(setenv, " "))
	conf := filepath.Join(sd, "sshd_config")
	ts.Check(os.WriteFile(conf, []byte(cfg.String()), 0o600))
	if out, err := exec.Command("/usr/sbin/sshd", "-t", "-f", conf).CombinedOutput(); err != nil {
		ts.Fatalf("sshd -t: %v\n%s", err, out)
	}
	logPath := filepath.Join(sd, "sshd.log")
	port, stop := launch(ts, "sshd", logPath, "Server listening on 127.0.0.1", func(port int) *exec.Cmd {
		cmd := exec.Command("/usr/sbin/sshd", "-D", "-e", "-f", conf, "-p", strconv.Itoa(port))
		cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"}
		return cmd
	})
	ts.Defer(stop)
	ts.Check(os.WriteFile(p.knownHosts(), []byte(fmt.Sprintf("[127.0.0.1]:%d %s %s\n", port, hp[0], hp[1])), 0o644))

	url := fmt.Sprintf("ssh://git@127.0.0.1:%d", port)
	ts.Setenv("SSH_PORT", strconv.Itoa(port))
	ts.Setenv("SSH_URL", url)
	ts.Setenv("SSHD_LOG", logPath)
	hook(ts, "config", "set", "ssh", url)
	ts.Setenv("GIT_URL", url)
	if ts.Getenv("TRANSPORT") == "http" {
		// Git goes to collab-web; the script's own web-start, if any,
		// finds it running.
		if ts.Getenv("WEB_URL") == "" {
			cmdWebStart(ts, false, nil)
		}
		ts.Setenv("GIT_URL", ts.Getenv("WEB_URL"))
	}
}

// serverEnv are the variables of a script that reach the forced command
// (sshd_config's SetEnv, as an operator would set them there): the
// journal's socket, the merge scan's foreground budget.
var serverEnv = []string{"COLLAB_JOURNAL_SOCKET", "COLLAB_MERGE_SCAN_BUDGET"}

// gitCredentials is the environment that has git send NAME's token over
// HTTP (as git's credential helpers would, through GIT_CONFIG_* so that
// no file changes), in the HTTP run only.
func gitCredentials(ts *testscript.TestScript, name string) []string {
	if ts.Getenv("TRANSPORT") != "http" {
		return nil
	}
	return []string{
		"GIT_CONFIG_COUNT=2",
		"GIT_CONFIG_KEY_0=credential.helper", "GIT_CONFIG_VALUE_0=",
		"GIT_CONFIG_KEY_1=http.extraHeader", "GIT_CONFIG_VALUE_1=Authorization: Bearer " + apiToken(ts, name),
	}
}

// launch starts the server cmd(port) makes on a free port, logging to
// logPath, and waits until the log says ready. A port taken between the
// probe and the bind (scripts run in parallel) makes the server exit at
// start; then it tries again on another port.
func launch(ts *testscript.TestScript, what, logPath, ready string, cmd func(port int) *exec.Cmd) (int, func()) {
	var last string
	for attempt := 0; attempt < 5; attempt++ {
		port := sshFreePort(ts)
		logf, err := os.Create(logPath)
		ts.Check(err)
		c := cmd(port)
		c.Stdout, c.Stderr = logf, logf
		ts.Check(c.Start())
		exited := make(chan struct{})
		go func() { _ = c.Wait(); close(exited) }()
		stop := func() {
			_ = c.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(5 * time.Second):
				_ = c.Process.Kill()
				<-exited
			}
			logf.Close()
		}
		for deadline := time.Now().Add(patience); ; time.Sleep(20 * time.Millisecond) {
			log, _ := os.ReadFile(logPath)
			if strings.Contains(string(log), ready) {
				return port, stop
			}
			select {
			case <-exited:
				last = string(log)
			default:
				if time.Now().Before(deadline) {
					continue
				}
				stop()
				ts.Fatalf("%s did not start on port %d:\n%s", what, port, log)
			}
			break
		}
		logf.Close()
	}
	ts.Fatalf("%s exited at start:\n%s", what, last)
	return 0, nil
}

func cmdSSHDKeys(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: sshd-keys")
	}
	p := pathsOf(ts)
	ts.Check(os.WriteFile(p.authorizedKeys(), []byte(hook(ts, "authorized-keys")), 0o600))
}

func cmdKeygen(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: keygen NAME")
	}
	keygen(ts, args[0])
}

func keygen(ts *testscript.TestScript, name string) sshPaths {
	p := pathsOf(ts)
	if strings.ContainsAny(name, "/ '\"") || name == "" {
		ts.Fatalf("keygen: bad name %q", name)
	}
	key := p.key(name)
	if _, err := os.Stat(key); err == nil {
		ts.Fatalf("keygen: key %s exists", name)
	}
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name+"@test", "-f", key).CombinedOutput(); err != nil {
		ts.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	// The wrapper git and the scripts run: the key, the known host key, and
	// git@ turned into root@ (the test sshd's only login).
	wrapper := fmt.Sprintf(`#!/bin/sh
i=0
for a in "$@"; do
  case "$a" in git@*) a="root@${a#git@}";; esac
  if [ $i = 0 ]; then set --; i=1; fi
  set -- "$@" "$a"
done
# scp-like git@host:repo URLs carry no port: use the test sshd's.
[ -n "$SSH_PORT" ] && set -- -p "$SSH_PORT" "$@"
exec ssh -F /dev/null -o BatchMode=yes -o IdentitiesOnly=yes -o IdentityFile=%s \
  -o UserKnownHostsFile=%s -o StrictHostKeyChecking=yes -o RequestTTY=no -o LogLevel=ERROR "$@"
`, shq(key), shq(p.knownHosts()))
	ts.Check(os.WriteFile(filepath.Join(p.bin, "ssh-"+name), []byte(wrapper), 0o755))
	return p
}

func cmdSSHUser(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args)%2 != 1 {
		ts.Fatalf("usage: ssh-user NAME [REPO LEVEL]…")
	}
	name := args[0]
	p := pathsOf(ts)
	if _, err := os.Stat(p.key(name)); err != nil {
		keygen(ts, name) // else reuse the key an earlier keygen made
	}
	hook(ts, "user", "add", name)
	pub, err := os.ReadFile(p.key(name) + ".pub")
	ts.Check(err)
	hook(ts, "key", "add", name, strings.TrimSpace(string(pub)))
	for i := 1; i < len(args); i += 2 {
		hook(ts, "grant", name, args[i], args[i+1])
	}
	ts.Check(os.WriteFile(p.authorizedKeys(), []byte(hook(ts, "authorized-keys")), 0o600))
}

func cmdSSHUse(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: ssh-use NAME")
	}
	if ts.Getenv("SSH_PORT") == "" {
		// No sshd: the forced command NAME's key would run (standIn).
		ts.Setenv("GIT_SSH_COMMAND", standIn(ts, args[0]))
		ts.Setenv("GIT_SSH_VARIANT", "ssh")
		return
	}
	p := pathsOf(ts)
	w := filepath.Join(p.bin, "ssh-"+args[0])
	if _, err := os.Stat(w); err != nil {
		ts.Fatalf("ssh-use: no key for %s (keygen or ssh-user first)", args[0])
	}
	ts.Setenv("GIT_SSH_COMMAND", w)
	ts.Setenv("GIT_SSH_VARIANT", "ssh")
	for _, kv := range gitCredentials(ts, args[0]) {
		k, v, _ := strings.Cut(kv, "=")
		ts.Setenv(k, v)
	}
}

// writeClientTools puts ssh-as, ssh-raw and git-as on the script's PATH.
func writeClientTools(ts *testscript.TestScript, p sshPaths) {
	tools := map[string]string{
		"ssh-as": `#!/bin/sh
[ $# -ge 1 ] || { echo "usage: ssh-as NAME WORD…" >&2; exit 2; }
name=$1; shift
w="$(dirname "$0")/ssh-$name"
[ -x "$w" ] || { echo "ssh-as: no key for $name" >&2; exit 2; }
cmd=""
for a in "$@"; do
  q=$(printf '%s' "$a" | sed "s/'/'\\\\''/g")
  cmd="$cmd '$q'"
done
exec "$w" git@127.0.0.1 "${cmd# }"
`,
		"ssh-raw": `#!/bin/sh
[ $# -eq 2 ] || { echo "usage: ssh-raw NAME STRING" >&2; exit 2; }
w="$(dirname "$0")/ssh-$1"
[ -x "$w" ] || { echo "ssh-raw: no key for $1" >&2; exit 2; }
exec "$w" git@127.0.0.1 "$2"
`,
		"git-as": `#!/bin/sh
[ $# -ge 1 ] || { echo "usage: git-as NAME ARGS…" >&2; exit 2; }
w="$(dirname "$0")/ssh-$1"; shift
[ -x "$w" ] || { echo "git-as: no key" >&2; exit 2; }
GIT_SSH_COMMAND="$w" GIT_SSH_VARIANT=ssh exec git "$@"
`,
	}
	for name, body := range tools {
		ts.Check(os.WriteFile(filepath.Join(p.bin, name), []byte(body), 0o755))
	}
}

func cmdGitDaemonStart(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: gitdaemon-start")
	}
	if ts.Getenv("GIT_DAEMON_PORT") != "" {
		ts.Fatalf("gitdaemon-start: already running")
	}
	dir := filepath.Join(ts.Getenv("WORK"), ".gitdaemon")
	ts.Check(os.MkdirAll(dir, 0o755))
	repos := filepath.Join(ts.Getenv("ROOT"), "repos")
	port, stop := launch(ts, "git daemon", filepath.Join(dir, "daemon.log"), "Ready to rumble", func(port int) *exec.Cmd {
		cmd := exec.Command("git", "daemon", "--verbose", "--listen=127.0.0.1", "--port="+strconv.Itoa(port), "--reuseaddr",
			"--base-path="+repos, "--pid-file="+filepath.Join(dir, "daemon.pid"), repos)
		cmd.Env = []string{"PATH=" + ts.Getenv("PATH"), "HOME=" + ts.Getenv("HOME"), "GIT_CONFIG_NOSYSTEM=1"}
		return cmd
	})
	ts.Defer(stop)
	ts.Setenv("GIT_DAEMON_PORT", strconv.Itoa(port))
	ts.Setenv("GIT_DAEMON_URL", fmt.Sprintf("git://127.0.0.1:%d", port))
}

func shq(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func cmdJournalListen(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: journal-listen")
	}
	// Socket paths are limited to 108 bytes; $WORK can be long.
	dir, err := os.MkdirTemp("", "cj")
	ts.Check(err)
	ts.Check(os.Chmod(dir, 0o755))
	path := filepath.Join(dir, "socket")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	ts.Check(err)
	out, err := os.OpenFile(filepath.Join(ts.Getenv("WORK"), "journal.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	ts.Check(err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 1<<20)
		oob := make([]byte, 64)
		for {
			n, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
			if err != nil {
				return
			}
			data := buf[:n]
			if oobn > 0 {
				// An entry too big for a datagram arrives as a memfd.
				data, err = readMemfd(oob[:oobn])
				if err != nil {
					data = nil
				}
			}
			var fields map[string]string
			if nonce, ok := strings.CutPrefix(string(data), journalFlushMarker); ok {
				fields = map[string]string{"TEST_FLUSH": nonce}
			} else if fields, err = decodeJournal(data); err != nil {
				fields = map[string]string{"DECODE_ERROR": err.Error()}
			}
			b, _ := json.Marshal(fields)
			_, _ = out.Write(append(b, '\n'))
		}
	}()
	ts.Defer(func() {
		conn.Close()
		<-done
		out.Close()
		os.RemoveAll(dir)
	})
	ts.Setenv("COLLAB_JOURNAL_SOCKET", path)
}

// journalFlushMarker is a datagram no journal client sends.
const journalFlushMarker = "\x00collab-test-flush\x00"

func cmdJournalFlush(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: journal-flush")
	}
	path := ts.Getenv("COLLAB_JOURNAL_SOCKET")
	if path == "" {
		ts.Fatalf("journal-flush: no journal-listen in this script")
	}
	// Datagrams on one socket are read in order: once the listener has
	// written the marker's line, everything sent before it is in the file.
	nonce := strconv.FormatInt(time.Now().UnixNano(), 36)
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	ts.Check(err)
	defer c.Close()
	_, err = c.Write([]byte(journalFlushMarker + nonce))
	ts.Check(err)
	want := `"TEST_FLUSH":"` + nonce + `"`
	for deadline := time.Now().Add(patience); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(filepath.Join(ts.Getenv("WORK"), "journal.jsonl"))
		if bytes.Contains(b, []byte(want)) {
			return
		}
	}
	ts.Fatalf("journal-flush: the listener did not catch up")
}

func readMemfd(oob []byte) ([]byte, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil || len(msgs) == 0 {
		return nil, fmt.Errorf("control message: %v", err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) == 0 {
		return nil, fmt.Errorf("rights: %v", err)
	}
	f := os.NewFile(uintptr(fds[0]), "memfd")
	defer f.Close()
	if _, err := f.Seek(0, 0); err != nil {
		return nil, err
	}
	return io.ReadAll(f)
}

// decodeJournal parses one datagram of journald's native protocol.
func decodeJournal(b []byte) (map[string]string, error) {
	out := map[string]string{}
	for len(b) > 0 {
		nl := bytes.IndexByte(b, '\n')
		if nl < 0 {
			return nil, fmt.Errorf("unterminated field %q", b)
		}
		line := b[:nl]
		b = b[nl+1:]
		if eq := bytes.IndexByte(line, '='); eq >= 0 {
			out[string(line[:eq])] = string(line[eq+1:])
			continue
		}
		if len(b) < 8 {
			return nil, fmt.Errorf("short binary field %s", line)
		}
		size := binary.LittleEndian.Uint64(b)
		b = b[8:]
		if uint64(len(b)) < size+1 || b[size] != '\n' {
			return nil, fmt.Errorf("bad binary field %s", line)
		}
		out[string(line)] = string(b[:size])
		b = b[size+1:]
	}
	return out, nil
}

// TestDeployInstall runs deploy/sshd/install.sh for real, twice, for a
// throwaway unix user, then logs in through an sshd that includes the
// installed snippet — the recommended deployment: a non-root forge user,
// AuthorizedKeysCommand on the installed root-owned binary, ExposeAuthInfo
// — and clones and pushes. Everything it made is removed afterwards.
func TestDeployInstall(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	for _, p := range []string{"/usr/sbin/sshd", "/usr/sbin/useradd", "/usr/sbin/runuser", "/usr/sbin/userdel"} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("no %s", p)
		}
	}
	if testing.Short() {
		t.Skip("short")
	}
	run := func(name string, args ...string) string {
		t.Helper()
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	user := fmt.Sprintf("collabdeploy%d", os.Getpid()%100000)
	// sshd's StrictModes refuses an authorized_keys file under a
	// world-writable directory such as /tmp; /run is root's.
	tmp, err := os.MkdirTemp("/run", "collab-deploy-")
	if err != nil {
		t.Fatal(err)
	}
	// sshd checks every component of an AuthorizedKeysCommand: it must live
	// on a root-owned path, as install.sh's default does; /tmp would not do.
	libexec := "/usr/local/libexec/" + user
	t.Cleanup(func() {
		_ = exec.Command("userdel", "-r", user).Run()
		os.RemoveAll(libexec)
		os.RemoveAll(tmp)
	})
	if err := os.Chmod(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(tmp, "root")
	install := func() string {
		cmd := exec.Command("../deploy/sshd/install.sh", "--bin", binDir, "--user", user, "--root", root,
			"--ssh", "ssh://"+user+"@127.0.0.1", "--no-start")
		cmd.Env = append(os.Environ(), "LIBEXEC="+libexec, "BINDIR="+filepath.Join(tmp, "bin"),
			"SSHD_DIR="+filepath.Join(tmp, "sshd"), "UNIT_DIR="+filepath.Join(tmp, "units"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("install.sh: %v\n%s", err, out)
		}
		return string(out)
	}
	install()
	install() // safe to run twice

	if sh := run("getent", "shadow", user); !strings.HasPrefix(sh, user+":*:") {
		t.Errorf("password field: %q, want *", sh)
	}
	for _, b := range []string{"collab-hook", "collab-hook-fast", "collab-web"} {
		fi, err := os.Stat(filepath.Join(libexec, b))
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != 0 || fi.Mode().Perm() != 0o755 {
			t.Errorf("%s: uid %d mode %v, want root 0755", b, st.Uid, fi.Mode())
		}
		if l, err := os.Readlink(filepath.Join(tmp, "bin", b)); err != nil || l != filepath.Join(libexec, b) {
			t.Errorf("link %s: %q %v", b, l, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(libexec, "keys-command.awk")); err != nil {
		t.Error(err)
	} else if fi.Sys().(*syscall.Stat_t).Uid != 0 || fi.Mode().Perm() != 0o644 {
		t.Errorf("keys-command.awk: uid %d mode %v, want root 0644", fi.Sys().(*syscall.Stat_t).Uid, fi.Mode())
	}
	unit, err := os.ReadFile(filepath.Join(tmp, "units", "collab-web.service"))
	if err != nil || !strings.Contains(string(unit), "ExecStart="+libexec+"/collab-web --root "+root+" --listen 127.0.0.1:8080") ||
		!strings.Contains(string(unit), "User="+user) || strings.Contains(string(unit), "@") {
		t.Errorf("collab-web.service:\n%s (%v)", unit, err)
	}

	// The forge's admin commands run as the forge's user.
	hook := func(args ...string) string {
		return run("runuser", append([]string{"-u", user, "--", filepath.Join(libexec, "collab-hook"), "--root", root}, args...)...)
	}
	key := filepath.Join(tmp, "id_alice")
	run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "alice@test", "-f", key)
	hook("user", "add", "alice")
	hook("key", "add", "alice", key+".pub")
	hook("repo", "create", "demo")
	hook("grant", "alice", "demo", "write")
	// keys-command reads the key index, written by the forge's user.
	if b, err := os.ReadFile(filepath.Join(root, "collab.db.keys")); err != nil || !strings.Contains(string(b), " alice\n") {
		t.Errorf("key index: %v\n%s", err, b)
	}
	if fi, err := os.Stat(filepath.Join(root, "collab.db.keys")); err == nil {
		if owner := run("id", "-u", user); strconv.Itoa(int(fi.Sys().(*syscall.Stat_t).Uid)) != strings.TrimSpace(owner) {
			t.Errorf("key index owned by uid %d, want %s's", fi.Sys().(*syscall.Stat_t).Uid, user)
		}
	}

	// An sshd with the installed snippet, as /etc/ssh/sshd_config would
	// include it.
	port := 0
	if l, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		port = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(tmp, "hostkey"))
	conf := filepath.Join(tmp, "sshd_config")
	cfg := fmt.Sprintf("ListenAddress 127.0.0.1\nHostKey %s/hostkey\nPidFile %s/sshd.pid\nUsePAM no\nLogLevel VERBOSE\nAllowUsers %s\nInclude %s/sshd/collab.conf\n",
		tmp, tmp, user, tmp)
	if err := os.WriteFile(conf, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	_ = os.MkdirAll("/run/sshd", 0o755)
	run("/usr/sbin/sshd", "-t", "-f", conf, "-p", strconv.Itoa(port))
	sshd := exec.Command("/usr/sbin/sshd", "-D", "-e", "-f", conf, "-p", strconv.Itoa(port))
	// sshd writes its log straight into a file, as sshd-start's does: read
	// after a login, it holds that login's lines, with no copy in between.
	logFile, err := os.Create(filepath.Join(tmp, "sshd.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	sshd.Stderr = logFile
	sshdLog := func() string {
		b, _ := os.ReadFile(logFile.Name())
		return string(b)
	}
	if err := sshd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sshd.Process.Kill(); _ = sshd.Wait() })
	for deadline := time.Now().Add(patience); ; time.Sleep(25 * time.Millisecond) {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshd did not start: %s", sshdLog())
		}
	}
	sshCmd := fmt.Sprintf("ssh -F /dev/null -i %s -o IdentitiesOnly=yes -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR", key)
	ssh := func(args ...string) (string, error) {
		a := append(strings.Fields(sshCmd)[1:], "-p", strconv.Itoa(port), user+"@127.0.0.1")
		out, err := exec.Command("ssh", append(a, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := ssh("whoami"); err != nil || !strings.HasPrefix(out, "alice\n") {
		t.Fatalf("whoami: %v\n%s\nsshd: %s", err, out, sshdLog())
	}
	// sshd found the key in the file collab keeps, without running a command.
	authorized := filepath.Join(root, "collab.db.authorized_keys")
	if !strings.Contains(sshdLog(), "found at "+authorized+":") {
		t.Errorf("sshd did not accept the key from %s:\n%s", authorized, sshdLog())
	}
	// The installed AuthorizedKeysCommand, run by hand as sshd would, prints
	// what collab-hook keys-command does: from the index, and without one.
	snippet, err := os.ReadFile(filepath.Join(tmp, "sshd", "collab.conf"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*AuthorizedKeysCommand (.+)$`).FindSubmatch(snippet)
	if m == nil {
		t.Fatalf("no AuthorizedKeysCommand in the snippet:\n%s", snippet)
	}
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	kt := strings.Fields(string(pub))
	keysCmd := strings.NewReplacer("%u", user, "%t", kt[0], "%k", kt[1]).Replace(string(m[1]))
	want := hook("keys-command", user, kt[0], kt[1])
	if !strings.HasPrefix(want, `command="`+libexec+"/collab-hook --root "+root+" serve --as alice\",restrict ") {
		t.Errorf("keys-command: %q", want)
	}
	if got := run("runuser", append([]string{"-u", user, "--"}, strings.Fields(keysCmd)...)...); got != want {
		t.Errorf("%s:\n%q\nwant %q", keysCmd, got, want)
	}
	if b, err := os.ReadFile(authorized); err != nil || !strings.Contains(string(b), want) {
		t.Errorf("%s: %v\n%s\nwant the line %q", authorized, err, b, want)
	}
	// Without the file and the index (a root from before either), the
	// command asks the database.
	for _, f := range []string{authorized, filepath.Join(root, "collab.db.keys")} {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	if got := run("runuser", append([]string{"-u", user, "--"}, strings.Fields(keysCmd)...)...); got != want {
		t.Errorf("without the index, %s:\n%q\nwant %q", keysCmd, got, want)
	}
	if out, err := ssh("whoami"); err != nil || !strings.HasPrefix(out, "alice\n") {
		t.Fatalf("whoami without the index: %v\n%s\nsshd: %s", err, out, sshdLog())
	}
	hook("init")
	if _, err := os.Stat(authorized); err != nil {
		t.Errorf("init did not write the file again: %v", err)
	}
	work := filepath.Join(tmp, "work")
	gitEnv := append(os.Environ(), "GIT_SSH_COMMAND="+sshCmd, "HOME="+tmp, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@x", "GIT_COMMITTER_NAME=A", "GIT_COMMITTER_EMAIL=a@x")
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, gitEnv
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	git(tmp, "clone", "-q", fmt.Sprintf("ssh://%s@127.0.0.1:%d/demo.git", user, port), work)
	git(work, "commit", "-q", "--allow-empty", "-m", "first")
	git(work, "push", "-q", "origin", "HEAD:refs/heads/main")
	if out := git(work, "ls-remote", "origin"); !strings.Contains(out, "refs/heads/main") {
		t.Errorf("ls-remote: %s", out)
	}
	// A disabled principal is locked out at the next login.
	hook("user", "disable", "alice")
	if out, err := ssh("whoami"); err == nil || !strings.Contains(out, "Permission denied") {
		t.Errorf("disabled alice: %v %s", err, out)
	}
}

// TestDemo runs scripts/demo.sh (what make demo runs) in the background,
// then tries the commands it prints: clone and push over its sshd, a
// refs/for push, an issue over ssh, git review, an anonymous clone from its
// git daemon and the web's /healthz; then --stop.
func TestDemo(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if _, err := os.Stat("/usr/sbin/sshd"); err != nil {
		t.Skip("no sshd")
	}
	if testing.Short() {
		t.Skip("short")
	}
	tmp, err := os.MkdirTemp("", "collab-demo-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	dir := filepath.Join(tmp, "demo")
	ports := map[string]string{}
	for _, k := range []string{"DEMO_SSH_PORT", "DEMO_WEB_PORT", "DEMO_GIT_PORT"} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[k] = strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
		l.Close()
	}
	env := append(os.Environ(), "DEMO_BIN="+binDir, "DEMO_DIR="+dir, "HOME="+tmp, "TMPDIR="+tmp, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@x", "GIT_COMMITTER_NAME=A", "GIT_COMMITTER_EMAIL=a@x")
	for k, v := range ports {
		env = append(env, k+"="+v)
	}
	demo := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("../scripts/demo.sh", args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("demo.sh %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	out := demo("--background")
	t.Cleanup(func() { demo("--stop") })
	// Run the printed commands, as a user would paste them.
	var script []string
	inTry := false
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "Try, from another shell:"):
			inTry = true
		case inTry && strings.TrimSpace(l) == "":
			inTry = false
		case inTry:
			script = append(script, strings.TrimSpace(l))
		}
	}
	if len(script) < 8 {
		t.Fatalf("demo printed no commands to try:\n%s", out)
	}
	script = append(script, "ls ../demo-anon")
	cmd := exec.Command("bash", "-euc", strings.Join(script, "\n"))
	cmd.Dir, cmd.Env = tmp, env
	res, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the printed commands failed: %v\n%s\n---\n%s", err, strings.Join(script, "\n"), res)
	}
	// git review (Gerrit's client) works with nothing but what the demo
	// printed: the repository's .gitreview, the demo's ssh and scp.
	if n := len(regexp.MustCompile(`patch [0-9a-f]{40} revision 1`).FindAll(res, -1)); n != 2 {
		t.Errorf("want 2 patches (git push, git review), got %d:\n%s", n, res)
	}
	for _, want := range []string{"hello demo", "HEAD -> main", "issue [0-9a-f]{40} filed", "gitreview.username",
		"Creating a git remote called 'gerrit'", "Two words", "Try collab", "ok", "README.md"} {
		if !regexp.MustCompile(want).Match(res) {
			t.Errorf("output of the printed commands lacks %q:\n%s", want, res)
		}
	}
	demoHints(t, out, tmp, env)
}

// demoHints runs what else the demo and the forge print: the hint a push
// of a commit without a Patch: trailer prints (it must work with the demo's
// key, port and host as printed), and the block that adds the user's own
// key, with a key the user has.
func demoHints(t *testing.T, out, tmp string, env []string) {
	t.Helper()
	block := func(start string) []string {
		var lines []string
		in := false
		for _, l := range strings.Split(out, "\n") {
			switch {
			case strings.HasPrefix(l, start):
				in = true
			case in && strings.TrimSpace(l) == "":
				return lines
			case in && strings.HasPrefix(l, "  "):
				lines = append(lines, strings.TrimSpace(l))
			}
		}
		return lines
	}
	var export string
	for _, l := range block("Try, from another shell:") {
		if strings.HasPrefix(l, "export PATH=") {
			export = l
		}
	}
	if export == "" {
		t.Fatalf("the demo prints no PATH line for its ssh:\n%s", out)
	}
	var clone string
	for _, l := range block("Try, from another shell:") {
		if strings.HasPrefix(l, "git clone ssh://") {
			clone = strings.TrimSuffix(l, " && cd demo")
		}
	}
	run := func(script string) string {
		t.Helper()
		cmd := exec.Command("bash", "-euc", script)
		cmd.Dir, cmd.Env = tmp, env
		res, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s\n---\n%s", err, script, res)
		}
		return string(res)
	}
	pushed := run(strings.Join([]string{export, clone + " hints", "cd hints", "echo x >> README.md",
		"git commit -qam 'No trailer yet'", "git push origin HEAD:refs/for/main 2>&1"}, "\n"))
	var hint string
	for _, l := range strings.Split(pushed, "\n") {
		if h, ok := strings.CutPrefix(strings.TrimRight(l, " "), "remote: f=$(git rev-parse"); ok {
			hint = "f=$(git rev-parse" + h
		}
	}
	if hint == "" {
		t.Fatalf("a push without a trailer printed no hook hint:\n%s", pushed)
	}
	msg := run(strings.Join([]string{export, "cd hints", hint, "test -x .git/hooks/commit-msg", "git log -1 --format=%B"}, "\n"))
	if !regexp.MustCompile(`(?m)^Patch: [0-9a-f]{40}$`).MatchString(msg) {
		t.Errorf("the printed hint left no Patch: trailer:\n%s", msg)
	}
	own := block("Your own key instead of the demo's")
	if len(own) < 4 {
		t.Fatalf("the demo prints no way to add one's own key:\n%s", out)
	}
	if res := run("mkdir -p ~/.ssh && ssh-keygen -q -t ed25519 -N '' -f ~/.ssh/id_ed25519\n" + strings.Join(own, "\n")); !regexp.MustCompile(`(?m)^you$`).MatchString(res) {
		t.Errorf("one's own key does not log in as you:\n%s", res)
	}
}
