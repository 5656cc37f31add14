package collabref

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	oid := strings.Repeat("a", 40)
	id := "1234abcd"
	for _, tc := range []struct {
		ref  string
		want Ref
		ok   bool
	}{
		{RevRef(id, oid), Ref{Kind: Rev, ID: id, OID: oid}, true},
		{HeadRef(id), Ref{Kind: Head, ID: id}, true},
		{RecordRef(id), Ref{Kind: Record, ID: id}, true},
		{IssueRef(id), Ref{Kind: Issue, ID: id}, true},
		{RecoveredRef(id, oid), Ref{Kind: Recovered, ID: id, OID: oid}, true},
		{"refs/collab/patches/1234abcd/rev/xyz", Ref{}, false},
		{"refs/collab/patches/1234abcd/rev/" + oid + "/x", Ref{}, false},
		{"refs/collab/patches/a/b/head", Ref{}, false},
		{"refs/collab/patches/1234ABCD/head", Ref{}, false},
		{"refs/collab/patches/1234abcd/head/x", Ref{}, false},
		{"refs/collab/patches/1234abcd", Ref{}, false},
		{"refs/collab/issues/1234abcd/x", Ref{}, false},
		{"refs/heads/main", Ref{}, false},
		{"refs/collab/other", Ref{}, false},
	} {
		got, ok := Parse(tc.ref)
		if ok != tc.ok || got != tc.want {
			t.Errorf("Parse(%q) = %+v %v, want %+v %v", tc.ref, got, ok, tc.want, tc.ok)
		}
		if ok && got.String() != tc.ref {
			t.Errorf("Parse(%q).String() = %q", tc.ref, got.String())
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(RevRef("1234abcd", strings.Repeat("a", 40)))
	f.Add(HeadRef("1234abcd"))
	f.Add("refs/collab/issues/00000000")
	f.Fuzz(func(t *testing.T, ref string) {
		r, ok := Parse(ref)
		if ok != (r.Kind != Unknown) {
			t.Fatalf("Parse(%q) = %+v %v", ref, r, ok)
		}
		if ok && r.String() != ref {
			t.Fatalf("Parse(%q).String() = %q: not a round trip", ref, r.String())
		}
	})
}
