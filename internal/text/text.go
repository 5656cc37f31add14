// Package text checks user-written text (titles, bodies, comments) before it
// is stored: bounded, valid UTF-8, no NUL bytes.
package text

import (
	"strings"
	"unicode/utf8"

	"github.com/collab-forge/collab/internal/fault"
)

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
