package testscript

// Script commands that let a scenario read like a user's session (issue 11)
// instead of carrying copied shell helpers. Each runs the real program: a
// verb through sshd or the forced command, git, collab-hook, HTTP to the
// real collab-web.
//
// Commands that run something, with `!` as for exec (the run must fail)
// and -exit N for an exact exit code:
//
//	as [-exit N] [-save VAR] [-raw] NAME [WORD…]
//	    Runs a verb as principal NAME: over the real sshd with NAME's key
//	    when the script ran sshd-start (as `ssh-as` does), else through
//	    `collab-hook serve --as NAME` with SSH_ORIGINAL_COMMAND, exactly as
//	    sshd's forced command runs it. Each WORD is shell-quoted, so
//	    `as alice issue new demo --title 'Two words'` arrives as those six
//	    words; with -raw the one WORD is the command string as typed
//	    (`ssh host STRING`). No WORD: an interactive login (the greeting).
//	    `stdin FILE` before it feeds the verb's stdin. -save VAR sets $VAR
//	    to the id of what was made: the "id" of a JSON object printed, else
//	    the first 40-hex id in stdout.
//	git-as [-exit N] [-access 'LEVEL REPO'] NAME ARGS…
//	    Runs git as NAME: for ssh:// remotes ($GIT_URL) with NAME's ssh
//	    key over the real sshd when the script ran sshd-start, else
//	    through NAME's stand-in for ssh, which runs `collab-hook serve --as
//	    NAME` as sshd's forced command would (standIn); and
//	    COLLAB_PRINCIPAL=NAME for pushes to a repository path on this
//	    machine (the operator's local push), which the hooks take as the
//	    pusher. -access gives the
//	    hooks the account serve leaves them after checking access
//	    (COLLAB_ACCESS='LEVEL REPO NOW-MS'), stamped when git starts.
//	admin [-exit N] ARGS…
//	    The operator's `collab-hook ARGS…` on the script's root.
//	web [-H 'K: V']… METHOD PATH [BODY]
//	api [-H 'K: V']… NAME METHOD PATH [BODY]
//	    One request to $WEB_URL+PATH (see web-start in web_test.go), like
//	    http. api sends NAME's bearer token (made once per script with the
//	    `token new` verb) and, with a BODY, Content-Type: application/json
//	    unless a -H names another.
//
// Commands about values and output:
//
//	jq FILTER [FILE]
//	    The JSON of the last stdout (or FILE) satisfies FILTER (jq -e); with
//	    `!` it does not. $NAME in FILTER is the script's variable NAME
//	    (single-quote the filter: testscript leaves $ alone there), e.g.
//	    jq '.issues == [$I1] and .merge.by == "ada"'. stdout is unchanged.
//	capture VAR REGEXP [FILE]
//	    Sets $VAR to the first group (or the whole match) of REGEXP in the
//	    last stdout, or FILE (which may be `stderr`); fails when none.
//	rev-parse [-git-dir DIR] VAR REV
//	    Sets $VAR to `git rev-parse REV` in the current directory (or DIR).
//	prefix VAR N VALUE
//	    Sets $VAR to the first N characters of VALUE (an id prefix).
//	unescape VAR STRING
//	    Sets $VAR to STRING with Go's escapes decoded (\x1b, \u009b, \n…),
//	    so that a scenario can hold control characters without putting
//	    them raw into its file: unescape OSC0 '\x1b]0;pwned\x07'.
//	new-patch [-as NAME] [-save VAR] [-trailer] [-no-push] [-m PARAGRAPH]… [-o OPTION]… BRANCH BASE REMOTE
//	    What a developer does to propose a change, in the current work
//	    tree: fetch BASE from REMOTE, branch BRANCH off it, commit
//	    BRANCH.txt as "Patch BRANCH" with each -m as one more paragraph
//	    (and with -trailer a fresh `Patch:` trailer), then push it to
//	    refs/for/BASE with each -o as a push option (`git-as NAME` with
//	    -as). -save VAR sets $VAR to the patch's id. -no-push stops before
//	    the push. `!` expects the push to be refused.
//
// Commands that repeat another (CMD is exec, as, git-as, admin, web, api);
// {i} in its words becomes the run's number, 1 to N, and after that, $NAME
// in a word is expanded, so a single-quoted '$ISSUE{i}' names $ISSUE1,
// $ISSUE2, …:
//
//	repeat N CMD ARGS…
//	    N runs one after another, each checked as if alone; stdout and
//	    stderr are all of theirs in order. CMD may also be another command
//	    of the suite (e.g. new-patch), run as if written N times.
//	parallel N CMD ARGS…
//	    N runs at once (each its own process; no stdin), none checked:
//	    stdout starts with one line `exit C: K` per exit code C (K runs,
//	    lowest code first), then `--- run I: exit C` and that run's stdout
//	    for each; stderr has the same headers and each run's stderr.
//
// Timing (never a bare sleep; see timing_test.go): measure-login,
// wait-until, wait-for.

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

