// Package shellwords splits an SSH command line (SSH_ORIGINAL_COMMAND) into
// words the way a POSIX shell would quote them, without ever running one.
//
// Only quoting is honoured: single quotes, double quotes and backslashes.
// Everything a shell would otherwise interpret — command separators,
// redirections, substitutions — is refused rather than taken literally, so
// that a command means the same here as it would to a user who imagines a
// shell at the other end, and nothing that looks like shell syntax is ever
// silently passed on.
package shellwords

import (
	"strings"
	"unicode/utf8"

	"github.com/collab-forge/collab/internal/fault"
)

// MaxLen bounds a command line. Linux refuses a single environment string
// over 128 KiB anyway; longer bodies belong on stdin (--body -).
const MaxLen = 64 << 10

// MaxWords bounds the number of words.
const MaxWords = 256

// Split returns the words of s. An empty or all-blank s gives no words.
// Errors are fault.Usage with a one-line message.
func Split(s string) ([]string, error) {
	if len(s) > MaxLen {
		return nil, refuse("command too long: %d bytes, at most %d (send long bodies on stdin with --body -)", len(s), MaxLen)
	}
	if !utf8.ValidString(s) {
		return nil, refuse("command is not valid UTF-8")
	}
	var (
		words  []string
		cur    strings.Builder
		inWord bool // cur holds a word, possibly empty ('')
	)
	end := func() error {
		if inWord {
			if len(words) == MaxWords {
				return refuse("too many words in command, at most %d", MaxWords)
			}
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
		return nil
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if err := control(c); err != nil {
			return nil, err
		}
		switch {
		case c == ' ' || c == '\t':
			if err := end(); err != nil {
				return nil, err
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, refuse("unbalanced single quote in command")
			}
			for k := i + 1; k < i+1+j; k++ {
				if err := control(s[k]); err != nil {
					return nil, err
				}
			}
			cur.WriteString(s[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case c == '"':
			n, err := doubleQuoted(s[i+1:], &cur)
			if err != nil {
				return nil, err
			}
			inWord = true
			i += n
		case c == '\\':
			if i+1 == len(s) {
				return nil, refuse("command ends with a backslash")
			}
			i++
			if err := control(s[i]); err != nil {
				return nil, err
			}
			cur.WriteByte(s[i])
			inWord = true
		case strings.IndexByte(";&|<>()`$", c) >= 0:
			return nil, refuse("shell syntax %q is not allowed in a command; quote it", string(c))
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if err := end(); err != nil {
		return nil, err
	}
	return words, nil
}

// doubleQuoted reads the inside of a double-quoted string from s (which
// starts just after the opening quote) into cur and returns how many bytes
// it used, the closing quote included.
func doubleQuoted(s string, cur *strings.Builder) (int, error) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if err := control(c); err != nil {
			return 0, err
		}
		switch c {
		case '"':
			return i + 1, nil
		case '\\':
			if i+1 == len(s) {
				return 0, refuse("unbalanced double quote in command")
			}
			// Inside double quotes a backslash escapes only these; before
			// anything else it is an ordinary character.
			if n := s[i+1]; n == '"' || n == '\\' || n == '$' || n == '`' {
				cur.WriteByte(n)
				i++
				continue
			}
			cur.WriteByte(c)
		case '$', '`':
			return 0, refuse("shell syntax %q is not allowed in a command; use single quotes", string(c))
		default:
			cur.WriteByte(c)
		}
	}
	return 0, refuse("unbalanced double quote in command")
}

// control refuses NUL, newlines and other control characters (tab is a
// separator): a newline would end a command for a shell, and none of them
// belongs in a repository name, a verb or a one-line flag value.
func control(c byte) error {
	switch {
	case c == 0:
		return refuse("NUL byte in command")
	case c == '\n' || c == '\r':
		return refuse("newline in command")
	case c == '\t':
		return nil
	case c < 0x20 || c == 0x7f:
		return refuse("control character in command")
	}
	return nil
}

func refuse(format string, args ...any) error {
	return fault.New(fault.Usage, format, args...)
}

// Join quotes words so that Split gives them back: the inverse, for hints
// printed to users and for tests.
func Join(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = Quote(w)
	}
	return strings.Join(out, " ")
}

// Quote returns w single-quoted when it holds anything but plainly safe
// characters.
func Quote(w string) string {
	if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:=@,%") == "" {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}
