package pushcheck

import (
	"reflect"
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/git"
)

// FormatUpdates writes what ReadUpdates reads back, as git hands the hooks.
func TestFormatUpdates(t *testing.T) {
	a, b := strings.Repeat("a", 40), strings.Repeat("b", 40)
	for _, us := range [][]Update{
		nil,
		{{Old: git.ZeroOID, New: a, Ref: "refs/heads/main"}},
		{{Old: a, New: b, Ref: "refs/heads/main"}, {Old: b, New: git.ZeroOID, Ref: "refs/tags/v1"}},
	} {
		text := FormatUpdates(us)
		if len(us) > 0 && !strings.HasPrefix(text, us[0].Old+" "+us[0].New+" "+us[0].Ref+"\n") {
			t.Errorf("FormatUpdates(%v) = %q", us, text)
		}
		got, err := ReadUpdates(strings.NewReader(text))
		if err != nil || !reflect.DeepEqual(got, us) {
			t.Errorf("ReadUpdates(FormatUpdates(%v)) = %v, %v", us, got, err)
		}
	}
}

func TestHasFor(t *testing.T) {
	for _, tc := range []struct {
		refs []string
		want bool
	}{
		{nil, false},
		{[]string{"refs/heads/main", "refs/tags/v1"}, false},
		{[]string{"refs/heads/main", "refs/for/main%topic=t"}, true},
		{[]string{"refs/for/main"}, true},
	} {
		var us []Update
		for _, r := range tc.refs {
			us = append(us, Update{Old: git.ZeroOID, New: strings.Repeat("a", 40), Ref: r})
		}
		if got := HasFor(us); got != tc.want {
			t.Errorf("HasFor(%v) = %v, want %v", tc.refs, got, tc.want)
		}
	}
}
