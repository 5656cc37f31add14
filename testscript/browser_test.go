package testscript

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

const chromiumPath = "/usr/bin/chromium"

// forgeT is a forge root with a running collab-web, driven by the real
// binaries, for the browser tests.
type forgeT struct {
	t    *testing.T
	root string
	url  string
	home string
}

func (f *forgeT) hook(args ...string) string {
	f.t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "collab-hook"), append([]string{"--root", f.root}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		f.t.Fatalf("collab-hook %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// verb runs an SSH verb line as principal through the forced command,
// exactly as sshd would.
func (f *forgeT) verb(as, line string) string {
	f.t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "collab-hook"), "--root", f.root, "serve", "--as", as)
	cmd.Env = append(os.Environ(), "SSH_ORIGINAL_COMMAND="+line)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		f.t.Fatalf("verb %q as %s: %v\n%s%s", line, as, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

func (f *forgeT) git(dir string, args ...string) string {
	f.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+f.home, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@example.com", "GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		f.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func jsonField(t *testing.T, s, field string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("not JSON: %v: %s", err, s)
	}
	v, _ := m[field].(string)
	return v
}

func newForge(t *testing.T) *forgeT {
	t.Helper()
	dir := t.TempDir()
	f := &forgeT{t: t, root: filepath.Join(dir, "root"), home: filepath.Join(dir, "home")}
	os.MkdirAll(f.home, 0o755)
	os.WriteFile(filepath.Join(f.home, ".gitconfig"), []byte("[init]\n\tdefaultBranch = main\n"), 0o644)
	f.hook("init", "--url", "http://forge.test")
	f.hook("repo", "create", "demo", "--public")
	for _, u := range []string{"alice", "bob"} {
		f.hook("user", "add", u)
		f.hook("grant", u, "demo", "write")
	}
	addr, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "collab-web.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(binDir, "collab-web"), "--root", f.root, "--listen", addr)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		logf.Close()
	})
	f.url = "http://" + addr
	for deadline := time.Now().Add(patience); ; time.Sleep(25 * time.Millisecond) {
		res, err := http.Get(f.url + "/healthz")
		if err == nil {
			res.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("collab-web did not start: %v", err)
		}
	}
	return f
}

// browser starts headless Chromium and records every JavaScript dialog
// (an alert from an XSS payload would open one), accepting it so the page
// does not hang.
func browser(t *testing.T) (context.Context, func() []string) {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skip("chromium is not installed at " + chromiumPath)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelT(); cancelC(); cancelA() })
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1000, 1200)); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	var mu sync.Mutex
	var dialogs []string
	evs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range evs {
			if err != nil {
				return
			}
			mu.Lock()
			dialogs = append(dialogs, ev.Message)
			mu.Unlock()
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), dialogs...)
	}
}

func artifactDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("artifacts")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// screenshot saves a PNG of the viewport as a test artefact and checks it
// is a real picture: decodable, of the viewport's size, not one flat color.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	b, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("screenshot %s is not a PNG: %v", name, err)
	}
	bounds := img.Bounds()
	colors := map[uint32]bool{}
	for y := bounds.Min.Y; y < bounds.Max.Y; y += 7 {
		for x := bounds.Min.X; x < bounds.Max.X; x += 7 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colors[r>>8<<16|g>>8<<8|bl>>8] = true
		}
	}
	if bounds.Dx() < 300 || bounds.Dy() < 300 || len(colors) < 4 {
		t.Fatalf("screenshot %s looks empty: %v, %d colors", name, bounds, len(colors))
	}
	p := filepath.Join(artifactDir(t), name+".png")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s: %s (%d bytes, %dx%d)", name, p, len(b), bounds.Dx(), bounds.Dy())
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel), chromedp.NodeVisible))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		body, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
		t.Fatalf("browser at %s: %v\npage text: %.600s", loc, err, body)
	}
}

var issueURL = regexp.MustCompile(`/demo/-/issues/([0-9a-f]{40})$`)

