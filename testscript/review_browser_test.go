package testscript

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// TestBrowserLineComments reviews in the browser, with scripts and with
// scripts turned off (the pages are server-rendered): click a line number,
// write a comment, save it as a draft (which bob cannot see), publish it
// with an approval, read bob's reply, resolve the thread; a comment on the
// old side; and a refused comment keeps its text. At 1280 and 390 pixels.
func TestBrowserLineComments(t *testing.T) {
	for _, scripts := range []bool{true, false} {
		t.Run(map[bool]string{true: "scripts", false: "no-scripts"}[scripts], func(t *testing.T) {
			lineComments(t, scripts)
		})
	}
}

func lineComments(t *testing.T, scripts bool) {
	f := newForge(t)
	ctx, dialogs := browser(t)
	if !scripts {
		do(t, ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
			return err
		}))
	}
	do(t, ctx, chromedp.EmulateViewport(1280, 900))
	signIn(t, ctx, f, "alice")

	work := filepath.Join(t.TempDir(), "work")
	bare := filepath.Join(f.root, "repos", "demo.git")
	f.git("", "init", "-q", "-b", "main", work)
	os.WriteFile(filepath.Join(work, "greet.txt"), []byte("hello\nworld\n"), 0o644)
	f.git(work, "add", ".")
	f.git(work, "commit", "-qm", "base")
	f.git(work, "push", "-q", bare, "main")
	os.WriteFile(filepath.Join(work, "greet.txt"), []byte("hello\nbrave new world\n"), 0o644)
	f.git(work, "commit", "-qam", "Greet the brave new world", "--trailer", "Patch: 00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee")
	f.git(work, "push", bare, "HEAD:refs/for/main")
	page := f.url + "/demo/-/patches/00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee"

	// Click new line 2, write, save as a draft.
	do(t, ctx,
		chromedp.Navigate(page),
		chromedp.Click(chromedp.CSS(`#diff a[href*="cs=new&cl=2"]`)),
		chromedp.WaitVisible(chromedp.CSS("#cform-body")),
		chromedp.SendKeys(chromedp.CSS("#cform-body"), "Why brave?"),
		chromedp.Click(chromedp.CSS("#cform-draft")),
		chromedp.WaitVisible(chromedp.CSS("#diff .comment.draft")),
	)
	if got := text(t, ctx, "#diff .comment.draft"); !strings.Contains(got, "Why brave?") || !strings.Contains(got, "greet.txt:2") {
		t.Fatalf("draft under line 2: %q", got)
	}
	// Reloaded, still a draft; bob does not see it.
	do(t, ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#diff .comment.draft")))
	if out := f.verb("bob", "patch show demo 00c0ffee --json"); strings.Contains(out, "Why brave?") {
		t.Fatalf("bob sees alice's draft: %s", out)
	}
	if !scripts {
		screenshot(t, ctx, "patch-draft")
	}

	// The Reply box publishes the draft with an approval, in one review.
	do(t, ctx,
		chromedp.SendKeys(chromedp.CSS("#review-body"), "Fine once answered."),
		chromedp.Click(chromedp.CSS("#review-approve")),
		chromedp.WaitNotPresent(chromedp.CSS("#diff .comment.draft")),
	)
	out := f.verb("bob", "patch show demo 00c0ffee --json")
	if !strings.Contains(out, "Why brave?") || !strings.Contains(out, `"verdict": "approve"`) || strings.Contains(out, `"draft": true`) {
		t.Fatalf("published review as bob sees it: %s", out)
	}
	// bob answers in the thread; alice reads it and resolves.
	var shown struct {
		Reviews []struct {
			ID     string  `json:"id"`
			Thread *string `json:"thread"`
		} `json:"reviews"`
	}
	if err := json.Unmarshal([]byte(out), &shown); err != nil || len(shown.Reviews) == 0 || shown.Reviews[0].Thread == nil {
		t.Fatalf("no thread: %v: %s", err, out)
	}
	root := shown.Reviews[0].ID
	f.verb("bob", "patch review demo 00c0ffee --comment --reply "+root+" --body 'Because it is.'")
	do(t, ctx, chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS("#t-"+root)))
	if got := text(t, ctx, "#t-"+root); !strings.Contains(got, "Because it is.") {
		t.Fatalf("thread without bob's reply: %q", got)
	}
	do(t, ctx, chromedp.Click(chromedp.CSS("#resolve-"+root)), chromedp.WaitVisible(chromedp.CSS("#resolved-"+root)))
	if out := f.verb("bob", "patch show demo 00c0ffee --json"); !strings.Contains(out, `"resolved": true`) {
		t.Fatalf("thread not resolved: %s", out)
	}

	// The old side: line 2 of the base.
	do(t, ctx,
		chromedp.Click(chromedp.CSS(`#diff a[href*="cs=old&cl=2"]`)),
		chromedp.WaitVisible(chromedp.CSS("#cform-body")),
		chromedp.SendKeys(chromedp.CSS("#cform-body"), "The old world was fine."),
		chromedp.Click(chromedp.CSS("#cform-comment")),
		chromedp.WaitVisible(chromedp.CSS("#diff .del + .inline-comment")),
	)
	if out := f.verb("bob", "patch show demo 00c0ffee --json"); !strings.Contains(out, `"side": "old"`) {
		t.Fatalf("no old-side comment: %s", out)
	}

	// A comment the forge refuses (here: a line the file lacks, as a
	// stale form would post) keeps its text, and says why, in place.
	do(t, ctx,
		chromedp.Navigate(page+"?rev=1&cf=1&cs=new&cl=2#cform"),
		chromedp.WaitVisible(chromedp.CSS("#cform-body")),
		chromedp.SetValue(chromedp.CSS(`#cform input[name="line"]`), "99"),
		chromedp.SendKeys(chromedp.CSS("#cform-body"), "Lost?"),
		chromedp.Click(chromedp.CSS("#cform-comment")),
		chromedp.WaitVisible(chromedp.CSS("#cform-error")),
	)
	if got := text(t, ctx, "#cform-error"); !strings.Contains(got, "line 99 is past the end of greet.txt") {
		t.Fatalf("refusal in place: %q", got)
	}
	typed, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS("#cform-body")))
	if err != nil || typed != "Lost?" {
		t.Fatalf("typed text after the refusal: %q (%v)", typed, err)
	}

	// On revision 2 the thread is outdated: listed with a link back to
	// revision 1, where it sits under its line.
	os.WriteFile(filepath.Join(work, "greet.txt"), []byte("hello\nbrave new world\nbye\n"), 0o644)
	f.git(work, "commit", "-qa", "--amend", "--no-edit")
	f.git(work, "push", bare, "HEAD:refs/for/main")
	do(t, ctx, chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS("#reviews a.outdated-link")))
	if got := text(t, ctx, "#r-"+root); !strings.Contains(got, "outdated") {
		t.Fatalf("outdated thread on revision 2: %q", got)
	}
	do(t, ctx, chromedp.Click(chromedp.CSS("#r-"+root+" a.outdated-link")), chromedp.WaitVisible(chromedp.CSS("#diff #r-"+root)))
	if got := text(t, ctx, "#diff-title"); got != "Revision 1" {
		t.Fatalf("the outdated link leads to %q", got)
	}

	do(t, ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(page+"?rev=1"), chromedp.WaitVisible(chromedp.CSS("#diff .thread")))
	if !scripts {
		screenshot(t, ctx, "patch-thread-phone")
	}
	if d := dialogs(); len(d) > 0 {
		t.Fatalf("dialogs opened: %q", d)
	}
}

