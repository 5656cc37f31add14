package submit

import "testing"

func TestAddTrailers(t *testing.T) {
	tr := []string{"Patch: ab12", "Reviewed-by: bob"}
	for _, tc := range []struct{ in, want string }{
		{"Subject", "Subject\n\nPatch: ab12\nReviewed-by: bob\n"},
		{"Subject\n\nBody.\n", "Subject\n\nBody.\n\nPatch: ab12\nReviewed-by: bob\n"},
		{"Subject\n\nPatch: ab12\n", "Subject\n\nPatch: ab12\nReviewed-by: bob\n"},
		{"Subject\n\nBody\n\nFixes: 1234\nSigned-off-by: A <a@x>\n", "Subject\n\nBody\n\nFixes: 1234\nSigned-off-by: A <a@x>\nPatch: ab12\nReviewed-by: bob\n"},
		{"Subject\n\nNot: a trailer block\nbecause of this line", "Subject\n\nNot: a trailer block\nbecause of this line\n\nPatch: ab12\nReviewed-by: bob\n"},
		{"Patch: ab12", "Patch: ab12\n\nPatch: ab12\nReviewed-by: bob\n"}, // a subject is no trailer
		{"Subject\r\n\r\nPatch: ab12\r\n", "Subject\n\nPatch: ab12\nReviewed-by: bob\n"},
		{"", "Patch: ab12\nReviewed-by: bob\n"},
		// The author's forge-only footers are dropped, however written.
		{"Subject\n\nPatch: ab12\nReviewed-by: bob\n", "Subject\n\nPatch: ab12\nReviewed-by: bob\n"},
		{"Subject\n\nPatch: ab12\nreviewed-BY: mallory\nReviewed-on: http://evil\n", "Subject\n\nPatch: ab12\nReviewed-by: bob\n"},
		{"Subject\n\nBody\n\nReviewed-by : mallory\n\n    Reviewed-by: eve\n", "Subject\n\nBody\n\nPatch: ab12\nReviewed-by: bob\n"},
		{"Subject\n\nSee Reviewed-by: in the docs\n", "Subject\n\nSee Reviewed-by: in the docs\n\nPatch: ab12\nReviewed-by: bob\n"},
		{"Reviewed-by: x", "Reviewed-by: x\n\nPatch: ab12\nReviewed-by: bob\n"}, // a subject is kept
	} {
		if got := AddTrailers(tc.in, tr); got != tc.want {
			t.Errorf("AddTrailers(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
