package ids

import (
	"testing"

	"github.com/collab-forge/collab/internal/fault"
)

func TestNew(t *testing.T) {
	a, b := New(), New()
	if !Valid(a) || len(a) != GeneratedLen || a == b {
		t.Fatalf("New() = %q, %q", a, b)
	}
}

func TestValid(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"deadbeef", true},
		{"DEADBEEF", false},
		{"deadbee", false},
		{"00000000", false},
		{"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", true},
		{"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0", false},
		{"xyz12345", false},
	} {
		if got := Valid(tc.in); got != tc.want {
			t.Errorf("Valid(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestCheckPrefix(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"abcd", "abcd", true},
		{"ABCD", "abcd", true},
		{"abc", "", false},
		{"abcg", "", false},
		{"-abc", "", false},
	} {
		got, err := CheckPrefix(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("CheckPrefix(%q) = %q, %v", tc.in, got, err)
		}
		if err != nil && fault.ExitCode(err) != 2 {
			t.Errorf("CheckPrefix(%q) exit %d, want 2", tc.in, fault.ExitCode(err))
		}
	}
}
