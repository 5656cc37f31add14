package testscript

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/chromedp"
)

// consoleErrors records what the page's console and Chromium's log say at
// error or warning level (a CSP refusal is logged there), from now on.
func consoleErrors(t *testing.T, ctx context.Context) func() []string {
	t.Helper()
	var mu sync.Mutex
	var got []string
	evs := chromedp.Events(ctx, cdplog.EntryAdded)
	go func() {
		for ev, err := range evs {
			if err != nil {
				return
			}
			if e := ev.Entry; e != nil && !strings.HasSuffix(e.URL, "/favicon.ico") && (e.Level == cdplog.EntryLevelError || e.Level == cdplog.EntryLevelWarning || strings.Contains(e.Text, "Content Security Policy")) {
				mu.Lock()
				got = append(got, string(e.Level)+": "+e.Text+" ("+e.URL+")")
				mu.Unlock()
			}
		}
	}()
	if _, err := chromedp.Call(ctx, cdplog.Enable, struct{}{}); err != nil {
		t.Fatalf("enable the log domain: %v", err)
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// noSideScroll fails when the page is wider than the viewport: only code
// boxes may scroll sideways, inside themselves.
func noSideScroll(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	over, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth - window.innerWidth`))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if over > 0 {
		wide, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		  const w = window.innerWidth; const out = [];
		  for (const el of document.querySelectorAll('body *')) {
		    const r = el.getBoundingClientRect();
		    if (r.right > w + 1 && !el.closest('.blob, .diff, pre.cmd')) out.push(el.tagName + '.' + el.className + '#' + el.id + ' ' + Math.round(r.right));
		  }
		  return out.slice(0, 8).join('; ');
		})()`))
		t.Fatalf("%s scrolls sideways by %d px at this width: %s", name, over, wide)
	}
}

var styleAttr = regexp.MustCompile(`(?i)<[^>]+\sstyle\s*=`)

