// Package ids makes and checks the lowercase hex ids of issues, patches,
// comments and reviews.
package ids

import (
	"crypto/rand"
	"encoding/hex"
	"strings"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/text"
)

// Generated ids are 40 hex characters, like a SHA-1 oid and a Gerrit Change-Id.
const (
	GeneratedLen = 40
	MinLen       = 8
	MaxLen       = 64
	MinPrefix    = 4
)

// New returns a fresh random 40-character id.
func New() string {
	var b [GeneratedLen / 2]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand failed: " + err.Error()) // never happens on Linux
	}
	return hex.EncodeToString(b[:])
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Valid reports whether s is a full id: 8 to 64 lowercase hex characters,
// not all zero.
func Valid(s string) bool {
	return len(s) >= MinLen && len(s) <= MaxLen && isHex(s) && strings.Trim(s, "0") != ""
}

// CheckPrefix validates a user-given id or id prefix (4 to 64 lowercase hex
// characters). Upper case is folded, since people copy ids from anywhere.
func CheckPrefix(s string) (string, error) {
	p := strings.ToLower(strings.TrimSpace(s))
	if len(p) < MinPrefix || len(p) > MaxLen || !isHex(p) {
		return "", fault.New(fault.Usage, "bad id %q: want 4 to 64 hex characters", text.Clip(s))
	}
	return p, nil
}