// TestBrowserCommitAndDashboard follows a commit hash from the overview
// to its page (message, author, parents, diff) and on to its parent, and
// reads alice's dashboard: what asks for her review, her own patches,
// the issue she holds.
func TestBrowserCommitAndDashboard(t *testing.T) {
	f := newForge(t)
	ctx, dialogs := browser(t)
	do(t, ctx, chromedp.EmulateViewport(1280, 900))
	signIn(t, ctx, f, "alice")
	work := filepath.Join(t.TempDir(), "work")
	bare := filepath.Join(f.root, "repos", "demo.git")
	f.git("", "init", "-q", "-b", "main", work)
	os.WriteFile(filepath.Join(work, "greet.txt"), []byte("hello\n"), 0o644)
	f.git(work, "add", ".")
	f.git(work, "commit", "-qm", "First words")
	os.WriteFile(filepath.Join(work, "greet.txt"), []byte("hello\nworld\n"), 0o644)
	f.git(work, "commit", "-qam", "Second words", "-m", "A body line.")
	f.git(work, "push", "-q", bare, "main")

	do(t, ctx, chromedp.Navigate(f.url+"/demo"), chromedp.Click(chromedp.CSS(`a[href*="/-/commit/"]`)), chromedp.WaitVisible(chromedp.CSS("#commit-subject")))
	if got := text(t, ctx, "#commit-message"); !strings.Contains(got, "Second words") || !strings.Contains(got, "A body line.") {
		t.Fatalf("commit message: %q", got)
	}
	if got := text(t, ctx, "#diff"); !strings.Contains(got, "+world") {
		t.Fatalf("commit diff: %q", got)
	}
	screenshot(t, ctx, "commit")
	do(t, ctx, chromedp.Click(chromedp.CSS("#commit-parents a")), chromedp.WaitVisible(chromedp.CSS("#commit-subject")))
	if got := text(t, ctx, "#commit-subject"); got != "First words" {
		t.Fatalf("parent's page: %q", got)
	}
	if got := text(t, ctx, "#commit-parents"); !strings.Contains(got, "none") {
		t.Fatalf("the first commit's parents: %q", got)
	}

	// bob's patch asks alice to review; alice's own; an issue she holds.
	os.WriteFile(filepath.Join(work, "greet.txt"), []byte("hello\nbrave world\n"), 0o644)
	f.git(work, "commit", "-qam", "Be brave", "--trailer", "Patch: 00b0b00b0b00b0b00b0b00b0b00b0b00b0b00b0")
	f.git(work, "push", bare, "HEAD:refs/for/main")
	f.verb("bob", "patch reviewers demo 00b0b00b --add alice")
	f.git(work, "commit", "-q", "--allow-empty", "-m", "Alice's own", "--trailer", "Patch: 0a11ce0a11ce0a11ce0a11ce0a11ce0a11ce0a11")
	f.git(work, "push", bare, "HEAD:refs/for/main")
	f.verb("alice", "patch edit demo 0a11ce --title 'Alice at work'")
	issue := jsonField(t, f.verb("bob", "issue new demo --title 'Fix the door' --json"), "id")
	f.verb("alice", "issue claim demo "+issue)
	do(t, ctx, chromedp.Click(chromedp.CSS("#dashboard-link")), chromedp.WaitVisible(chromedp.CSS("#waiting")))
	if got := text(t, ctx, "#waiting"); !strings.Contains(got, "Be brave") || strings.Contains(got, "Alice at work") {
		t.Fatalf("waiting for review: %q", got)
	}
	if got := text(t, ctx, "#holding"); !strings.Contains(got, "Fix the door") || !strings.Contains(got, "open-ended") {
		t.Fatalf("issues held: %q", got)
	}
	screenshot(t, ctx, "dashboard")

	// Release and claim again from the issue page.
	do(t, ctx, chromedp.Navigate(f.url+"/demo/-/issues/"+issue), chromedp.Click(chromedp.CSS("#release")), chromedp.WaitVisible(chromedp.CSS("#claim")))
	if out := f.verb("bob", "issue show demo "+issue+" --json"); !strings.Contains(out, `"lease": null`) {
		t.Fatalf("released from the page, the forge still has a lease: %s", out)
	}
	do(t, ctx, chromedp.Click(chromedp.CSS("#claim")), chromedp.WaitVisible(chromedp.CSS("#lease-badge")))
	if got := text(t, ctx, "#lease-badge"); !strings.Contains(got, "assigned to alice") {
		t.Fatalf("claimed from the page: %q", got)
	}
	// Edit a patch's title, and mark it work in progress, from its page.
	do(t, ctx,
		chromedp.Navigate(f.url+"/demo/-/patches/0a11ce0a11ce0a11ce0a11ce0a11ce0a11ce0a11"),
		chromedp.Click(chromedp.CSS("#patch-edit summary")),
		chromedp.SetValue(chromedp.CSS("#edit-title"), "Alice, edited in the browser"),
		chromedp.Click(chromedp.CSS("#edit-save")),
		chromedp.WaitVisible(chromedp.CSS("#patch-edit:not([open])")),
	)
	if got := text(t, ctx, "#patch-title"); got != "Alice, edited in the browser" {
		t.Fatalf("title after the edit: %q", got)
	}
	do(t, ctx, chromedp.Click(chromedp.CSS("#mark-wip")), chromedp.WaitVisible(chromedp.CSS("#mark-ready")))
	if out := f.verb("bob", "patch show demo 0a11ce --json"); !strings.Contains(out, `"draft": true`) {
		t.Fatalf("not a draft after work in progress: %s", out)
	}
	do(t, ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(f.url+"/-/dashboard"), chromedp.WaitVisible(chromedp.CSS("#mine")))
	screenshot(t, ctx, "dashboard-phone")
	if d := dialogs(); len(d) > 0 {
		t.Fatalf("dialogs opened: %q", d)
	}
}