func TestBrowserIssuesAndPatches(t *testing.T) {
	f := newForge(t)
	ctx, dialogs := browser(t)
	tok := jsonField(t, f.verb("alice", "token new --name browser --json"), "token")

	// Sign in with the token.
	do(t, ctx,
		chromedp.Navigate(f.url+"/login"),
		chromedp.SendKeys(chromedp.CSS("#token"), tok),
		chromedp.Click(chromedp.CSS("#signin")),
		chromedp.WaitVisible(chromedp.CSS("#who")),
	)
	if who := text(t, ctx, "#who"); who != "alice" {
		t.Fatalf("signed in as %q", who)
	}

	// File an issue from the form on the issues page.
	do(t, ctx,
		chromedp.Navigate(f.url+"/demo/-/issues"),
		chromedp.SendKeys(chromedp.CSS("#title"), "The button does nothing"),
		chromedp.SendKeys(chromedp.CSS("#body"), "Steps:\n\n1. click *it*"),
		chromedp.Click(chromedp.CSS("#file")),
		chromedp.WaitVisible(chromedp.CSS("#issue-title")),
	)
	if got := text(t, ctx, "#issue-title"); got != "The button does nothing" {
		t.Fatalf("issue title %q", got)
	}
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || !issueURL.MatchString(loc) {
		t.Fatalf("issue page at %q: %v", loc, err)
	}
	issueID := issueURL.FindStringSubmatch(loc)[1]
	if got := text(t, ctx, "#issue-body em"); got != "it" {
		t.Fatalf("markdown body: <em> holds %q", got)
	}

	// Comment, and see the comment appear.
	do(t, ctx,
		chromedp.SendKeys(chromedp.CSS("#comment-body"), "Reproduced on **main**."),
		chromedp.Click(chromedp.CSS("#comment")),
		chromedp.WaitVisible(chromedp.CSS("#comments .comment strong")),
	)
	if got := text(t, ctx, "#comments .comment strong"); got != "main" {
		t.Fatalf("comment shows %q", got)
	}
	// Label it from the page: the chips show, and one narrows the list.
	do(t, ctx,
		chromedp.SetValue(chromedp.CSS("#labels-input"), "bug ui:buttons"),
		chromedp.Click(chromedp.CSS("#set-labels")),
		chromedp.WaitVisible(chromedp.CSS("#issue-labels a.label")),
	)
	if got := text(t, ctx, "#issue-labels"); got != "bug ui:buttons" {
		t.Fatalf("label chips %q", got)
	}
	f.verb("bob", "issue new demo --title 'Unlabelled'")
	do(t, ctx, chromedp.Navigate(f.url+"/demo/-/issues"), chromedp.WaitVisible(chromedp.CSS("#issues a.label")),
		chromedp.Click(chromedp.CSS(`#issues a.label[href*="ui%3Abuttons"]`)), chromedp.WaitVisible(chromedp.CSS("#active-labels")))
	if got := text(t, ctx, "#issues"); !strings.Contains(got, "The button does nothing") || strings.Contains(got, "Unlabelled") {
		t.Fatalf("list filtered by ui:buttons: %q", got)
	}
	screenshot(t, ctx, "issues-labelled")
	do(t, ctx, chromedp.Navigate(f.url+"/demo/-/issues/"+issueID), chromedp.WaitVisible(chromedp.CSS("#issue-title")))
	screenshot(t, ctx, "issue")

	// Close it.
	do(t, ctx, chromedp.Click(chromedp.CSS("#close")), chromedp.WaitVisible(chromedp.CSS("#reopen")))
	if got := text(t, ctx, "#issue-state"); got != "closed" {
		t.Fatalf("state after close %q", got)
	}
	out := f.verb("bob", "issue show demo "+issueID+" --json")
	if !strings.Contains(out, `"state": "closed"`) || !strings.Contains(out, "Reproduced on **main**.") {
		t.Fatalf("the forge does not agree: %s", out)
	}

	// Leases taken over SSH show as badges on the list.
	claimed := jsonField(t, f.verb("bob", "issue new demo --title 'Claimed by an agent' --json"), "id")
	f.verb("bob", "lease acquire demo "+claimed+" --ttl 15m")
	assigned := jsonField(t, f.verb("alice", "issue new demo --title 'Assigned to a human' --json"), "id")
	f.verb("alice", "lease acquire demo "+assigned)
	do(t, ctx, chromedp.Navigate(f.url+"/demo/-/issues"), chromedp.WaitVisible(chromedp.CSS("#issues")))
	list := text(t, ctx, "#issues")
	if !regexp.MustCompile(`Claimed by an agent\s*claimed by bob until 20\d\d-\d\d-\d\d \d\d:\d\d UTC`).MatchString(list) {
		t.Fatalf("no timed lease badge in the list: %q", list)
	}
	if !regexp.MustCompile(`Assigned to a human\s*assigned to alice`).MatchString(list) {
		t.Fatalf("no open-ended lease badge in the list: %q", list)
	}
	screenshot(t, ctx, "issues")
	do(t, ctx, chromedp.Navigate(f.url+"/demo/-/issues/"+claimed), chromedp.WaitVisible(chromedp.CSS("#lease-badge")))
	if got := text(t, ctx, "#tenures"); !strings.Contains(got, "bob") || !strings.Contains(got, "live") {
		t.Fatalf("tenure history: %q", got)
	}
	do(t, ctx, chromedp.Navigate(f.url+"/demo/-/leases"), chromedp.WaitVisible(chromedp.CSS("#leases")))
	if got := text(t, ctx, "#leases"); !strings.Contains(got, "Claimed by an agent") || !strings.Contains(got, "open-ended") {
		t.Fatalf("leases page: %q", got)
	}

	// A patch with two revisions, pushed with plain git.
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
	os.WriteFile(filepath.Join(work, "greet.txt"), []byte("hello\nbrave new world\nbye\n"), 0o644)
	f.git(work, "commit", "-qa", "--amend", "--no-edit")
	f.git(work, "push", bare, "HEAD:refs/for/main")
	f.verb("bob", "patch review demo 00c0ffee --comment --file greet.txt --line 2 --body 'Why brave?'")

	do(t, ctx, chromedp.Navigate(f.url+"/demo/-/patches"), chromedp.WaitVisible(chromedp.CSS("#patches")))
	do(t, ctx, chromedp.Click(chromedp.CSS("#patches a.title")), chromedp.WaitVisible(chromedp.CSS("#diff")))
	if got := text(t, ctx, "#diff-title"); got != "Revision 2" {
		t.Fatalf("patch page opens on %q", got)
	}
	if got := text(t, ctx, "#diff"); !strings.Contains(got, "+bye") || !strings.Contains(got, "Why brave?") {
		t.Fatalf("revision 2 diff with its inline comment: %q", got)
	}
	screenshot(t, ctx, "patch")
	do(t, ctx, chromedp.Click(chromedp.CSS("#rev-1")), chromedp.WaitVisible(chromedp.CSS("#diff")))
	if got := text(t, ctx, "#diff-title"); got != "Revision 1" {
		t.Fatalf("after clicking revision 1: %q", got)
	}
	if got := text(t, ctx, "#diff"); !strings.Contains(got, "+brave new world") || strings.Contains(got, "+bye") {
		t.Fatalf("revision 1 diff: %q", got)
	}
	do(t, ctx, chromedp.Click(chromedp.CSS("#interdiff-2")), chromedp.WaitVisible(chromedp.CSS("#diff")))
	if got := text(t, ctx, "#diff-title"); got != "Interdiff 1 → 2" {
		t.Fatalf("after clicking the interdiff: %q", got)
	}
	if got := text(t, ctx, "#diff"); !strings.Contains(got, "+bye") || strings.Contains(got, "-world") {
		t.Fatalf("interdiff shows more than the author's change: %q", got)
	}
	// The same on a phone-sized screen.
	do(t, ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(f.url+"/demo/-/issues"), chromedp.WaitVisible(chromedp.CSS("#issues")))
	screenshot(t, ctx, "issues-phone")
	if d := dialogs(); len(d) > 0 {
		t.Fatalf("dialogs opened: %q", d)
	}
}