type scriptCmd = func(ts *testscript.TestScript, neg bool, args []string)

func sessionCmds() map[string]scriptCmd {
	m := map[string]scriptCmd{
		"new-patch": cmdNewPatch,
		"rev-parse": cmdRevParse,
		"prefix":    cmdPrefix,
		"unescape":  cmdUnescape,
		"capture":   cmdCapture,
		"jq":        cmdJQ,
		"repeat":    cmdRepeat,
		"parallel":  cmdParallel,
	}
	for _, name := range []string{"as", "git-as", "admin", "http", "web", "api"} {
		m[name] = runCmd(name)
	}
	return m
}

// A plan is one run of a command: a process, or an in-process request.
type plan struct {
	what  string        // the command line, for messages
	env   []string      // env(1) arguments before argv: KEY=VALUE or -u KEY
	argv  []string      // the process
	call  func() result // instead of a process: an HTTP request
	want  int           // the exit code -exit asks for, or -1
	after func(result)  // once the code is checked (-save)
}

// result is what a run gave. err means it did not run at all.
type result struct {
	stdout, stderr string
	code           int
	err            error
}

// planned reports whether planFor knows the command.
func planned(name string) bool {
	switch name {
	case "exec", "as", "git-as", "admin", "http", "web", "api":
		return true
	}
	return false
}

// planFor builds the plan of a command that runs something (args[0] is
// its name); repeat, parallel and wait-for run them too.
func planFor(ts *testscript.TestScript, args []string) plan {
	if len(args) == 0 {
		ts.Fatalf("missing command")
	}
	var p plan
	switch args[0] {
	case "exec":
		p = planExec(ts, args)
	case "as":
		p = planAs(ts, args)
	case "git-as":
		p = planGitAs(ts, args)
	case "admin":
		p = planAdmin(ts, args)
	case "http", "web", "api":
		p = planHTTP(ts, args)
	default:
		ts.Fatalf("%s: cannot be repeated or awaited (one of exec, as, git-as, admin, http, web, api)", args[0])
	}
	p.what = strings.Join(args, " ")
	return p
}

// runCmd is the script command for a planner: run, show, check.
func runCmd(name string) scriptCmd {
	return func(ts *testscript.TestScript, neg bool, args []string) {
		p := planFor(ts, append([]string{name}, args...))
		r := runPlan(ts, p)
		show(ts, p, r)
		check(ts, neg, p, r)
		if p.after != nil {
			p.after(r)
		}
	}
}

// runPlan runs p in the script's directory and environment; a process
// gets the stdin a `stdin` command set, and its output becomes the
// script's stdout and stderr as with exec.
func runPlan(ts *testscript.TestScript, p plan) result {
	if p.call != nil {
		return p.call()
	}
	argv := p.argv
	if len(p.env) > 0 {
		argv = append(append([]string{"env"}, p.env...), p.argv...)
	}
	err := ts.Exec(argv[0], argv[1:]...)
	r := result{stdout: ts.ReadFile("stdout"), stderr: ts.ReadFile("stderr")}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		r.err, r.code = err, -1
	}
	return r
}

// show makes an in-process run's output the script's stdout and stderr
// (a process's already is).
func show(ts *testscript.TestScript, p plan, r result) {
	if p.call != nil {
		_, _ = io.WriteString(ts.Stdout(), r.stdout)
		_, _ = io.WriteString(ts.Stderr(), r.stderr)
	}
}

func check(ts *testscript.TestScript, neg bool, p plan, r result) {
	switch {
	case r.err != nil:
		ts.Fatalf("%s: %v", p.what, r.err)
	case p.want == 0 && neg:
		ts.Fatalf("%s: ! with -exit 0", p.what)
	case p.want >= 0 && r.code != p.want:
		ts.Fatalf("%s: exit %d, want %d%s", p.what, r.code, p.want, clipOut(r))
	case p.want < 0 && neg && r.code == 0:
		ts.Fatalf("%s: succeeded, want a failure%s", p.what, clipOut(r))
	case p.want < 0 && !neg && r.code != 0:
		ts.Fatalf("%s: exit %d%s", p.what, r.code, clipOut(r))
	}
}

