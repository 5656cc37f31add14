package fsck

import (
	"strings"
	"testing"
)

func TestRefNames(t *testing.T) {
	oid := strings.Repeat("a", 40)
	for _, tc := range []struct {
		ref       string
		id, rev   string
		isRev     bool
		head      string
		isHeadRef bool
	}{
		{ref: "refs/collab/patches/1234abcd/rev/" + oid, id: "1234abcd", rev: oid, isRev: true},
		{ref: "refs/collab/patches/1234abcd/head", head: "1234abcd", isHeadRef: true},
		{ref: "refs/collab/patches/1234abcd/record"},
		{ref: "refs/collab/patches/1234abcd/rev/xyz"},
		{ref: "refs/collab/patches/a/b/head"},
		{ref: "refs/heads/main"},
		{ref: "refs/collab/issues/1234abcd"},
	} {
		id, rev, ok := revRefParts(tc.ref)
		if ok != tc.isRev || id != tc.id || rev != tc.rev {
			t.Errorf("revRefParts(%q) = %q %q %v", tc.ref, id, rev, ok)
		}
		h, ok := headRefPatch(tc.ref)
		if ok != tc.isHeadRef || (ok && h != tc.head) {
			t.Errorf("headRefPatch(%q) = %q %v", tc.ref, h, ok)
		}
	}
}