// xssPayloads are classic injection strings; each carries the marker
// "pwned" so that a surviving element can be found.
var xssPayloads = []string{
	`<script>alert("pwned-1")</script>`,
	`<img src=x onerror=alert("pwned-2") id=pwned2>`,
	`"><svg/onload=alert("pwned-3") id=pwned3>`,
	`<iframe src="javascript:alert('pwned-4')" id=pwned4></iframe>`,
	`[click me](javascript:alert("pwned-5"))`,
	`<a href="javascript:alert('pwned-6')" id=pwned6>x</a>`,
	`'-alert("pwned-7")-'`,
	`</textarea><script>alert("pwned-8")</script>`,
	`<details open ontoggle=alert("pwned-9") id=pwned9>`,
	`<style>@import "http://evil.test/pwned10.css";</style><b id=pwned10>`,
	`<object data="javascript:alert('pwned-11')" id=pwned11></object>`,
	`<math><mtext><table><mglyph><style><img src=x onerror=alert("pwned-12")>`,
	`![x](x" onerror="alert('pwned-13'))`,
	`<base href="javascript:alert('pwned-14')//">`,
	`{{.}} <<script>alert("pwned-15");//<</script>`,
}

// injected counts elements a payload could have planted: scripts (but
// the patch page's own keys.js), frames,
// objects, svg, any element with an event handler attribute, javascript:
// links, and anything whose id holds the marker.
const injected = `(() => {
  let n = document.querySelectorAll('script:not([src="/-/static/keys.js"]), iframe, object, embed, svg, base, style, math, [id*="pwned"]').length;
  for (const el of document.querySelectorAll('*')) {
    for (const a of el.attributes) {
      if (a.name.startsWith('on')) n++;
      if ((a.name === 'href' || a.name === 'src' || a.name === 'action' || a.name === 'data') && /^\s*javascript:/i.test(a.value)) n++;
    }
  }
  return n;
})()`

