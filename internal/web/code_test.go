package web

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/text"
)

// codeFixture adds a branch feature/x to org/demo with a README, a nested
// directory, a binary file, a file over browse.MaxBlob and a file whose
// name and content are hostile HTML.
func codeFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	work := filepath.Join(t.TempDir(), "w")
	bare := filepath.Join(f.root.ReposDir(), "org", "demo.git")
	git(t, "", "clone", "-q", "--no-local", "-b", "main", bare, work)
	files := map[string]string{
		"README.md":                       "# Demo\n\nSee *docs*.\n",
		"src/main.go":                     "package main\n\n// main says hi\nfunc main() { println(\"hi\") }\n",
		"bin.dat":                         "\x00\x01\x02binary",
		"big.txt":                         strings.Repeat("0123456789abcdef\n", (1<<20)/17+10),
		`<img src=x onerror=alert(1)>.go`: "<script>alert(\"pwned\")</script>\nvar x = `<b>`\n",
	}
	for name, body := range files {
		p := filepath.Join(work, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, work, "add", ".")
	git(t, work, "commit", "-qm", "Add files", "-m", "With a body.")
	git(t, bare, "fetch", "-q", work, "+HEAD:refs/heads/feature/x", "+HEAD:refs/heads/main")
	git(t, bare, "symbolic-ref", "HEAD", "refs/heads/main")
	return f
}

func TestCodePages(t *testing.T) {
	f := codeFixture(t)
	c := f.browser()
	u := f.srv.URL
	hostile := "%3Cimg%20src=x%20onerror=alert%281%29%3E.go"
	tests := []struct {
		path   string
		status int
		want   []string
		never  []string
	}{
		{"/org/demo", 200, []string{`id="readme"`, "<em>docs</em>", "git clone git@forge.test:org/demo.git", "git clone git://forge.test/org/demo.git",
			"feature/x", "Add files", `<b>0</b> open issues`, `<b>1</b> open patch`, "default"}, nil},
		{"/org/demo.git", 200, []string{`id="readme"`}, nil},
		{"/org/demo/-", 302, nil, nil},
		{"/org/demo/-/tree", 302, nil, nil},
		{"/org/demo/-/tree/main", 200, []string{"README.md", `href="/org/demo/-/tree/main/src"`, "bin.dat", "<em>docs</em>"}, nil},
		{"/org/demo/-/tree/feature/x/src", 200, []string{`href="/org/demo/-/blob/feature/x/src/main.go"`}, nil},
		{"/org/demo/-/tree/main/src/main.go", 302, nil, nil},
		{"/org/demo/-/tree/nope", 404, nil, nil},
		{"/org/demo/-/tree/main/nope", 404, nil, nil},
		{"/org/demo/-/tree/main/../secret", 301, nil, nil}, // cleaned by the router, then 404
		{"/org/demo/-/tree/--output=x", 404, nil, nil},
		{"/org/demo/-/tree/main:src", 404, nil, nil},
		{"/org/demo/-/blob/main/src/main.go", 200, []string{`id="L3"`, `href="#L3"`, `class="hl-`, `href="/org/demo/-/raw/main/src/main.go"`, "4 lines"}, []string{"style="}},
		{"/org/demo/-/blob/main/bin.dat", 200, []string{"Binary file", "Download it raw"}, []string{`id="L1"`}},
		{"/org/demo/-/blob/main/big.txt", 200, []string{"more than the 1.0 MiB shown here", "git show "}, []string{`id="L1"`}},
		{"/org/demo/-/blob/main/" + hostile, 200, []string{"&lt;", "pwned", "&lt;img src=x onerror=alert(1)&gt;.go"}, []string{"<script", "<img", "style="}},
		{"/org/demo/-/blob/main/src", 302, nil, nil},
		{"/org/demo/-/raw/main/src/main.go", 200, []string{"func main()"}, nil},
		{"/org/demo/-/commits/main", 200, []string{"Add files", "change"}, nil},
		{"/org/demo/-/commits", 302, nil, nil},
		{"/org/demo/-/commits/main?page=0", 400, nil, nil},
		{"/org/demo/-/commits/main?page=2", 200, []string{"Newer"}, []string{"Add files"}},
		{"/secret", 404, nil, nil},
		{"/secret/-/tree/main", 404, nil, nil},
		{"/secret/-/raw/main/x", 404, nil, nil},
		{"/-/static/highlight.css", 200, []string{".hl-chroma .hl-k"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			st, body := get(t, c, u+tt.path)
			if st != tt.status {
				t.Fatalf("status %d, want %d: %s", st, tt.status, text.Clip(body))
			}
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("page lacks %q:\n%s", w, body)
				}
			}
			for _, w := range tt.never {
				if strings.Contains(body, w) {
					t.Errorf("page holds %q", w)
				}
			}
		})
	}
	// Raw: text is text/plain, a binary file a download; neither is HTML.
	for _, tt := range []struct{ path, ctype, disp string }{
		{"/org/demo/-/raw/main/" + hostile, "text/plain; charset=utf-8", ""},
		{"/org/demo/-/raw/main/bin.dat", "application/octet-stream", "attachment; filename=bin.dat"},
	} {
		res, err := c.Get(u + tt.path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 200 || res.Header.Get("Content-Type") != tt.ctype || res.Header.Get("Content-Disposition") != tt.disp || res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: %d %v", tt.path, res.StatusCode, res.Header)
		}
	}
}