// clipOut is the start of a failed run's output, for its message.
func clipOut(r result) string {
	s := strings.TrimSpace(strings.TrimSpace(r.stderr) + "\n" + strings.TrimSpace(r.stdout))
	if s == "" {
		return ""
	}
	return ":\n" + clipText(s)
}

// flags parses the leading flags of a command; the rest are positional.
type flags struct {
	*flag.FlagSet
	ts    *testscript.TestScript
	usage string
}

func newFlags(ts *testscript.TestScript, usage string) *flags {
	fs := flag.NewFlagSet(usage, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &flags{FlagSet: fs, ts: ts, usage: usage}
}

func (f *flags) parse(args []string, min int) []string {
	if err := f.Parse(args); err != nil || f.NArg() < min {
		f.ts.Fatalf("usage: %s", f.usage)
	}
	return f.Args()
}

// list is a repeatable string flag.
type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(s string) error { *l = append(*l, s); return nil }

func planExec(ts *testscript.TestScript, args []string) plan {
	if len(args) < 2 {
		ts.Fatalf("usage: exec PROGRAM ARGS…")
	}
	return plan{argv: args[1:], want: -1}
}

func planAs(ts *testscript.TestScript, args []string) plan {
	f := newFlags(ts, "as [-exit N] [-save VAR] [-raw] NAME [WORD…]")
	want := f.Int("exit", -1, "")
	save := f.String("save", "", "")
	raw := f.Bool("raw", false, "")
	rest := f.parse(args[1:], 1)
	name, words := rest[0], rest[1:]
	var line string
	if *raw {
		if len(words) != 1 {
			ts.Fatalf("usage: as -raw NAME STRING")
		}
		line = words[0]
	} else {
		q := make([]string, len(words))
		for i, w := range words {
			q[i] = shq(w)
		}
		line = strings.Join(q, " ")
	}
	p := plan{want: *want}
	if ts.Getenv("SSH_PORT") != "" {
		w := filepath.Join(pathsOf(ts).bin, "ssh-"+name)
		if _, err := os.Stat(w); err != nil {
			ts.Fatalf("as: no key for %s (ssh-user or keygen first)", name)
		}
		p.argv = []string{w, "git@127.0.0.1"}
		if len(words) > 0 {
			p.argv = append(p.argv, line)
		}
	} else {
		p.env = []string{"-u", "SSH_ORIGINAL_COMMAND"}
		if len(words) > 0 {
			p.env = []string{"SSH_ORIGINAL_COMMAND=" + line}
		}
		p.argv = []string{"collab-hook", "serve", "--as", name}
	}
	if *save != "" {
		p.after = func(r result) {
			id := idIn(r.stdout)
			if id == "" {
				ts.Fatalf("as -save %s: no id in the output", *save)
			}
			ts.Setenv(*save, id)
		}
	}
	return p
}

var fullID = regexp.MustCompile(`\b[0-9a-f]{40}\b`)

// idIn finds the id of what a verb made in its output.
func idIn(out string) string {
	var obj struct {
		ID string `json:"id"`
	}
	if json.Unmarshal([]byte(out), &obj) == nil && obj.ID != "" {
		return obj.ID
	}
	return fullID.FindString(out)
}

func planGitAs(ts *testscript.TestScript, args []string) plan {
	f := newFlags(ts, "git-as [-exit N] [-access 'LEVEL REPO'] NAME ARGS…")
	want := f.Int("exit", -1, "")
	access := f.String("access", "", "")
	rest := f.parse(args[1:], 2)
	return gitAs(ts, rest[0], *access, *want, rest[1:])
}

func gitAs(ts *testscript.TestScript, name, access string, want int, args []string) plan {
	p := plan{want: want, env: []string{"COLLAB_PRINCIPAL=" + name}, argv: append([]string{"git"}, args...)}
	if w := filepath.Join(ts.Getenv("WORK"), ".sshbin", "ssh-"+name); ts.Getenv("SSH_PORT") != "" && fileExists(w) {
		p.env = append(p.env, "GIT_SSH_COMMAND="+w, "GIT_SSH_VARIANT=ssh")
		p.env = append(p.env, gitCredentials(ts, name)...)
	} else {
		p.env = append(p.env, "GIT_SSH_COMMAND="+standIn(ts, name), "GIT_SSH_VARIANT=ssh")
	}
	if access != "" {
		p.env = append(p.env, fmt.Sprintf("COLLAB_ACCESS=%s %d", access, time.Now().UnixMilli()))
	}
	return p
}

// standIn writes and returns the program git runs as ssh for NAME
// when no sshd runs: what sshd does for NAME's key, whose authorized_keys
// line forces `collab-hook --root ROOT serve --as NAME`. It runs that
// command with the command git asked for as SSH_ORIGINAL_COMMAND, in an
// environment as bare as the one sshd gives a forced command (no
// COLLAB_PRINCIPAL, nothing of the script's but serverEnv, as sshd-start's
// SetEnv passes them), so a push to $GIT_URL takes the path
// every ssh push takes: serve, its access check, the hand-off to the
// hooks, the relay.
func standIn(ts *testscript.TestScript, name string) string {
	dir := filepath.Join(ts.Getenv("WORK"), ".servebin")
	w := filepath.Join(dir, "ssh-"+name)
	home := filepath.Join(dir, "home")
	ts.Check(os.MkdirAll(home, 0o755))
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + shq(home), "USER=root", "LOGNAME=root",
		"SSH_CONNECTION='127.0.0.1 50000 127.0.0.1 22'", "SSH_CLIENT='127.0.0.1 50000 22'"}
	for _, k := range serverEnv {
		// Read when git runs it, as sshd's SetEnv would pass the value.
		env = append(env, fmt.Sprintf(`${%s:+%s="$%s"}`, k, k, k))
	}
	script := fmt.Sprintf("#!/bin/sh\n# %s's ssh to the forge without sshd: the forced command of its key.\nfor last; do :; done\nexec env -i %s SSH_ORIGINAL_COMMAND=\"$last\" %s --root %s serve --as %s\n",
		name, strings.Join(env, " "), shq(filepath.Join(ts.Getenv("BIN"), "collab-hook")), shq(ts.Getenv("ROOT")), shq(name))
	ts.Check(os.WriteFile(w, []byte(script), 0o755))
	return w
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func planAdmin(ts *testscript.TestScript, args []string) plan {
	f := newFlags(ts, "admin [-exit N] ARGS…")
	want := f.Int("exit", -1, "")
	rest := f.parse(args[1:], 1)
	return plan{want: *want, argv: append([]string{"collab-hook"}, rest...)}
}

func cmdJQ(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: jq FILTER [FILE]")
	}
	filter, in := args[0], "stdout"
	if len(args) == 2 {
		in = args[1]
	}
	data := ts.ReadFile(in)
	jqArgs := []string{"-e"}
	seen := map[string]bool{}
	for _, m := range jqVar.FindAllStringSubmatch(filter, -1) {
		n := m[1]
		if seen[n] || n == "ENV" || n == "__loc__" {
			continue
		}
		seen[n] = true
		jqArgs = append(jqArgs, "--arg", n, ts.Getenv(n))
	}
	cmd := exec.Command("jq", append(jqArgs, filter)...)
	cmd.Stdin = strings.NewReader(data)
	out, err := cmd.CombinedOutput()
	code := 0
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.ExitCode() == 1:
		code = 1 // false or null
	default:
		ts.Fatalf("jq %s: %v\n%s", filter, err, out)
	}
	if (code == 0) == neg {
		ts.Fatalf("jq %s is %v of %s:\n%s", filter, neg, in, clipText(data))
	}
}

