package testscript

import (
	"fmt"
	"html"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserLoginCSRF: a page on another site that posts the sign-in
// form with its author's token (login CSRF) is refused in the real
// browser; the visitor stays signed out and never lands on the
// attacker's page. The forge's own form still signs in.
func TestBrowserLoginCSRF(t *testing.T) {
	f := newForge(t)
	ctx, _ := browser(t)
	tok := jsonField(t, f.verb("bob", "token new --name attacker --json"), "token")

	// The attacker's site: "localhost" is another site than the forge's
	// "127.0.0.1", as evil.example would be.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	evil := "http://localhost:" + fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
	var landed atomic.Int32
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if r.URL.Path == "/landed" {
			landed.Add(1)
			fmt.Fprint(w, "<p id=landed>landed</p>")
			return
		}
		fmt.Fprintf(w, `<form id=f method=post action="%s/login"><input type=hidden name=token value="%s"><input type=hidden name=next value="%s/landed">
<button id=prize>Claim your prize</button></form>`, html.EscapeString(f.url), html.EscapeString(tok), evil)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	// The attacker's page has no <main>: waiting for one waits for the
	// forge's answer to the forged post.
	do(t, ctx, chromedp.Navigate(evil+"/"), chromedp.Click(chromedp.CSS("#prize")), chromedp.WaitVisible(chromedp.CSS("main")))
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(loc, f.url+"/login") {
		t.Fatalf("the forged post ended at %s", loc)
	}
	if body := text(t, ctx, "main"); !strings.Contains(body, "refused") && !strings.Contains(body, "another site") {
		t.Fatalf("the forged post was not refused: %q", body)
	}
	screenshot(t, ctx, "login-csrf-refused")
	do(t, ctx, chromedp.Navigate(f.url+"/"), chromedp.WaitVisible(chromedp.CSS("main")))
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#who").length`)); err != nil || n != 0 {
		t.Fatalf("signed in by another site: %d %v", n, err)
	}
	if landed.Load() != 0 {
		t.Fatalf("the visitor landed on the attacker's page")
	}

	// The forge's own form, from its own page, signs in.
	do(t, ctx,
		chromedp.Navigate(f.url+"/login?next=/demo/-/issues"),
		chromedp.SendKeys(chromedp.CSS("#token"), tok),
		chromedp.Click(chromedp.CSS("#signin")),
		chromedp.WaitVisible(chromedp.CSS("#who")),
	)
	if who := text(t, ctx, "#who"); who != "bob" {
		t.Fatalf("signed in as %q", who)
	}
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); loc != f.url+"/demo/-/issues" {
		t.Fatalf("after sign-in at %s", loc)
	}
}
