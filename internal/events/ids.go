package events

import (
	"crypto/sha256"
	"encoding/binary"
)

// PublicIDs turns the log's own event ids into the ids readers of
// /api/v1/events see, and back. The log's ids count every event of every
// repository, so a reader who may read only some of them would see gaps
// where the others had activity (how many events, and when). A public id
// is the log id under a keyed permutation of [1, 2^52): every API reader
// sees the same id for the same event, `?after=` takes it back, and the
// numbers say nothing about order or about other repositories. They stay
// JSON-safe integers (below 2^53), so that a client that keeps them as
// floating point (JavaScript, jq) passes them back intact.
//
// The permutation is an 8-round Feistel network on two 26-bit halves with
// SHA-256 as its round function, keyed by a secret the caller derives (the
// web derives it from the forge key, so a restored backup keeps its ids).
type PublicIDs struct {
	key [32]byte
}

// NewPublicIDs keys the permutation with secret.
func NewPublicIDs(secret []byte) PublicIDs {
	return PublicIDs{key: sha256.Sum256(append([]byte("collab event ids\x00"), secret...))}
}

// MaxPublicID bounds the ids: log ids and public ids are below it.
const MaxPublicID = 1 << idBits

const (
	idBits   = 52
	halfBits = idBits / 2
	halfMask = 1<<halfBits - 1
	rounds   = 8
)

// Public is the public id of log id id (1 ≤ id < MaxPublicID); 0 for an id
// out of that range.
func (p PublicIDs) Public(id int64) int64 {
	if id < 1 || id >= MaxPublicID {
		return 0
	}
	// Cycle walking keeps the permutation within [1, 2^52): 0 maps on.
	x := p.encrypt(uint64(id))
	for x == 0 {
		x = p.encrypt(x)
	}
	return int64(x)
}

// Log is the log id of public id pub; ok is false for a number that is no
// public id (out of range).
func (p PublicIDs) Log(pub int64) (id int64, ok bool) {
	if pub < 1 || pub >= MaxPublicID {
		return 0, false
	}
	x := p.decrypt(uint64(pub))
	for x == 0 {
		x = p.decrypt(x)
	}
	return int64(x), true
}

func (p PublicIDs) round(r int, half uint64) uint64 {
	var b [32 + 1 + 4]byte
	copy(b[:32], p.key[:])
	b[32] = byte(r)
	binary.BigEndian.PutUint32(b[33:], uint32(half))
	sum := sha256.Sum256(b[:])
	return binary.BigEndian.Uint64(sum[:8]) & halfMask
}

func (p PublicIDs) encrypt(x uint64) uint64 {
	l, r := x>>halfBits, x&halfMask
	for i := 0; i < rounds; i++ {
		l, r = r, l^p.round(i, r)
	}
	return l<<halfBits | r
}

func (p PublicIDs) decrypt(x uint64) uint64 {
	l, r := x>>halfBits, x&halfMask
	for i := rounds - 1; i >= 0; i-- {
		l, r = r^p.round(i, l), l
	}
	return l<<halfBits | r
}
