package labels

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/fault"
)

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		label string
		ok    bool
	}{
		{"bug", true},
		{"prio:high", true},
		{"0", true},
		{"a.b_c-d:e", true},
		{strings.Repeat("x", 50), true},
		{strings.Repeat("x", 51), false},
		{"", false},
		{"Bug", false},
		{"-bug", false},
		{":bug", false},
		{".bug", false},
		{"bug fix", false},
		{"bug\n", false},
		{"bug/fix", false},
		{"ünï", false},
		{"a\x00", false},
		{"A", false},
		{"z9", true},
		{"9-", true},
		{"_x", false},
	} {
		err := Check(c.label)
		if (err == nil) != c.ok {
			t.Errorf("Check(%q) = %v, want ok=%v", c.label, err, c.ok)
		}
		if err != nil && (fault.KindOf(err) != fault.Usage || strings.Contains(fault.As(err).Msg, "\n")) {
			t.Errorf("Check(%q): %v", c.label, err)
		}
	}
}

func TestSet(t *testing.T) {
	got, err := Set([]string{"b", "a", "b"})
	if err != nil || !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Fatalf("Set = %v, %v", got, err)
	}
	if got, err := Set(nil); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("Set(nil) = %#v, %v", got, err)
	}
	var many []string
	for i := 0; i < Max; i++ {
		many = append(many, fmt.Sprint("l", i), fmt.Sprint("l", i)) // duplicates do not count
	}
	if _, err := Set(many); err != nil {
		t.Fatalf("%d distinct: %v", Max, err)
	}
	if _, err := Set(append(many, "one-more")); fault.KindOf(err) != fault.Usage {
		t.Fatalf("%d distinct: %v", Max+1, err)
	}
}

func TestEdit(t *testing.T) {
	full := make([]string, Max)
	for i := range full {
		full[i] = fmt.Sprintf("l%02d", i)
	}
	for i, c := range []struct {
		cur, add, remove     []string
		next, added, removed []string
		bad                  bool
	}{
		{nil, []string{"b", "a"}, nil, []string{"a", "b"}, []string{"a", "b"}, []string{}, false},
		{[]string{"a", "b"}, []string{"a"}, []string{"c"}, []string{"a", "b"}, []string{}, []string{}, false},
		{[]string{"a", "b"}, []string{"c"}, []string{"a"}, []string{"b", "c"}, []string{"c"}, []string{"a"}, false},
		{[]string{"a"}, []string{"x"}, []string{"x"}, nil, nil, nil, true},
		{[]string{"a"}, []string{"X"}, nil, nil, nil, nil, true},
		{full, []string{"new"}, nil, nil, nil, nil, true},
		{full, []string{"new"}, []string{"l00"}, append(append([]string{}, full[1:]...), "new"), []string{"new"}, []string{"l00"}, false},
		{full, nil, []string{"l49"}, full[:49], []string{}, []string{"l49"}, false},
	} {
		next, added, removed, err := Edit(c.cur, c.add, c.remove)
		if c.bad {
			if fault.KindOf(err) != fault.Usage {
				t.Errorf("case %d: %v, want a usage refusal", i, err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(next, c.next) || !reflect.DeepEqual(added, c.added) || !reflect.DeepEqual(removed, c.removed) {
			t.Errorf("case %d: %v +%v -%v %v", i, next, added, removed, err)
		}
	}
}

func TestDiff(t *testing.T) {
	added, removed := Diff([]string{"a", "b", "c"}, []string{"b", "d"})
	if !reflect.DeepEqual(added, []string{"d"}) || !reflect.DeepEqual(removed, []string{"a", "c"}) {
		t.Fatalf("Diff: +%v -%v", added, removed)
	}
}

// Check agrees with the contract's pattern as a regexp, on every string of
// up to three characters from an alphabet around its edges, and at the
// length limit.
func TestCheckIsThePattern(t *testing.T) {
	re := regexp.MustCompile(`^[a-z0-9][a-z0-9:._-]{0,49}$`)
	alphabet := []string{"a", "z", "0", "9", ":", ".", "_", "-", "A", "/", " ", "é", "`", "{"}
	var all []string
	var gen func(prefix string, n int)
	gen = func(prefix string, n int) {
		all = append(all, prefix)
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			gen(prefix+c, n-1)
		}
	}
	gen("", 3)
	all = append(all, strings.Repeat("a", 49)+"-", strings.Repeat("a", 50)+"-", "a"+strings.Repeat(":", 49))
	for _, s := range all {
		if got, want := Check(s) == nil, re.MatchString(s); got != want {
			t.Errorf("Check(%q) ok=%v, pattern says %v", s, got, want)
		}
	}
}