var jqVar = regexp.MustCompile(`\$([A-Za-z_][A-Za-z0-9_]*)`)

func cmdCapture(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: capture VAR REGEXP [FILE]")
	}
	in := "stdout"
	if len(args) == 3 {
		in = args[2]
	}
	re, err := regexp.Compile("(?m)" + args[1])
	ts.Check(err)
	m := re.FindStringSubmatch(ts.ReadFile(in))
	switch {
	case m == nil:
		ts.Fatalf("capture: no match for %s in %s", args[1], in)
	case len(m) > 1:
		ts.Setenv(args[0], m[1])
	default:
		ts.Setenv(args[0], m[0])
	}
}

func cmdRevParse(ts *testscript.TestScript, neg bool, args []string) {
	f := newFlags(ts, "rev-parse [-git-dir DIR] VAR REV")
	gitDir := f.String("git-dir", "", "")
	rest := f.parse(args, 2)
	if neg || len(rest) != 2 {
		ts.Fatalf("usage: %s", f.usage)
	}
	git := []string{"rev-parse", "--verify", "-q", rest[1]}
	if *gitDir != "" {
		git = append([]string{"--git-dir", *gitDir}, git...)
	}
	cmd := exec.Command("git", git...)
	cmd.Dir, cmd.Env = ts.MkAbs("."), scriptEnviron(ts)
	out, err := cmd.Output()
	if err != nil {
		ts.Fatalf("rev-parse %s: no such revision", rest[1])
	}
	ts.Setenv(rest[0], strings.TrimSpace(string(out)))
}

