// Package labels holds the rules of issue labels (CONTRACT.md "SSH verbs":
// `issue label`): what a label may look like, how many an issue may carry,
// and how a set of them is written down. Labels feed the agents' work
// queue (`lease acquire --next --label L`), so a label is a plain token
// that scripts can pass around unquoted.
package labels

import (
	"slices"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/text"
)

// Max is how many labels one issue may carry, and how many a filter may
// name (a filter of more can match nothing).
const Max = 50

// MaxLen is the longest label, in bytes.
const MaxLen = 50

// Check refuses a label that breaks the contract's pattern
// [a-z0-9][a-z0-9:._-]{0,49}. Upper case is refused rather than folded,
// so that what a client sends is what it later filters by. (A loop, not a
// regexp: a compiled one would cost every collab-hook start its init.)
func Check(l string) error {
	ok := len(l) >= 1 && len(l) <= MaxLen
	for i := 0; ok && i < len(l); i++ {
		c := l[i]
		ok = c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || i > 0 && (c == ':' || c == '.' || c == '_' || c == '-')
	}
	if !ok {
		return fault.New(fault.Usage, "bad label %q: want [a-z0-9][a-z0-9:._-]{0,49}, e.g. bug or prio:high", text.Clip(l))
	}
	return nil
}

// Set checks every label of ls and returns them as a set: sorted, without
// duplicates, never nil. More than Max distinct labels is refused. It
// serves both an issue's whole set (PUT …/labels) and a filter (issue
// list --label, lease acquire --next --label), where every one must match.
func Set(ls []string) ([]string, error) {
	out := make([]string, 0, len(ls))
	for _, l := range ls {
		if err := Check(l); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > Max {
		return nil, fault.New(fault.Usage, "too many labels: %d, at most %d", len(out), Max)
	}
	return out, nil
}

// Edit applies add and remove to the set cur and returns the new set and
// what changed (added, removed: sorted, never nil). A label both added and
// removed is refused, and so is a result of more than Max labels; adding a
// label already there or removing one that is not changes nothing.
func Edit(cur, add, remove []string) (next, added, removed []string, err error) {
	if add, err = Set(add); err != nil {
		return nil, nil, nil, err
	}
	if remove, err = Set(remove); err != nil {
		return nil, nil, nil, err
	}
	for _, l := range add {
		if _, both := slices.BinarySearch(remove, l); both {
			return nil, nil, nil, fault.New(fault.Usage, "label %s is both added and removed", l)
		}
	}
	have := map[string]bool{}
	for _, l := range cur {
		have[l] = true
	}
	added, removed = []string{}, []string{}
	for _, l := range add {
		if !have[l] {
			have[l] = true
			added = append(added, l)
		}
	}
	for _, l := range remove {
		if have[l] {
			delete(have, l)
			removed = append(removed, l)
		}
	}
	next = make([]string, 0, len(have))
	for l := range have {
		next = append(next, l)
	}
	slices.Sort(next)
	if len(next) > Max && len(added) > 0 {
		return nil, nil, nil, fault.New(fault.Usage, "too many labels: the issue would carry %d, at most %d", len(next), Max)
	}
	return next, added, removed, nil
}

// Diff is what changes from the set cur to the set next (both sorted).
func Diff(cur, next []string) (added, removed []string) {
	added, removed = []string{}, []string{}
	for _, l := range next {
		if _, ok := slices.BinarySearch(cur, l); !ok {
			added = append(added, l)
		}
	}
	for _, l := range cur {
		if _, ok := slices.BinarySearch(next, l); !ok {
			removed = append(removed, l)
		}
	}
	return added, removed
}