// TestBrowserKeys drives the patch page's keys: ? opens the list of keys,
// n moves to the next file, r puts the cursor in the review box; the
// page's own script is the only one it runs.
func TestBrowserKeys(t *testing.T) {
	f := newForge(t)
	ctx, dialogs := browser(t)
	do(t, ctx, chromedp.EmulateViewport(1280, 500))
	signIn(t, ctx, f, "alice")
	work := filepath.Join(t.TempDir(), "work")
	bare := filepath.Join(f.root, "repos", "demo.git")
	f.git("", "init", "-q", "-b", "main", work)
	f.git(work, "commit", "-q", "--allow-empty", "-m", "base")
	f.git(work, "push", "-q", bare, "main")
	for _, name := range []string{"a.txt", "b.txt", "c.txt"} {
		os.WriteFile(filepath.Join(work, name), []byte(strings.Repeat(name+"\n", 40)), 0o644)
	}
	f.git(work, "add", ".")
	f.git(work, "commit", "-qm", "Three files", "--trailer", "Patch: 0ce00ce00ce00ce00ce00ce00ce00ce00ce00ce0")
	f.git(work, "push", bare, "HEAD:refs/for/main")
	do(t, ctx, chromedp.Navigate(f.url+"/demo/-/patches/0ce00ce00ce00ce00ce00ce00ce00ce00ce00ce0"), chromedp.WaitVisible(chromedp.CSS("#diff")))
	eval := func(js string) any {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[any](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return v
	}
	do(t, ctx, chromedp.KeyEvent("?"))
	if open := eval(`document.getElementById("keys-help").open`); open != true {
		t.Fatalf("? did not open the list of keys: %v", open)
	}
	before := eval(`window.scrollTo(0, 0), window.scrollY`)
	do(t, ctx, chromedp.KeyEvent("n"), chromedp.KeyEvent("n"))
	if after := eval(`window.scrollY`); after == before {
		t.Fatalf("n did not move (scrollY %v)", after)
	}
	if top := eval(`Math.round(document.querySelectorAll(".dfile")[1].getBoundingClientRect().top)`); top != float64(0) {
		t.Fatalf("after n n the second file is at %v, want the top", top)
	}
	do(t, ctx, chromedp.KeyEvent("r"))
	if id := eval(`document.activeElement.id`); id != "review-body" {
		t.Fatalf("r focused %v", id)
	}
	if d := dialogs(); len(d) > 0 {
		t.Fatalf("dialogs opened: %q", d)
	}
}
