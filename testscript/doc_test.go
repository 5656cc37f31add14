package testscript

// Script commands that run a document's fenced code blocks as written, so
// that the commands the docs show are the commands a test runs (no second
// copy to drift):
//
//	doc-block [-replace OLD=NEW]… DOC LANG N FILE
//	    Writes the N-th (1 first) ```LANG block of DOC (a path from the
//	    repository's root, e.g. docs/agents.md) to FILE.
//	doc-sh [-bg] [-as NAME] [-replace OLD=NEW]… DOC N
//	    Runs the N-th ```sh block of DOC with `bash -eu` in the current
//	    directory and the script's environment; its output becomes the
//	    script's stdout and stderr, and it must exit 0 (`!`: must fail).
//	    -replace swaps a placeholder of the doc (a host name, a port) for
//	    this script's, in the order given. -as NAME makes `ssh` the
//	    wrapper ssh-NAME (see sshd_test.go) and git's ssh the same, so the
//	    block's `ssh git@HOST …` and ssh:// remotes log in as NAME. -bg is
//	    for a block that leaves a daemon running (`./bot &`): the block
//	    runs in its own process group with its output in doc-bg-N.log, and
//	    the group is killed when the script ends.
//	free-port VAR
//	    Sets $VAR to a free TCP port on 127.0.0.1.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// docTimeout bounds one block's run; blocks take seconds.
const docTimeout = 4 * time.Minute

func docCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"doc-block": cmdDocBlock,
		"doc-sh":    cmdDocSh,
		"free-port": func(ts *testscript.TestScript, neg bool, args []string) {
			if neg || len(args) != 1 {
				ts.Fatalf("usage: free-port VAR")
			}
			ts.Setenv(args[0], strconv.Itoa(sshFreePort(ts)))
		},
	}
}

// docBlocks returns the ```lang blocks of the document doc (a path from
// the repository's root; the tests run in testscript/).
func docBlocks(ts *testscript.TestScript, doc, lang string) []string {
	b, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(doc)))
	ts.Check(err)
	var blocks []string
	rest := string(b)
	for {
		_, after, ok := strings.Cut(rest, "```"+lang+"\n")
		if !ok {
			return blocks
		}
		block, after2, ok := strings.Cut(after, "```")
		if !ok {
			ts.Fatalf("%s: unterminated ```%s block", doc, lang)
		}
		blocks = append(blocks, block)
		rest = after2
	}
}

// docFlags reads the leading flags of doc-block and doc-sh.
type docFlags struct {
	bg       bool
	as       string
	replaces []string
}

func parseDocFlags(ts *testscript.TestScript, args []string) (docFlags, []string) {
	var f docFlags
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		switch args[0] {
		case "-bg":
			f.bg = true
		case "-as":
			if len(args) < 2 {
				ts.Fatalf("-as needs a NAME")
			}
			f.as, args = args[1], args[1:]
		case "-replace":
			if len(args) < 2 || !strings.Contains(args[1], "=") {
				ts.Fatalf("-replace needs OLD=NEW")
			}
			old, repl, _ := strings.Cut(args[1], "=")
			f.replaces, args = append(f.replaces, old, repl), args[1:]
		default:
			ts.Fatalf("unknown flag %s", args[0])
		}
		args = args[1:]
	}
	return f, args
}

func pick(ts *testscript.TestScript, f docFlags, doc, lang, n string) string {
	i, err := strconv.Atoi(n)
	blocks := docBlocks(ts, doc, lang)
	if err != nil || i < 1 || i > len(blocks) {
		ts.Fatalf("%s has %d ```%s blocks; no block %s", doc, len(blocks), lang, n)
	}
	if len(f.replaces) == 0 {
		return blocks[i-1]
	}
	out := blocks[i-1]
	for k := 0; k < len(f.replaces); k += 2 {
		if !strings.Contains(out, f.replaces[k]) {
			ts.Fatalf("%s block %d has no %q to replace", doc, i, f.replaces[k])
		}
		out = strings.ReplaceAll(out, f.replaces[k], f.replaces[k+1])
	}
	return out
}

func cmdDocBlock(ts *testscript.TestScript, neg bool, args []string) {
	f, args := parseDocFlags(ts, args)
	if neg || len(args) != 4 || f.bg || f.as != "" {
		ts.Fatalf("usage: doc-block [-replace OLD=NEW]… DOC LANG N FILE")
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[3]), []byte(pick(ts, f, args[0], args[1], args[2])), 0o644))
}

func cmdDocSh(ts *testscript.TestScript, neg bool, args []string) {
	f, args := parseDocFlags(ts, args)
	if len(args) != 2 || (neg && f.bg) {
		ts.Fatalf("usage: doc-sh [-bg] [-as NAME] [-replace OLD=NEW]… DOC N")
	}
	script := pick(ts, f, args[0], "sh", args[1])
	env := scriptEnviron(ts)
	if f.as != "" {
		wrapper := filepath.Join(pathsOf(ts).bin, "ssh-"+f.as)
		if _, err := os.Stat(wrapper); err != nil {
			ts.Fatalf("-as %s: no ssh wrapper (ssh-user %s first)", f.as, f.as)
		}
		bin := ts.MkAbs(".doc-ssh-" + f.as)
		ts.Check(os.MkdirAll(bin, 0o755))
		// The wrapper runs `ssh` itself: give it the PATH without this one.
		shim := "#!/bin/sh\nPATH=" + shq(ts.Getenv("PATH")) + "; export PATH\nexec " + shq(wrapper) + " \"$@\"\n"
		ts.Check(os.WriteFile(filepath.Join(bin, "ssh"), []byte(shim), 0o755))
		env = append(env, "PATH="+bin+string(os.PathListSeparator)+ts.Getenv("PATH"), "GIT_SSH_COMMAND="+wrapper, "GIT_SSH_VARIANT=ssh")
	}
	cmd := exec.Command("bash", "-euc", script)
	cmd.Dir, cmd.Env = ts.MkAbs("."), env
	// Its own process group, so that whatever the block starts is stopped
	// with it: at the script's end (-bg), else once it has exited, or when
	// it has run for docTimeout (a block that hangs fails, never the suite).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	kill := func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if f.bg {
		log, err := os.Create(ts.MkAbs("doc-bg-" + args[1] + ".log"))
		ts.Check(err)
		defer log.Close()
		cmd.Stdout, cmd.Stderr = log, log
		ts.Check(cmd.Start())
		ts.Defer(kill)
		timer := time.AfterFunc(docTimeout, kill)
		defer timer.Stop()
		if err := cmd.Wait(); err != nil {
			out, _ := os.ReadFile(log.Name())
			ts.Fatalf("%s block %s: %v\n%s", args[0], args[1], err, out)
		}
		return
	}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	ts.Check(cmd.Start())
	timer := time.AfterFunc(docTimeout, kill)
	err := cmd.Wait()
	timer.Stop()
	kill()
	fmt.Fprint(ts.Stdout(), stdout.String())
	fmt.Fprint(ts.Stderr(), stderr.String())
	switch {
	case err != nil && !neg:
		ts.Fatalf("%s block %s: %v\n%s", args[0], args[1], err, stderr.String())
	case err == nil && neg:
		ts.Fatalf("%s block %s succeeded unexpectedly", args[0], args[1])
	}
}
