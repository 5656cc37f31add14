package push

import (
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/access"
)

func TestWriteChecked(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) string { return Checked(access.Write, "org/demo.git", now.Add(d)) }
	for _, tc := range []struct {
		principal, checked string
		want               bool
	}{
		{access.Local, "", true}, // the operator, pushing through a path
		{"alice", at(0), true},
		{"alice", at(-CheckedFresh), true},
		{"alice", Checked(access.Admin, "org/demo.git", now), true},
		{"alice", "", false},
		{"alice", Checked(access.Read, "org/demo.git", now), false},
		{"alice", Checked(access.None, "org/demo.git", now), false},
		{"alice", Checked(access.Write, "org/other.git", now), false},
		{"alice", at(-CheckedFresh - time.Millisecond), false}, // a long upload: ask again
		{"alice", at(time.Minute), false},                      // from the future
		{"alice", "write org/demo.git", false},
		{"alice", "write org/demo.git soon", false},
		{"alice", "owner org/demo.git 1", false},
		{"alice", "write  org/demo.git " + "x", false},
	} {
		if got := WriteChecked(tc.principal, tc.checked, "org/demo.git", now); got != tc.want {
			t.Errorf("WriteChecked(%q, %q) = %v, want %v", tc.principal, tc.checked, got, tc.want)
		}
	}
}
