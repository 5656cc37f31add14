package testscript

// Script commands for what users run on their side, as written: plain ssh
// and scp (as Gerrit's git-review runs them, with no way to pass a key).
//
//	plain-ssh [-host ALIAS] NAME
//	    Puts ssh and scp wrappers first on PATH that log in with NAME's
//	    key (ssh-user or keygen first) and the test sshd's host key. They
//	    give ssh its config with -F, since OpenSSH reads ~/.ssh/config from
//	    the passwd home and not from $HOME, and scp runs ssh by its
//	    absolute path unless told -S. git@ (and scp's -l git) become root@,
//	    the test sshd's only login, as the other wrappers do. With -host,
//	    ALIAS (e.g. forge.example, as the README writes it) names the test
//	    sshd. Sets $SHELL_INTEGRATION to the source tree's
//	    shell-integration/.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

func clientCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"plain-ssh": cmdPlainSSH,
	}
}

func cmdPlainSSH(ts *testscript.TestScript, neg bool, args []string) {
	alias := ""
	if len(args) == 3 && args[0] == "-host" {
		alias, args = args[1], args[2:]
	}
	if neg || len(args) != 1 {
		ts.Fatalf("usage: plain-ssh [-host ALIAS] NAME")
	}
	p := pathsOf(ts)
	key := p.key(args[0])
	if _, err := os.Stat(key); err != nil {
		ts.Fatalf("plain-ssh: no key for %s (ssh-user or keygen first)", args[0])
	}
	bin := filepath.Join(ts.Getenv("WORK"), ".plainssh")
	ts.Check(os.MkdirAll(bin, 0o755))
	known := p.knownHosts()
	var cfg strings.Builder
	if alias != "" {
		port := ts.Getenv("SSH_PORT")
		if port == "" {
			ts.Fatalf("plain-ssh -host: sshd-start first")
		}
		// The host key is known under the alias too, as it would be for a
		// real forge.example.
		b, err := os.ReadFile(p.knownHosts())
		ts.Check(err)
		f := strings.Fields(string(b))
		if len(f) < 3 {
			ts.Fatalf("plain-ssh: no host key in %s", p.knownHosts())
		}
		known = filepath.Join(bin, "known_hosts")
		ts.Check(os.WriteFile(known, []byte(fmt.Sprintf("%s\n[%s]:%s %s %s\n", strings.TrimSpace(string(b)), alias, port, f[1], f[2])), 0o644))
		fmt.Fprintf(&cfg, "Host %s\n\tHostName 127.0.0.1\n\tPort %s\n", alias, port)
	}
	fmt.Fprintf(&cfg, `Host *
	IdentityFile %s
	IdentitiesOnly yes
	UserKnownHostsFile %s
	StrictHostKeyChecking yes
	BatchMode yes
	LogLevel ERROR
`, key, known)
	conf := filepath.Join(bin, "ssh_config")
	ts.Check(os.WriteFile(conf, []byte(cfg.String()), 0o644))
	ssh := fmt.Sprintf(`#!/bin/sh
i=0; prev=
for a in "$@"; do
  case "$a" in git@*) a="root@${a#git@}";; esac
  [ "$prev" = -l ] && [ "$a" = git ] && a=root
  if [ $i = 0 ]; then set --; i=1; fi
  set -- "$@" "$a"; prev=$a
done
exec /usr/bin/ssh -F %s "$@"
`, shq(conf))
	ts.Check(os.WriteFile(filepath.Join(bin, "ssh"), []byte(ssh), 0o755))
	scp := fmt.Sprintf("#!/bin/sh\nexec /usr/bin/scp -F %s -S %s \"$@\"\n", shq(conf), shq(filepath.Join(bin, "ssh")))
	ts.Check(os.WriteFile(filepath.Join(bin, "scp"), []byte(scp), 0o755))
	if !strings.HasPrefix(ts.Getenv("PATH"), bin+string(os.PathListSeparator)) {
		ts.Setenv("PATH", bin+string(os.PathListSeparator)+ts.Getenv("PATH"))
	}
	si, err := filepath.Abs("../shell-integration")
	ts.Check(err)
	ts.Setenv("SHELL_INTEGRATION", si)
}
