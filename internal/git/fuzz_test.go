package git

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzParse: whatever git log printed (or a truncated or hostile stream),
// parse returns records with full object ids or an error, never a panic;
// trailer values come back trimmed and split on git's separator.
func FuzzParse(f *testing.F) {
	oid := strings.Repeat("a", 40)
	f.Add([]byte(oid+"\x00\x00Patch1\x1fPatch2\x00ab\x00Iab\x00msg\x00"), true)
	f.Add([]byte(oid+"\x00"+oid+" "+oid+"\x00\x00\x00\x00"), false)
	f.Add([]byte(">"+oid+"\x00\x00 x \x00\x00\x00m\x00-"+oid+"\x00\x00\x00\x00\x00\x00"), true)
	f.Add([]byte("\x00\x00\x00"), false)
	f.Fuzz(func(t *testing.T, in []byte, full bool) {
		check := func(c Commit) error {
			if !IsOID(c.OID) {
				t.Fatalf("record with oid %q", c.OID)
			}
			for _, v := range append(append(append([]string{}, c.Patch...), c.Fixes...), c.ChangeID...) {
				if v != strings.TrimSpace(v) || strings.Contains(v, "\x1f") {
					t.Fatalf("trailer value %q", v)
				}
			}
			return nil
		}
		_ = parse(bytes.NewReader(in), full, check)
		_ = parseMarked(bytes.NewReader(in), func(mark byte, c Commit) error { return check(c) })
	})
}
