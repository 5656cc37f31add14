package text

import (
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/fault"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		in   string
		kind fault.Kind
		ok   bool
	}{
		{"plain text ✓", 0, true},
		{"", 0, true},
		{strings.Repeat("x", 15), fault.TooLarge, false},
		{"bad \xff byte", fault.Usage, false},
		{"nul \x00 byte", fault.Usage, false},
	} {
		err := Check("body", tc.in, len("plain text ✓"))
		if tc.ok != (err == nil) || (err != nil && fault.KindOf(err) != tc.kind) {
			t.Errorf("Check(%q) = %v", tc.in, err)
		}
	}
}

func TestClip(t *testing.T) {
	long := strings.Repeat("a", 69) + "é" + "tail"
	for _, tc := range []struct{ in, want string }{
		{"short", "short"},
		{"a\nb\x00c\x7f", "a?b?c?"},
		{"bad \xff", "bad ?"},
		{long, strings.Repeat("a", 69) + "…"},
		{strings.Repeat("b", 80), strings.Repeat("b", 70) + "…"},
	} {
		if got := Clip(tc.in); got != tc.want {
			t.Errorf("Clip(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
