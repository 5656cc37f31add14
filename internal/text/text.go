// Package text checks user-written text (titles, bodies, comments) before it
// is stored: bounded, valid UTF-8, no NUL bytes, and no control characters
// in one-line values. It also makes stored text safe to print on a
// terminal (Show, ShowBody): the one neutraliser every plain-text output
// uses (the SSH verbs, the hooks' remote: lines, refusal messages).
//
// The convention, readable and unambiguous for the characters a terminal
// acts on: each C0 control and DEL is shown as a Go-style \xHH escape (ESC
// is \x1b, BEL \x07), each C1 control (U+0080 to U+009F) and each hidden
// format character (IsHidden: bidi controls, zero-width spaces) as \uHHHH,
// and a byte that is not UTF-8 as \xHH. A planted escape sequence such as
// "\x1b]0;pwned\x07" is thus printed as exactly those ten visible
// characters. Backslashes themselves are left alone: the output is for
// reading, and the exact text is in --json (JSON escapes control
// characters itself).
package text

import (
	"fmt"
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

// CheckLine is Check for a one-line value such as a title or a topic: it
// also refuses every control character (C0 including newline and tab, DEL,
// C1), since such a value is printed inside other lines where a tab or an
// escape sequence would mislead the reader.
func CheckLine(what, v string, limit int) error {
	if err := Check(what, v, limit); err != nil {
		return err
	}
	for i, r := range v {
		if IsControl(r) {
			if r == '\n' || r == '\r' {
				return fault.New(fault.Usage, "%s must be one line", what)
			}
			return fault.New(fault.Usage, "%s holds the control character %s at byte %d; titles and other one-line values may hold none",
				what, escape(r), i)
		}
		if IsHidden(r) {
			return fault.New(fault.Usage, "%s holds the invisible character U+%04X at byte %d (it can make text read other than it is); titles and other one-line values may hold none",
				what, r, i)
		}
	}
	return nil
}

// IsControl reports whether r is a control character a terminal may act
// on: C0, DEL or C1 (Unicode's category Cc).
func IsControl(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r <= 0x9f)
}

// IsHidden reports whether r is an invisible format character that can
// make text read other than it is: the bidirectional controls (U+202A to
// U+202E, U+2066 to U+2069, the marks U+200E, U+200F and U+061C, the
// "Trojan Source" characters) and the zero-width characters that join
// nothing (U+200B, U+2060 to U+2064, U+FEFF, U+180E). The joiners U+200C
// and U+200D are left alone: scripts and emoji need them.
func IsHidden(r rune) bool {
	switch {
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r >= 0x2060 && r <= 0x2064:
		return true
	}
	switch r {
	case 0x200b, 0x200e, 0x200f, 0x061c, 0xfeff, 0x180e:
		return true
	}
	return false
}

// MarkHidden returns page with each hidden character (IsHidden) replaced
// by its visible name, [U+202E]: plain text, so that it reads the same in
// an element and in an attribute value. A page that holds none comes back
// as it is, without a copy.
func MarkHidden(page []byte) []byte {
	i := firstHidden(page)
	if i < 0 {
		return page
	}
	b := make([]byte, 0, len(page)+16)
	b = append(b, page[:i]...)
	for i < len(page) {
		r, n := utf8.DecodeRune(page[i:])
		if IsHidden(r) {
			b = fmt.Appendf(b, "[U+%04X]", r)
		} else {
			b = append(b, page[i:i+n]...)
		}
		i += n
	}
	return b
}

// firstHidden is the index of the first hidden character of page, or -1.
// Each starts with byte 0xd8, 0xe1, 0xe2 or 0xef in UTF-8, so most text
// is passed over without decoding.
func firstHidden(page []byte) int {
	for i := 0; i < len(page); i++ {
		switch page[i] {
		case 0xd8, 0xe1, 0xe2, 0xef:
			if r, _ := utf8.DecodeRune(page[i:]); IsHidden(r) {
				return i
			}
		}
	}
	return -1
}

// Show returns s ready to print inside a line of plain-text output: every
// control character, newlines and tabs included, and every byte that is
// not UTF-8 is shown as an escape (see the package's convention). Text
// that needs none comes back unchanged, without a copy.
func Show(s string) string { return show(s, false) }

