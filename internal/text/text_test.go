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