func cmdPrefix(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: prefix VAR N VALUE")
	}
	n, err := strconv.Atoi(args[1])
	if err != nil || n < 0 || n > len(args[2]) {
		ts.Fatalf("prefix: bad length %q for %q", args[1], args[2])
	}
	ts.Setenv(args[0], args[2][:n])
}

func cmdUnescape(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: unescape VAR STRING")
	}
	v, err := strconv.Unquote(`"` + strings.ReplaceAll(args[1], `"`, `\"`) + `"`)
	if err != nil {
		ts.Fatalf("unescape: bad escapes in %q: %v", args[1], err)
	}
	ts.Setenv(args[0], v)
}

func cmdNewPatch(ts *testscript.TestScript, neg bool, args []string) {
	f := newFlags(ts, "new-patch [-as NAME] [-save VAR] [-trailer] [-no-push] [-m PARAGRAPH]… [-o OPTION]… BRANCH BASE REMOTE")
	as := f.String("as", "", "")
	save := f.String("save", "", "")
	trailer := f.Bool("trailer", false, "")
	noPush := f.Bool("no-push", false, "")
	var paras, opts list
	f.Var(&paras, "m", "")
	f.Var(&opts, "o", "")
	rest := f.parse(args, 3)
	if len(rest) != 3 || (neg && *noPush) {
		ts.Fatalf("usage: %s", f.usage)
	}
	branch, base, remote := rest[0], rest[1], rest[2]
	must := func(p plan) {
		p.what = strings.Join(p.argv, " ")
		r := runPlan(ts, p)
		check(ts, false, p, r)
	}
	git := func(args ...string) { must(plan{want: -1, argv: append([]string{"git"}, args...)}) }
	git("fetch", "-q", remote, base)
	git("checkout", "-q", "-B", branch, "FETCH_HEAD")
	ts.Check(os.WriteFile(ts.MkAbs(branch+".txt"), []byte(branch+"\n"), 0o644))
	git("add", branch+".txt")
	commit := []string{"commit", "-q", "-m", "Patch " + branch}
	for _, p := range paras {
		commit = append(commit, "-m", p)
	}
	id := ""
	if *trailer {
		b := make([]byte, 20)
		_, _ = rand.Read(b)
		id = hex.EncodeToString(b)
		commit = append(commit, "--trailer", "Patch: "+id)
	}
	git(commit...)
	if *noPush {
		return
	}
	push := []string{"push"}
	for _, o := range opts {
		push = append(push, "-o", o)
	}
	push = append(push, remote, "HEAD:refs/for/"+base)
	p := plan{want: -1, argv: append([]string{"git"}, push...)}
	if *as != "" {
		p = gitAs(ts, *as, "", -1, push)
	}
	p.what = "new-patch " + strings.Join(args, " ")
	r := runPlan(ts, p)
	check(ts, neg, p, r)
	if neg || *save == "" {
		return
	}
	if m := pushedPatch.FindStringSubmatch(r.stderr); m != nil {
		id = m[1]
	}
	if id == "" {
		ts.Fatalf("new-patch: no patch id in the push's output")
	}
	ts.Setenv(*save, id)
}

var pushedPatch = regexp.MustCompile(`patch ([0-9a-f]{8,64}) revision [0-9]+`)

// each expands {i} and then $NAME in args for run i.
func each(ts *testscript.TestScript, args []string, i int) []string {
	out := make([]string, len(args))
	for k, a := range args {
		a = strings.ReplaceAll(a, "{i}", strconv.Itoa(i))
		out[k] = os.Expand(a, ts.Getenv)
	}
	return out
}

func times(ts *testscript.TestScript, usage string, args []string) (int, []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: %s", usage)
	}
	n, err := strconv.Atoi(args[0])
	if err != nil || n < 1 {
		ts.Fatalf("usage: %s", usage)
	}
	return n, args[1:]
}