// Line is a message (a refusal's, an error's) as one line that a
// terminal only shows: runs of white space, newlines included, become one
// space, then Show.
func Line(s string) string { return Show(strings.Join(strings.Fields(s), " ")) }

// ShowBody is Show for multi-line text (bodies, comments, whole outputs):
// newlines, tabs and a carriage return right before a newline are kept.
func ShowBody(s string) string { return show(s, true) }

// show is the one neutraliser behind Show, ShowBody and Clip.
func show(s string, body bool) string {
	i := 0
	for i < len(s) {
		if c := s[i]; c >= 0x20 && c < 0x7f {
			i++ // printable ASCII, the common case, without a call
			continue
		}
		n, ok := plain(s, i, body)
		if !ok {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	b := make([]byte, 0, len(s)+16)
	b = append(b, s[:i]...)
	for i < len(s) {
		n, ok := plain(s, i, body)
		switch {
		case ok:
			b = append(b, s[i:i+n]...)
		case n == 1: // a C0 control, DEL, or a byte that is not UTF-8
			b = appendHex(b, `\x`, uint16(s[i]), 2)
		default: // a C1 control or a hidden character (IsHidden)
			r, _ := utf8.DecodeRuneInString(s[i:])
			b = appendHex(b, `\u`, uint16(r), 4)
		}
		i += n
	}
	return string(b)
}

// plain reports whether the character at s[i] (n bytes long) may be
// printed as it is: ASCII is checked byte by byte, the rest decoded.
func plain(s string, i int, body bool) (n int, ok bool) {
	c := s[i]
	if c < utf8.RuneSelf {
		if c >= 0x20 && c != 0x7f {
			return 1, true
		}
		return 1, body && kept(s, i, rune(c))
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError && n == 1 {
		return 1, false // not UTF-8
	}
	return n, !IsControl(r) && !IsHidden(r) // C1, bidi and zero-width
}

// kept reports whether multi-line text keeps the control character r at
// s[i]: a newline, a tab, or the carriage return of a CRLF line end (a
// lone one would let the next text overwrite the line).
func kept(s string, i int, r rune) bool {
	return r == '\n' || r == '\t' || (r == '\r' && i+1 < len(s) && s[i+1] == '\n')
}

// escape is the visible form of the control character r.
func escape(r rune) string {
	if r < 0x80 {
		return string(appendHex(nil, `\x`, uint16(r), 2))
	}
	return string(appendHex(nil, `\u`, uint16(r), 4))
}

const hexDigits = "0123456789abcdef"

// appendHex appends prefix and v as digits hex digits.
func appendHex(b []byte, prefix string, v uint16, digits int) []byte {
	b = append(b, prefix...)
	for d := digits - 1; d >= 0; d-- {
		b = append(b, hexDigits[v>>(4*d)&0xf])
	}
	return b
}

// ClipLen is how much of a client's value a message quotes back.
const ClipLen = 70

// Clip shortens v for quoting in a one-line message: at most ClipLen bytes,
// cut on a rune boundary and marked with "…", then shown as Show does, so
// that a hostile value cannot break the line or reach the terminal.
func Clip(v string) string {
	if len(v) > ClipLen {
		cut := ClipLen
		for cut > 0 && !utf8.RuneStart(v[cut]) {
			cut--
		}
		v = v[:cut] + "…"
	}
	return Show(v)
}

// JSON rewrites DEL and the C1 controls inside encoded JSON as \u escapes.
// encoding/json escapes only what JSON requires (below U+0020), and a C1
// control such as U+009B (CSI) printed raw is still an escape sequence to
// some terminals. In JSON text these characters can only sit inside
// strings, so the result decodes to exactly the same values.
func JSON(b []byte) []byte {
	i := 0
	for i < len(b) && b[i] != 0x7f && !(b[i] == 0xc2 && i+1 < len(b) && b[i+1] >= 0x80 && b[i+1] <= 0x9f) {
		i++
	}
	if i == len(b) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	out = append(out, b[:i]...)
	for ; i < len(b); i++ {
		switch {
		case b[i] == 0x7f:
			out = append(out, `\u007f`...)
		case b[i] == 0xc2 && i+1 < len(b) && b[i+1] >= 0x80 && b[i+1] <= 0x9f:
			out = fmt.Appendf(out, `\u%04x`, b[i+1])
			i++
		default:
			out = append(out, b[i])
		}
	}
	return out
}
