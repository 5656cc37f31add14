package web

import (
	"context"
	"database/sql"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/store"
)

func TestSafeNext(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "/"},
		{"/", "/"},
		{"/org/demo/-/issues?state=all", "/org/demo/-/issues?state=all"},
		{"/org/demo/-/issues/ab#c-1", "/org/demo/-/issues/ab#c-1"},
		{"//evil.example/", "/"},
		{"/\\evil.example", "/"},
		{"/\t/evil.example", "/"}, // browsers drop the TAB: //evil.example
		{"/\n/evil.example", "/"},
		{"/%09/evil.example", "/"},
		{"/%2F/evil.example", "/"},
		{"/%5Cevil.example", "/"},
		{"/%0d%0aSet-Cookie:x=1", "/"},
		{"https://evil.example/", "/"},
		{"evil.example", "/"},
		{"/ok%20space", "/ok%20space"},
		{"/a\x7fb", "/"},
		{"/a\u0085b", "/"},
		{"/\xff", "/"},
		{"/%zz", "/"},
	}
	for _, tt := range tests {
		if got := safeNext(tt.in); got != tt.want {
			t.Errorf("safeNext(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzSafeNext: whatever comes in, what goes out is "/" or the input, and
// it is a path on this site however a browser reads it (control
// characters dropped, percent-decoded, backslashes as slashes).
func FuzzSafeNext(f *testing.F) {
	for _, s := range []string{"/", "/a/b?c=d#e", "//x", "/\\x", "/\t/x", "/%09/x", "/%2f%2fx", "http://x", "/\u2028", "/%E2%80%A8"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := safeNext(in)
		if out != "/" && out != in {
			t.Fatalf("safeNext(%q) = %q: neither the input nor /", in, out)
		}
		for _, form := range []string{out, browserReads(out)} {
			if d, err := url.PathUnescape(form); err == nil {
				form = d
			}
			form = strings.ReplaceAll(form, "\\", "/")
			if !strings.HasPrefix(form, "/") || strings.HasPrefix(form, "//") {
				t.Fatalf("safeNext(%q) = %q, read by a browser as %q: not a local path", in, out, form)
			}
			u, err := url.Parse(browserReads(out))
			if err == nil && (u.Host != "" || u.Scheme != "") {
				t.Fatalf("safeNext(%q) = %q names host %q scheme %q", in, out, u.Host, u.Scheme)
			}
			if !utf8.ValidString(out) {
				t.Fatalf("safeNext(%q) = %q is not UTF-8", in, out)
			}
		}
	})
}

// browserReads is a URL as the WHATWG parser takes it: leading and
// trailing C0 controls and spaces trimmed, ASCII tab and newline removed.
func browserReads(s string) string {
	s = strings.TrimFunc(s, func(r rune) bool { return r <= 0x20 })
	return strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(s)
}

// The sign-in post refuses what a forged cross-site login sends: no or a
// wrong CSRF token, Origin null or foreign, Sec-Fetch-Site cross-site or
// same-site; and redirects only to local paths (the TAB case above).
func TestLoginRefusals(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name     string
		csrf     string // "ok": the page's token; "": none
		hdr      map[string]string
		next     string
		status   int
		location string
	}{
		{"plain", "ok", nil, "/org/demo", 303, "/org/demo"},
		{"same origin", "ok", map[string]string{"Sec-Fetch-Site": "same-origin"}, "/org/demo", 303, "/org/demo"},
		{"no CSRF token", "", nil, "", 403, ""},
		{"wrong CSRF token", "x", nil, "", 403, ""},
		{"Origin null", "ok", map[string]string{"Origin": "null"}, "", 403, ""},
		{"foreign Origin", "ok", map[string]string{"Origin": "https://evil.example"}, "", 403, ""},
		{"cross-site", "ok", map[string]string{"Sec-Fetch-Site": "cross-site"}, "", 403, ""},
		{"same-site", "ok", map[string]string{"Sec-Fetch-Site": "same-site"}, "", 403, ""},
		{"TAB redirect", "ok", nil, "/\t/evil.example", 303, "/"},
		{"encoded TAB redirect", "ok", nil, "/%09/evil.example", 303, "/"},
		{"backslash redirect", "ok", nil, "/\\evil.example", 303, "/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := f.browser()
			_, page := get(t, c, f.srv.URL+"/login")
			form := url.Values{"token": {f.tok["alice"]}, "next": {tt.next}}
			switch tt.csrf {
			case "ok":
				form.Set("csrf", csrfRE.FindStringSubmatch(page)[1])
			case "":
			default:
				form.Set("csrf", tt.csrf)
			}
			res, body := post(t, c, f.srv.URL+"/login", form, tt.hdr)
			if res.StatusCode != tt.status || res.Header.Get("Location") != tt.location {
				t.Fatalf("status %d Location %q, want %d %q: %.200s", res.StatusCode, res.Header.Get("Location"), tt.status, tt.location, body)
			}
			signedIn := false
			for _, ck := range res.Cookies() {
				signedIn = signedIn || (ck.Name == SessionCookie && ck.Value != "")
			}
			if signedIn != (tt.status == 303) {
				t.Fatalf("session cookie set: %v", signedIn)
			}
		})
	}
}

// The sign-in page's hint is the configured ssh command, not a stand-in.
func TestLoginHint(t *testing.T) {
	f := newFixture(t)
	c := f.browser()
	if _, page := get(t, c, f.srv.URL+"/login"); !strings.Contains(page, "ssh git@forge.test token new --name browser") {
		t.Fatalf("hint without an ssh setting: %s", page)
	}
	err := f.db.Write(context.Background(), func(tx *sql.Tx) error {
		return store.SetSetting(context.Background(), tx, forge.SettingSSH, "ssh://git@code.example:2222")
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, page := get(t, c, f.srv.URL+"/login"); !strings.Contains(page, "ssh -p 2222 git@code.example token new --name browser") {
		t.Fatalf("hint with the ssh setting: %s", page)
	}
	if _, page := get(t, c, f.srv.URL+"/org/demo"); !strings.Contains(page, "git clone ssh://git@code.example:2222/org/demo.git") || !strings.Contains(page, "git clone git://code.example/org/demo.git") {
		t.Fatalf("clone commands with the ssh setting: %s", page)
	}
}
