package ops

import (
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/git"
)

// TestStackOf splits a linear push into patches as Gerrit does: each
// commit with its own identity is a patch, trailer-less commits join the
// nearest descendant with one, neighbours naming one patch are one patch,
// and the same id further apart is refused.
func TestStackOf(t *testing.T) {
	const mb = "0000000000000000000000000000000000000b0b"
	oid := func(n byte) string { return strings.Repeat(string(rune('a'+n)), 40) }
	// commits are given bottom first, each "id" or "" (no trailer), or
	// "C:id" for a Change-Id.
	tests := []struct {
		name    string
		commits []string
		want    string // each segment as top:base, bottom first, or "error"
	}{
		{"one commit", []string{"p1"}, "a:mb"},
		{"no trailers", []string{"", "", ""}, "c:mb"},
		{"each its own", []string{"p1", "p2", "p3"}, "a:mb b:a c:b"},
		{"trailer-less join the one above", []string{"", "p1", "", "p2"}, "b:mb d:b"},
		{"a trailer-less tip is its own patch", []string{"p1", ""}, "a:mb b:a"},
		{"neighbours naming one patch", []string{"p1", "p1", "p2"}, "b:mb c:b"},
		{"Change-Id", []string{"C:I0123456789abcdef0123456789abcdef01234567", "p2"}, "a:mb b:a"},
		{"the same id apart", []string{"p1", "p2", "p1"}, "error"},
		{"the same id apart, tip first", []string{"p1", "", "p2", "p1"}, "error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := git.Pushed{New: map[string]bool{}, Commits: map[string]git.Commit{}, Boundary: []string{mb}}
			parent := mb
			for i, id := range tc.commits {
				c := git.Commit{OID: oid(byte(i)), Parents: []string{parent}}
				switch {
				case strings.HasPrefix(id, "C:"):
					c.ChangeID = []string{id[2:]}
				case id != "":
					c.Patch = []string{id}
				}
				p.New[c.OID], p.Commits[c.OID] = true, c
				p.Tip, parent = c, c.OID
			}
			segs, err := stackOf(p, mb)
			if tc.want == "error" {
				if err == nil {
					t.Fatalf("stackOf = %v, want an error", segs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			short := func(s string) string {
				if s == mb {
					return "mb"
				}
				return s[:1]
			}
			var got []string
			for _, s := range segs {
				got = append(got, short(s.top.OID)+":"+short(s.base))
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Errorf("segments %s, want %s", g, tc.want)
			}
			if !segs[len(segs)-1].tip {
				t.Error("the last segment is not the tip's")
			}
		})
	}
}