// TestBrowserCodePages walks the repository overview, tree, blob, commits
// and patch pages in Chromium at desktop and phone widths: key text,
// screenshots, no sideways scrolling, no inline style and no CSP report.
func TestBrowserCodePages(t *testing.T) {
	f := newForge(t)
	ctx, dialogs := browser(t)
	logged := consoleErrors(t, ctx)

	work := filepath.Join(t.TempDir(), "work")
	bare := filepath.Join(f.root, "repos", "demo.git")
	f.git("", "init", "-q", "-b", "main", work)
	files := map[string]string{
		"README.md":   "# Demo project\n\nA *demo* for the code pages.\n\n```go\nfunc main() {}\n```\n",
		"src/main.go": "package main\n\nimport \"fmt\"\n\n// main greets.\nfunc main() {\n\tfmt.Println(\"hello\")\n}\n",
		"docs/a-long-directory-name-that-wraps/notes.txt": "notes\n",
		`<img src=x onerror=alert("pwned-n")>.txt`:        "<script>alert(\"pwned-c\")</script>\n</pre><b id=pwned>bold</b>\n",
		"wide.go": "package main\n\nvar x = \"" + strings.Repeat("wide ", 80) + "\"\n",
	}
	for name, body := range files {
		p := filepath.Join(work, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	f.git(work, "add", ".")
	f.git(work, "commit", "-qm", "Start the demo", "-m", "The first commit, with a body.")
	for i := 0; i < 3; i++ {
		os.WriteFile(filepath.Join(work, "CHANGES"), []byte(strings.Repeat("change\n", i+1)), 0o644)
		f.git(work, "add", ".")
		f.git(work, "commit", "-qm", "Change number "+string(rune('1'+i)))
	}
	f.git(work, "push", "-q", bare, "main", "main:refs/heads/feature/slashed")
	// A patch of two revisions changing Go code, with an inline comment.
	os.WriteFile(filepath.Join(work, "src/main.go"), []byte("package main\n\nimport \"fmt\"\n\n// main greets the world.\nfunc main() {\n\tfmt.Println(\"hello, world\")\n}\n"), 0o644)
	f.git(work, "commit", "-qam", "Greet the world", "-m", "Longer explanation\nover two lines.", "--trailer", "Patch: 00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee")
	f.git(work, "push", "-q", bare, "HEAD:refs/for/main")
	os.WriteFile(filepath.Join(work, "src/main.go"), []byte("package main\n\nimport \"fmt\"\n\n// main greets the whole world.\nfunc main() {\n\tfmt.Println(\"hello, world\")\n\tfmt.Println(\"bye\")\n}\n"), 0o644)
	f.git(work, "commit", "-qa", "--amend", "--no-edit")
	f.git(work, "push", "-q", bare, "HEAD:refs/for/main")
	f.verb("bob", "patch review demo 00c0ffee --comment --file src/main.go --line 7 --body 'Why *hello*?'")

	// An issue with comments and a lease, fixed by a second patch that is
	// then merged: the merge closes it.
	issue := jsonField(t, f.verb("alice", "issue new demo --title 'Greeting is wrong' --body 'It says *hello*.' --json"), "id")
	f.verb("bob", "issue comment demo "+issue+" --body 'Confirmed.'")
	f.verb("alice", "issue comment demo "+issue+" --body 'On it.'")
	leased := jsonField(t, f.verb("alice", "issue new demo --title 'Claimed work' --json"), "id")
	f.verb("bob", "lease acquire demo "+leased+" --ttl 15m")
	f.git(work, "fetch", "-q", bare, "main")
	f.git(work, "checkout", "-q", "-B", "fix", "FETCH_HEAD")
	os.WriteFile(filepath.Join(work, "CHANGES"), []byte("fixed\n"), 0o644)
	f.git(work, "commit", "-qam", "Fix the greeting", "-m", "Fixes: "+issue+"\nPatch: 0f1e0f1e0f1e0f1e0f1e0f1e0f1e0f1e0f1e0f1e")
	f.git(work, "push", "-q", bare, "HEAD:refs/for/main")
	f.git(work, "push", "-q", bare, "HEAD:main")

	patch := "/demo/-/patches/00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee"
	pages := []struct {
		name, path, wait string
		want             map[string]string // selector → text it must hold
	}{
		{"overview", "/demo", "#readme", map[string]string{
			"#readme h1": "Demo project", "#clone": "git clone git@forge.test:demo.git", "#branches": "feature/slashed",
			"#commits": "Change number 3", "#counts": "1 open patch"}},
		{"tree", "/demo/-/tree/main", "#tree", map[string]string{"#tree": "src", "#readme": "demo for the code pages"}},
		{"tree-slashed", "/demo/-/tree/feature/slashed/src", "#tree", map[string]string{"#tree": "main.go"}},
		{"blob", "/demo/-/blob/main/src/main.go", "#blob", map[string]string{"#L6": "func main()", "#blob-meta": "8 lines"}},
		{"blob-hostile", "/demo/-/blob/main/%3Cimg%20src=x%20onerror=alert(%22pwned-n%22)%3E.txt", "#blob", map[string]string{
			"#blob": `<script>alert("pwned-c")</script>`, "#crumbs": `<img src=x onerror=alert("pwned-n")>.txt`}},
		{"blob-wide", "/demo/-/blob/main/wide.go", "#blob", map[string]string{"#L3": "wide wide"}},
		{"commits", "/demo/-/commits/main", "#commits", map[string]string{"#commits": "Start the demo"}},
		{"patch", patch, "#diff", map[string]string{"#diff": "+\tfmt.Println(\"bye\")", "#files": "src/main.go",
			"#revision-commits": "over two lines.", "#fetch": "git fetch git@forge.test:demo.git refs/collab/patches/00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee/rev/"}},
		{"patch-split", patch + "?view=split", "#diff", map[string]string{"#diff td.side-new": "Why hello?", "#view-switch a.on": "Side by side"}},
		{"interdiff-split", patch + "?from=1&to=2&view=split", "#diff", map[string]string{"#diff-title": "Interdiff 1 → 2", "#diff": "bye"}},
		{"issues", "/demo/-/issues?state=all", "#issues", map[string]string{"#issues": "2 comments"}},
		{"issue-closed", "/demo/-/issues/" + issue, "#closed-by", map[string]string{
			"#closed-by": "Closed by patch 0f1e0f1e0f (Fix the greeting), merged into main by local", "#comment-count": "2"}},
		{"patches", "/demo/-/patches?state=all", "#patches", map[string]string{"#patches": "2 revisions · no votes"}},
		{"leases", "/demo/-/leases", "#leases", map[string]string{"#leases": "Claimed work"}},
		{"repos", "/", "main", map[string]string{"main": "demo"}},
		{"login", "/login", "#token-hint", map[string]string{"#token-hint": "ssh git@forge.test token new --name browser"}},
	}
	for _, width := range []int64{1280, 390} {
		do(t, ctx, chromedp.EmulateViewport(width, 900))
		for _, p := range pages {
			do(t, ctx, chromedp.Navigate(f.url+p.path), chromedp.WaitVisible(chromedp.CSS(p.wait)))
			for sel, want := range p.want {
				if got := text(t, ctx, sel); !strings.Contains(got, want) {
					t.Errorf("%s at %d px: %s holds %q, want %q", p.name, width, sel, got, want)
				}
			}
			n, err := chromedp.Run(ctx, chromedp.Evaluate[int](injected))
			if err != nil || n != 0 {
				t.Fatalf("%s: %d injected elements (%v)", p.name, n, err)
			}
			noSideScroll(t, ctx, p.name)
			name := p.name
			if width < 500 {
				name += "-phone"
			}
			screenshot(t, ctx, "code-"+name)
			if p.wait == "#diff" { // a second picture, of the diff itself
				do(t, ctx, chromedp.ScrollIntoView(chromedp.CSS("#changes")))
				screenshot(t, ctx, "code-"+name+"-diff")
			}
		}
	}
	// The split view puts the inline comment on the new side, and the
	// switch back works without JavaScript (plain links).
	do(t, ctx, chromedp.Navigate(f.url+patch+"?view=split"), chromedp.WaitVisible(chromedp.CSS("#diff")),
		chromedp.Click(chromedp.CSS("#view-unified")), chromedp.WaitVisible(chromedp.CSS("#diff tr.inline-comment")))
	if got := text(t, ctx, "#view-switch a.on"); got != "Unified" {
		t.Fatalf("after the switch: %q", got)
	}
	// From the overview to a file in three clicks.
	do(t, ctx, chromedp.Navigate(f.url+"/demo"), chromedp.WaitVisible(chromedp.CSS("#counts")),
		chromedp.Click(chromedp.CSS(`#counts a[href$="/tree/main"]`)), chromedp.WaitVisible(chromedp.CSS("#tree")),
		chromedp.Click(chromedp.CSS(`#tree a[href$="/src"]`)), chromedp.WaitVisible(chromedp.CSS(`#tree a[href$="main.go"]`)),
		chromedp.Click(chromedp.CSS(`#tree a[href$="main.go"]`)), chromedp.WaitVisible(chromedp.CSS("#L1")))

	// Highlighted pages carry classes only: no style attribute anywhere.
	for _, p := range pages {
		res, err := http.Get(f.url + p.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if m := styleAttr.Find(b); m != nil {
			t.Errorf("%s has an inline style: %s", p.name, m)
		}
		if p.name == "blob" && !strings.Contains(string(b), `class="hl-`) {
			t.Errorf("the blob page is not highlighted")
		}
	}
	if l := logged(); len(l) > 0 {
		t.Fatalf("the console reported:\n%s", strings.Join(l, "\n"))
	}
	if d := dialogs(); len(d) > 0 {
		t.Fatalf("dialogs opened: %q", d)
	}
}
