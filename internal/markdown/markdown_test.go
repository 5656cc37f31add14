package markdown

import (
	"strings"
	"testing"
)

func link(r Ref) string { return "/" + strings.TrimSuffix(r.Repo, ".git") + "/-/ref/" + r.Prefix }

func TestRender(t *testing.T) {
	r := New(link)
	tests := []struct {
		name, in string
		want     []string // substrings that must appear
		never    []string // substrings that must not appear
		repo     string   // where it was written ("": nowhere)
	}{
		{"same repository", "see #abcd1234.", []string{`<a href="/org/home/-/ref/abcd1234"`, ">#abcd1234</a>."}, nil, "org/home.git"},
		{"same repository, not known", "see #abcd1234.", nil, []string{"/-/ref/"}, ""},
		{"entity", "&#1234; and &#x1234;", nil, []string{"/-/ref/"}, "org/home.git"},
		{"emphasis", "*hi* there", []string{"<em>hi</em>"}, nil, ""},
		{"script tag", "<script>alert(1)</script>", nil, []string{"<script", "alert(1)</script>"}, ""},
		{"img onerror", `<img src=x onerror=alert(1)>`, nil, []string{"onerror", "<img"}, ""},
		{"js link", `[x](javascript:alert(1))`, nil, []string{"javascript:"}, ""},
		{"data link", `[x](data:text/html;base64,PHNjcmlwdD4=)`, nil, []string{"data:text"}, ""},
		{"svg", `<svg onload=alert(1)>`, nil, []string{"<svg", "onload"}, ""},
		{"iframe", `<iframe src="https://evil"></iframe>`, nil, []string{"<iframe"}, ""},
		{"style attr", `<p style="background:url(x)">a</p>`, nil, []string{"style="}, ""},
		{"xref", "fixed in org/demo#abcd1234.", []string{`<a href="/org/demo/-/ref/abcd1234"`, ">org/demo#abcd1234</a>."}, nil, ""},
		{"xref start", "demo.git#abcd", []string{`href="/demo/-/ref/abcd"`}, nil, ""},
		{"upper-case prefix", "demo#ABCD1234", []string{`href="/demo/-/ref/abcd1234"`, ">demo#ABCD1234</a>"}, nil, ""},
		{"two xrefs", "a#abcd and b#1234", []string{`href="/a/-/ref/abcd"`, `href="/b/-/ref/1234"`}, nil, ""},
		{"xref in code", "`demo#abcd`", []string{"<code>demo#abcd</code>"}, []string{"/-/ref/"}, ""},
		{"bad repo name", "../x#abcd", nil, []string{"/-/ref/"}, ""},
		{"too short prefix", "demo#abc", nil, []string{"/-/ref/"}, ""},
		{"url fragment", "see https://x.test/demo#abcd", nil, []string{"/-/ref/"}, ""},
		{"link rel", "[a](https://x.test)", []string{`rel="nofollow`, "noreferrer"}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(r.Render(tt.repo, tt.in))
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("Render(%q) = %q, missing %q", tt.in, got, w)
				}
			}
			for _, n := range tt.never {
				if strings.Contains(got, n) {
					t.Errorf("Render(%q) = %q, holds %q", tt.in, got, n)
				}
			}
		})
	}
}

func TestCached(t *testing.T) {
	r := New(func(Ref) string { return "/x" }).WithCache(1 << 20)
	a := r.Cached("", "comment:1", "*one*")
	if string(a) != "<p><em>one</em></p>\n" {
		t.Fatalf("rendered %q", a)
	}
	if r.cache.Len() != 1 {
		t.Fatalf("cache holds %d entries, want 1", r.cache.Len())
	}
	if b := r.Cached("", "comment:1", "*one*"); b != a || r.cache.Len() != 1 {
		t.Fatalf("second render %q, %d entries", b, r.cache.Len())
	}
	// The same key with another body is another entry: never stale.
	if c := r.Cached("", "comment:1", "**two**"); string(c) != "<p><strong>two</strong></p>\n" {
		t.Fatalf("changed body rendered %q", c)
	}
	if r.cache.Len() != 2 {
		t.Fatalf("cache holds %d entries, want 2", r.cache.Len())
	}
}
