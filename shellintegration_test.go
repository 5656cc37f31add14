package collab_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// debianGitCommands are commands that Debian packages install as git-NAME
// on PATH (git runs them for "git NAME" ahead of any alias of that name):
// git-review's "git review" shadowed collab's old alias on exactly the
// machines of Gerrit users. The list holds what bookworm ships that is not
// installed here; the test also asks git and PATH about what is.
var debianGitCommands = []string{
	// Each its own package.
	"review", "lfs", "annex", "flow", "crypt", "filter-repo", "sizer", "absorb", "imerge", "revise",
	"publish", "cola", "dag", "crecord", "ftp", "big-picture", "restore-mtime", "evtag", "dpm",
	"remote-gcrypt", "secret", "quick-stats", "sh", "mediate", "repair", "autofixup", "hub", "phab",
	"pw", "cinnabar", "debrebase", "debpush", "deborig", "pbuilder", "buildpackage",
	// git's own optional packages (git-svn, git-cvs, git-email, git-gui…).
	"svn", "cvsimport", "cvsexportcommit", "cvsserver", "send-email", "gui", "citool", "p4",
	"archimport", "instaweb",
	// git-extras.
	"abort", "alias", "archive-file", "authors", "browse", "browse-ci", "brv", "bulk", "changelog",
	"clear", "clear-soft", "coauthor", "commits-since", "contrib", "count", "cp", "create-branch",
	"delete-branch", "delete-merged-branches", "delete-squashed-branches", "delete-submodule",
	"delete-tag", "delta", "effort", "extras", "feature", "force-clone", "fork", "fresh-branch",
	"gh-pages", "graft", "guilt", "ignore", "ignore-io", "info", "local-commits", "lock", "locked",
	"magic", "merge-into", "merge-repo", "missing", "mr", "obliterate", "paste", "pr", "psykorebase",
	"pull-request", "reauthor", "rebase-patch", "release", "rename-branch", "rename-file",
	"rename-remote", "rename-tag", "repl", "reset-file", "root", "rscp", "scp", "sed", "setup",
	"show-merged-branches", "show-tree", "show-unmerged-branches", "squash", "stamp", "standup",
	"summary", "sync", "touch", "undo", "unlock", "utimes",
}

// shipped is a name shell-integration/ defines: a git alias or a shell
// function or alias.
type shipped struct {
	file, name string
	git        bool // a git alias ("git NAME"), else a shell name
}

var (
	gitAliasSection = regexp.MustCompile(`(?i)^\s*\[alias\]`)
	shellFunc       = regexp.MustCompile(`^\s*(?:function\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*\(\)`)
	shellAlias      = regexp.MustCompile(`^\s*alias\s+([A-Za-z_][A-Za-z0-9_.-]*)=`)
)

// shippedNames reads every file of dir for git aliases (files with an
// [alias] section, read by git config itself) and shell functions and
// aliases. Helpers named _… are not commands anyone types.
func shippedNames(t *testing.T, dir string) []shipped {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []shipped
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		isGitConfig := false
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		for sc.Scan() {
			l := sc.Text()
			if gitAliasSection.MatchString(l) {
				isGitConfig = true
			}
			for _, re := range []*regexp.Regexp{shellFunc, shellAlias} {
				if m := re.FindStringSubmatch(l); m != nil && !strings.HasPrefix(m[1], "_") {
					out = append(out, shipped{file: e.Name(), name: m[1]})
				}
			}
		}
		if !isGitConfig {
			continue
		}
		cmd := exec.Command("git", "config", "--file", path, "--name-only", "--get-regexp", `^alias\.`)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
		names, err := cmd.Output()
		if err != nil {
			t.Fatalf("git config --file %s: %v", path, err)
		}
		for _, n := range strings.Fields(string(names)) {
			out = append(out, shipped{file: e.Name(), name: strings.TrimPrefix(n, "alias."), git: true})
		}
	}
	return out
}

// shadowed says why a shipped name is not what users get, or "".
// gitCommands are git's own and those on PATH (git --list-cmds),
// onPath looks an executable up.
func shadowed(s shipped, gitCommands []string, onPath func(string) bool) string {
	if s.git {
		switch {
		case slices.Contains(gitCommands, s.name):
			return "git runs its command git-" + s.name + " instead"
		case onPath("git-" + s.name):
			return "git-" + s.name + " is installed here and git runs it instead"
		case slices.Contains(debianGitCommands, s.name):
			return "a Debian package installs git-" + s.name + ", which git would run instead"
		}
		return ""
	}
	if onPath(s.name) {
		return s.name + " is a command installed here"
	}
	return ""
}

func gitCommands(t *testing.T) []string {
	out, err := exec.Command("git", "--list-cmds=main,others,alias,nohelpers").Output()
	if err != nil {
		t.Fatalf("git --list-cmds: %v", err)
	}
	return strings.Fields(string(out))
}

func onPath(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}

// No name shell-integration/ ships is shadowed by a command a package
// installs (the contract's "Client side"): no git alias that git would
// not run, no shell function hiding a command.
func TestShippedNamesNotShadowed(t *testing.T) {
	cmds := gitCommands(t)
	names := shippedNames(t, "shell-integration")
	if !slices.ContainsFunc(names, func(s shipped) bool { return s.name == "collab" }) {
		t.Errorf("shell-integration's names %v lack the collab function: the reader is broken", names)
	}
	for _, s := range names {
		if why := shadowed(s, cmds, onPath); why != "" {
			t.Errorf("shell-integration/%s ships %q, shadowed: %s", s.file, s.name, why)
		}
	}
}

// The check itself: the old "git review" alias is caught, whether or not
// git-review is installed here, and so are git's own commands and shell
// functions named after installed commands.
func TestShadowed(t *testing.T) {
	dir := t.TempDir()
	cfg := "[alias]\n\treview = \"!git push origin HEAD:refs/for/main\"\n\tlg = log --oneline\n\tstatus = status -s\n"
	if err := os.WriteFile(filepath.Join(dir, "gitconfig"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "x.bash"), []byte("ls() { command ls -F \"$@\"; }\nmine() { :; }\n_helper() { :; }\nalias grep='grep -n'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmds := gitCommands(t)
	nowhere := func(string) bool { return false }
	got := map[string]string{}
	for _, s := range shippedNames(t, dir) {
		got[s.name] = shadowed(s, cmds, onPath)
		if s.git && s.name == "review" && shadowed(s, cmds, nowhere) == "" {
			t.Errorf("review is shadowed only when git-review is installed")
		}
	}
	want := map[string]bool{"review": true, "lg": false, "status": true, "ls": true, "mine": false, "grep": true}
	for n, bad := range want {
		why, ok := got[n]
		if !ok || (why != "") != bad {
			t.Errorf("%s: shadowed %q, want shadowed=%v (names %v)", n, why, bad, got)
		}
	}
	if _, ok := got["_helper"]; ok {
		t.Errorf("a _helper counted as a command")
	}
}
