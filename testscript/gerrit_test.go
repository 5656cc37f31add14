package testscript

// Script commands for Gerrit's own client, git-review, which runs plain
// ssh and scp (and git, which runs plain ssh) with no way to pass a key:
//
//	gerrit-client NAME
//	    Puts ssh and scp wrappers first on PATH that log in with NAME's
//	    key (ssh-user or keygen first) and the test sshd's host key. They
//	    give ssh its config with -F, since OpenSSH reads ~/.ssh/config from
//	    the passwd home and not from $HOME, and scp runs ssh by its
//	    absolute path unless told -S. git@ (and scp's -l git) become root@,
//	    the test sshd's only login, as the other wrappers do. Sets
//	    $SHELL_INTEGRATION to the source tree's shell-integration/.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

func gerritCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"gerrit-client": cmdGerritClient,
	}
}

func cmdGerritClient(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: gerrit-client NAME")
	}
	p := pathsOf(ts)
	key := p.key(args[0])
	if _, err := os.Stat(key); err != nil {
		ts.Fatalf("gerrit-client: no key for %s (ssh-user or keygen first)", args[0])
	}
	bin := filepath.Join(ts.Getenv("WORK"), ".gerritbin")
	ts.Check(os.MkdirAll(bin, 0o755))
	cfg := filepath.Join(bin, "ssh_config")
	ts.Check(os.WriteFile(cfg, []byte(fmt.Sprintf(`Host *
	IdentityFile %s
	IdentitiesOnly yes
	UserKnownHostsFile %s
	StrictHostKeyChecking yes
	BatchMode yes
	LogLevel ERROR
`, key, p.knownHosts())), 0o644))
	ssh := fmt.Sprintf(`#!/bin/sh
i=0; prev=
for a in "$@"; do
  case "$a" in git@*) a="root@${a#git@}";; esac
  [ "$prev" = -l ] && [ "$a" = git ] && a=root
  if [ $i = 0 ]; then set --; i=1; fi
  set -- "$@" "$a"; prev=$a
done
exec /usr/bin/ssh -F %s "$@"
`, shq(cfg))
	ts.Check(os.WriteFile(filepath.Join(bin, "ssh"), []byte(ssh), 0o755))
	scp := fmt.Sprintf("#!/bin/sh\nexec /usr/bin/scp -F %s -S %s \"$@\"\n", shq(cfg), shq(filepath.Join(bin, "ssh")))
	ts.Check(os.WriteFile(filepath.Join(bin, "scp"), []byte(scp), 0o755))
	if !strings.HasPrefix(ts.Getenv("PATH"), bin+string(os.PathListSeparator)) {
		ts.Setenv("PATH", bin+string(os.PathListSeparator)+ts.Getenv("PATH"))
	}
	si, err := filepath.Abs("../shell-integration")
	ts.Check(err)
	ts.Setenv("SHELL_INTEGRATION", si)
}
