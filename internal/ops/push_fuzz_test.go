package ops

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/pushcheck"
	"github.com/collab-forge/collab/internal/text"
)

// FuzzParseOptions: any push option either parses or is refused as bad
// usage with one line; what parses stays within the limits.
func FuzzParseOptions(f *testing.F) {
	for _, s := range []string{"title=A", "draft", "lease=abcd:7", "fixes=ABCD", "patch=-rf", "colour=red", "title=a\nb", "lease=0", "description="} {
		f.Add(s, "topic=t")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		o, err := pushcheck.ParseOptions([]string{a, b})
		if err != nil {
			if fault.KindOf(err) != fault.Usage || strings.Contains(fault.Public(err), "\n") {
				t.Fatalf("pushcheck.ParseOptions(%q, %q): %v", a, b, err)
			}
			return
		}
		for _, s := range []*string{o.Title, o.Topic} {
			if s != nil && (strings.ContainsFunc(*s, text.IsControl) || !utf8.ValidString(*s)) {
				t.Fatalf("pushcheck.ParseOptions(%q, %q): value %q", a, b, *s)
			}
		}
		if o.Title != nil && len(*o.Title) > pushcheck.MaxTitle || o.Topic != nil && len(*o.Topic) > pushcheck.MaxTopic {
			t.Fatalf("pushcheck.ParseOptions(%q, %q): over the limits", a, b)
		}
		if o.Patch != "" && strings.HasPrefix(o.Patch, "-") {
			t.Fatalf("pushcheck.ParseOptions(%q, %q): patch %q", a, b, o.Patch)
		}
		for _, l := range o.Leases {
			if l.Token <= 0 {
				t.Fatalf("pushcheck.ParseOptions(%q, %q): lease %+v", a, b, l)
			}
		}
	})
}

// FuzzTrailers: a commit message's trailers as git reports them and the
// title and description made from it. CheckTip either takes the commit or
// refuses it with one line; Subject and Body never grow the message, and
// the title is one line within its limit.
func FuzzTrailers(f *testing.F) {
	for _, s := range []string{"One\n\nPatch: 0123456789abcdef\n", "Two\n\nBody\n\nPatch: 00000000\nFixes: ab\n", "\n\n\n", "x\r\n\r\nKey: v", "Subject\n\nnot: a\ntrailer block\n"} {
		f.Add(s, "0123456789abcdef", "abcd")
	}
	f.Fuzz(func(t *testing.T, msg, patch, fixes string) {
		c := git.Commit{OID: strings.Repeat("a", 40), Message: []byte(msg)}
		if patch != "" {
			c.Patch = strings.Split(patch, ",")
		}
		if fixes != "" {
			c.Fixes = strings.Split(fixes, ",")
		}
		if err := CheckTip(c, 64<<10); err != nil {
			if fault.KindOf(err) != fault.Usage || strings.Contains(fault.Public(err), "\n") {
				t.Fatalf("CheckTip: %v", err)
			}
		}
		s := Subject(msg)
		if strings.ContainsFunc(s, text.IsControl) || len(s) > pushcheck.MaxTitle || (utf8.ValidString(msg) && !utf8.ValidString(s)) {
			t.Fatalf("Subject(%q) = %q", msg, s)
		}
		if b := Body(msg); len(b) > len(msg) {
			t.Fatalf("Body(%q) = %q", msg, b)
		}
	})
}
