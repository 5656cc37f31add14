// Package text checks user-written text (titles, bodies, comments) before it
// is stored: bounded, valid UTF-8, no NUL bytes.
package text

import (
	"strings"
	"unicode/utf8"

	"github.com/collab-forge/collab/internal/fault"
)

// MaxBody bounds the body of an issue, a comment or a review: 1 MiB.
const MaxBody = 1 << 20

// Check refuses v when it is longer than limit bytes, not UTF-8, or holds a
// NUL byte; what names it in the message.
func Check(what, v string, limit int) error {
	if len(v) > limit {
		return fault.New(fault.TooLarge, "%s too long: %d bytes, at most %d", what, len(v), limit)
	}
	if !utf8.ValidString(v) {
		return fault.New(fault.Usage, "%s is not valid UTF-8", what)
	}
	if strings.ContainsRune(v, 0) {
		return fault.New(fault.Usage, "%s holds a NUL byte", what)
	}
	return nil
}

// ClipLen is how much of a client's value a message quotes back.
const ClipLen = 70

// Clip shortens v for quoting in a one-line message: at most ClipLen bytes,
// cut on a rune boundary and marked with "…", with control characters and
// invalid UTF-8 shown as '?', so that a hostile value cannot break the line.
func Clip(v string) string {
	if len(v) > ClipLen {
		cut := ClipLen
		for cut > 0 && !utf8.RuneStart(v[cut]) {
			cut--
		}
		v = v[:cut] + "…"
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return '?'
		}
		return r
	}, v)
}