func TestBrowserHostileContent(t *testing.T) {
	f := newForge(t)
	ctx, dialogs := browser(t)
	tok := jsonField(t, f.verb("alice", "token new --name api --json"), "token")
	api := f.url + "/api/v1/repos/demo/issues"
	post := func(url, body string) string {
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(res.Body).Decode(&m)
		if res.StatusCode != 201 {
			t.Fatalf("POST %s: %d %v", url, res.StatusCode, m)
		}
		s, _ := m["id"].(string)
		return s
	}
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	var pages []string
	for i, p := range xssPayloads {
		id := post(api, fmt.Sprintf(`{"title":%s,"body":%s}`, q(p), q(p+"\n\n"+p)))
		post(api+"/"+id+"/comments", fmt.Sprintf(`{"body":%s}`, q(p)))
		if i%3 == 0 {
			f.verb("alice", "lease acquire demo "+id+" --ttl 10m")
		}
		pages = append(pages, "/demo/-/issues/"+id)
	}

	// File names and branch names from git itself.
	work := filepath.Join(t.TempDir(), "work")
	bare := filepath.Join(f.root, "repos", "demo.git")
	f.git("", "init", "-q", "-b", "main", work)
	os.WriteFile(filepath.Join(work, "README"), []byte("base\n"), 0o644)
	f.git(work, "add", ".")
	f.git(work, "commit", "-qm", "base")
	f.git(work, "push", "-q", bare, "main")
	branch := `"><svg/onload=alert("pwned-b")>`
	f.git(work, "push", "-q", bare, "main:refs/heads/"+branch)
	for _, name := range []string{`<img src=x onerror=alert("pwned-f")>.txt`, `"><script>alert("pwned-g")<`, `javascript:alert("pwned-h")`} {
		os.WriteFile(filepath.Join(work, name), []byte(xssPayloads[0]+"\n"+xssPayloads[1]+"\n"), 0o644)
	}
	f.git(work, "add", ".")
	f.git(work, "commit", "-qm", `<script>alert("pwned-c")</script>`, "-m", "Patch: 0bad0bad0bad0bad0bad0bad0bad0bad0bad0bad")
	f.git(work, "push", "-o", `title=<img src=x onerror=alert("pwned-t")>`, "-o", `description=<script>alert("pwned-d")</script>`, bare, "HEAD:refs/for/"+branch)
	f.verb("alice", `patch review demo 0bad0bad --comment --body '<script>alert("pwned-r")</script>'`)
	pages = append(pages, "/demo/-/issues", "/demo/-/issues?state=all&q=%3Cscript", "/demo/-/leases",
		"/demo/-/patches", "/demo/-/patches/0bad0bad0bad0bad0bad0bad0bad0bad0bad0bad", "/")

	for _, p := range pages {
		do(t, ctx, chromedp.Navigate(f.url+p), chromedp.WaitReady(chromedp.CSS("main")))
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](injected))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if n != 0 {
			html, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("main")))
			t.Fatalf("%s: %d injected elements or attributes:\n%s", p, n, html)
		}
		body := text(t, ctx, "main")
		if strings.Contains(p, "/issues/") && !strings.Contains(body, "pwned") {
			t.Fatalf("%s: the payload is not shown as text: %q", p, body)
		}
	}
	// The patch page shows the hostile title, branch and file names as text
	// (the file names as they are, unquoted from git's diff).
	do(t, ctx, chromedp.Navigate(f.url+"/demo/-/patches/0bad0bad0bad0bad0bad0bad0bad0bad0bad0bad"), chromedp.WaitVisible(chromedp.CSS("#diff")))
	body := text(t, ctx, "main")
	for _, want := range []string{`<img src=x onerror=alert("pwned-t")>`, branch, `<img src=x onerror=alert("pwned-f")>.txt`, `javascript:alert("pwned-h")`} {
		if !strings.Contains(body, want) {
			t.Errorf("patch page lacks %q as text", want)
		}
	}
	screenshot(t, ctx, "hostile-patch")
	if d := dialogs(); len(d) > 0 {
		t.Fatalf("a payload executed: dialogs %q", d)
	}
}
