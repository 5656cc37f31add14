package web

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var branchRE = regexp.MustCompile(`<li class="branch"><a class="title" href="[^"]+">([^<]+)</a>`)

// A repository with 250 branches (one of them with a 300 KB subject):
// the overview shows the default and the 99 most recently updated, a
// count and a link to the list, whose pages hold each branch once; every
// subject is cut.
func TestBranchesBounded(t *testing.T) {
	f := newFixture(t)
	bare := filepath.Join(f.root.ReposDir(), "org", "demo.git")
	huge := strings.Repeat("x", 300<<10)
	in := fmt.Sprintf("commit refs/heads/huge\ncommitter A <a@x> 1800000000 +0000\ndata %d\n%s\nfrom refs/heads/main\n\n", len(huge), huge)
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir = bare
	cmd.Stdin = strings.NewReader(in)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("fast-import: %v\n%s", err, out)
	}
	main := git(t, bare, "rev-parse", "main")
	var refs strings.Builder
	for i := 0; i < 247; i++ {
		fmt.Fprintf(&refs, "create refs/heads/b%03d %s\n", i, main)
	}
	cmd = exec.Command("git", "update-ref", "--stdin")
	cmd.Dir = bare
	cmd.Stdin = strings.NewReader(refs.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("update-ref: %v\n%s", err, out)
	}
	c := f.browser()
	st, body := get(t, c, f.srv.URL+"/org/demo")
	names := branchRE.FindAllStringSubmatch(body, -1)
	if st != 200 || len(names) != 100 || names[0][1] != "main" || names[1][1] != "huge" ||
		!strings.Contains(body, "The 100 most recently updated of 250 branches") || !strings.Contains(body, `href="/org/demo/-/branches" id="all-branches"`) {
		t.Fatalf("overview: %d, %d branches: %.3000s", st, len(names), body)
	}
	if len(body) > 100<<10 {
		t.Fatalf("overview of %d bytes", len(body))
	}
	seen := map[string]bool{}
	next := "/org/demo/-/branches"
	for pages := 0; next != ""; pages++ {
		if pages > 3 {
			t.Fatal("the pages do not end")
		}
		st, body := get(t, c, f.srv.URL+next)
		if st != 200 || len(body) > 100<<10 {
			t.Fatalf("%s: %d, %d bytes", next, st, len(body))
		}
		for _, m := range branchRE.FindAllStringSubmatch(body, -1) {
			if seen[m[1]] {
				t.Fatalf("%s: %s again", next, m[1])
			}
			seen[m[1]] = true
		}
		next = ""
		if m := regexp.MustCompile(`rel="next" href="([^"]+)"`).FindStringSubmatch(body); m != nil {
			next = m[1]
		}
	}
	if len(seen) != 250 {
		t.Fatalf("the pages list %d of 250 branches", len(seen))
	}
	if st, _ := get(t, c, f.srv.URL+"/org/demo/-/branches?page=0"); st != 400 {
		t.Fatalf("page 0: %d", st)
	}
	if st, _ := get(t, c, f.srv.URL+"/secret/-/branches"); st != 404 {
		t.Fatalf("a private repository's branches, anonymously: %d", st)
	}
}