func cmdRepeat(ts *testscript.TestScript, neg bool, args []string) {
	n, cmd := times(ts, "repeat N CMD ARGS…", args)
	if neg {
		ts.Fatalf("unsupported: ! repeat (use -exit in the command)")
	}
	if !planned(cmd[0]) {
		// Another of the suite's commands (new-patch, …): run as written.
		f, ok := commands()[cmd[0]]
		if !ok {
			ts.Fatalf("repeat: unknown command %s", cmd[0])
		}
		for i := 1; i <= n; i++ {
			f(ts, false, each(ts, cmd, i)[1:])
		}
		return
	}
	var stdout, stderr strings.Builder
	for i := 1; i <= n; i++ {
		p := planFor(ts, each(ts, cmd, i))
		r := runPlan(ts, p)
		check(ts, false, p, r)
		if p.after != nil {
			p.after(r)
		}
		stdout.WriteString(r.stdout)
		stderr.WriteString(r.stderr)
	}
	_, _ = io.WriteString(ts.Stdout(), stdout.String())
	_, _ = io.WriteString(ts.Stderr(), stderr.String())
}

func cmdParallel(ts *testscript.TestScript, neg bool, args []string) {
	n, cmd := times(ts, "parallel N CMD ARGS…", args)
	if neg {
		ts.Fatalf("unsupported: ! parallel (check the exit summary)")
	}
	plans := make([]plan, n)
	for i := range plans {
		plans[i] = planFor(ts, each(ts, cmd, i+1))
	}
	env, dir := scriptEnviron(ts), ts.MkAbs(".")
	results := make([]result, n)
	var wg sync.WaitGroup
	for i, p := range plans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = runDetached(p, env, dir)
		}()
	}
	wg.Wait()
	codes := map[int]int{}
	for i, r := range results {
		if r.err != nil {
			ts.Fatalf("parallel run %d: %s: %v", i+1, plans[i].what, r.err)
		}
		codes[r.code]++
	}
	keys := make([]int, 0, len(codes))
	for c := range codes {
		keys = append(keys, c)
	}
	sort.Ints(keys)
	var stdout, stderr strings.Builder
	for _, c := range keys {
		fmt.Fprintf(&stdout, "exit %d: %d\n", c, codes[c])
	}
	for i, r := range results {
		fmt.Fprintf(&stdout, "--- run %d: exit %d\n%s", i+1, r.code, r.stdout)
		fmt.Fprintf(&stderr, "--- run %d: exit %d\n%s", i+1, r.code, r.stderr)
	}
	_, _ = io.WriteString(ts.Stdout(), stdout.String())
	_, _ = io.WriteString(ts.Stderr(), stderr.String())
	for i, p := range plans {
		if p.after != nil {
			p.after(results[i])
		}
	}
}

// runDetached runs p without touching the script (so that many can run at
// once): in dir, with env, no stdin.
func runDetached(p plan, env []string, dir string) result {
	if p.call != nil {
		return p.call()
	}
	argv := p.argv
	if len(p.env) > 0 {
		argv = append(append([]string{"env"}, p.env...), p.argv...)
	}
	path, err := lookPath(argv[0], env)
	if err != nil {
		return result{err: err, code: -1}
	}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		r.err, r.code = err, -1
	}
	return r
}

// lookPath finds a program on the PATH of env.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: not found on PATH", name)
}

// scriptEnv are the variables a detached run takes from the script: what
// setup and the commands here set, and what scripts set for the forge.
var scriptEnv = []string{
	"PATH", "HOME", "WORK", "TMPDIR", "ROOT", "COLLAB_ROOT", "BIN", "TZ",
	"GIT_CONFIG_NOSYSTEM", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL",
	"GIT_SSH_COMMAND", "GIT_SSH_VARIANT", "SSH_PORT", "SSH_URL", "WEB_URL",
	"COLLAB_URL", "COLLAB_PRINCIPAL", "COLLAB_JOURNAL_SOCKET", "COLLAB_MERGE_SCAN_BUDGET",
	"COLLAB_TOKEN",          // docs/web.md's agent keeps its token there
	"GOCACHE", "GOMODCACHE", // the runner's, for a doc's go build (goCache)
}

func scriptEnviron(ts *testscript.TestScript) []string {
	var env []string
	for _, k := range scriptEnv {
		if v := ts.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}
