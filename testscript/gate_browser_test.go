package testscript

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// signIn signs the browser in with a new token of principal as.
func signIn(t *testing.T, ctx context.Context, f *forgeT, as string) {
	t.Helper()
	tok := jsonField(t, f.verb(as, "token new --name browser-"+as+" --json"), "token")
	do(t, ctx,
		chromedp.Navigate(f.url+"/login"),
		chromedp.SendKeys(chromedp.CSS("#token"), tok),
		chromedp.Click(chromedp.CSS("#signin")),
	)
	// Another principal may be signed in already: wait for this one.
	for deadline := time.Now().Add(patience); ; time.Sleep(50 * time.Millisecond) {
		who, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector("#who") || {}).textContent || ""`))
		if err == nil && strings.TrimSpace(who) == as {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not signed in as %s (%q, %v)", as, who, err)
		}
	}
}

// The patch page's submit box: each requirement with a tick or what is
// missing, each revision's checks, and a Submit button only for those who
// may submit and only when every requirement holds; pressing it merges,
// and the page then shows the patch merged.
func TestBrowserSubmit(t *testing.T) {
	f := newForge(t)
	ctx, dialogs := browser(t)
	f.hook("user", "add", "carol")
	f.hook("grant", "carol", "demo", "read")
	f.hook("user", "add", "ci")
	f.hook("grant", "ci", "demo", "write")
	f.hook("branch", "protect", "demo", "main", "--check", "ci/test")

	// alice pushes main (as the operator's local push may) and a patch.
	work := filepath.Join(f.home, "work")
	repo := filepath.Join(f.root, "repos", "demo.git")
	f.git(f.home, "init", "-q", "-b", "main", work)
	f.git(work, "commit", "-q", "--allow-empty", "-m", "init")
	f.git(work, "push", "-q", repo, "HEAD:refs/heads/main")
	f.git(work, "commit", "-q", "--allow-empty", "-m", "Make it better\n\nPatch: 5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed")
	f.git(work, "push", "-q", repo, "HEAD:refs/for/main")
	const id = "5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed"
	page := f.url + "/demo/-/patches/" + id

	// Signed out: the box shows what is missing, and no button.
	do(t, ctx, chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS("#submit-box")))
	box := text(t, ctx, "#submit-box")
	for _, want := range []string{"approvals", "0 of 1", "check:ci/test", "not reported", "mergeable"} {
		if !strings.Contains(box, want) {
			t.Fatalf("submit box lacks %q:\n%s", want, box)
		}
	}
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#submit-button").length`)); n != 0 {
		t.Fatal("a Submit button for a visitor")
	}

	// The bot posts its check, bob approves: every requirement holds.
	f.verb("ci", "patch check demo "+id+" ci/test --state success --url https://ci.example/runs/1 --summary 'all passed'")
	f.verb("bob", "patch review demo "+id+" --approve --body lgtm")

	// A reader sees the ticks but may not submit.
	signIn(t, ctx, f, "carol")
	do(t, ctx, chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS("#submit-box")))
	if box = text(t, ctx, "#submit-box"); !strings.Contains(box, "Ready to submit") {
		t.Fatalf("submit box when all holds:\n%s", box)
	}
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#submit-button").length`)); n != 0 {
		t.Fatal("a Submit button for a reader")
	}
	if checks := text(t, ctx, ".checks"); !strings.Contains(checks, "ci/test") || !strings.Contains(checks, "success") || !strings.Contains(checks, "all passed") {
		t.Fatalf("the revision's checks: %q", checks)
	}
	screenshot(t, ctx, "submit-box-reader")

	// bob (write) sees the button, presses it, and the page shows merged.
	signIn(t, ctx, f, "bob")
	do(t, ctx, chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS("#submit-button")))
	screenshot(t, ctx, "submit-box-writer")
	do(t, ctx, chromedp.Click(chromedp.CSS("#submit-button")), chromedp.WaitVisible(chromedp.CSS("#merge")))
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); loc != page {
		t.Fatalf("after submit at %s", loc)
	}
	if body := text(t, ctx, "main"); !strings.Contains(body, "merged") || !strings.Contains(body, "by bob") {
		t.Fatalf("the page after submit: %.600s", body)
	}
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#submit-button").length`)); n != 0 {
		t.Fatal("a Submit button on a merged patch")
	}
	screenshot(t, ctx, "submit-merged")
	if out := f.verb("bob", "patch show demo "+id+" --json"); !strings.Contains(out, `"submitted": true`) {
		t.Fatalf("not recorded as a submit: %s", out)
	}
	if d := dialogs(); len(d) != 0 {
		t.Fatalf("dialogs: %v", d)
	}
}
