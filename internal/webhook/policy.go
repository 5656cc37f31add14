package webhook

import (
	"crypto/ed25519"
	"encoding/base64"
	"time"
)

// Policy is when a failed delivery is tried again and when it is given up.
type Policy struct {
	// First is the largest delay before the first retry; each later delay
	// doubles, up to Max. A delay is jittered to between half and all of
	// its nominal value, so receivers coming back are not hit in lockstep.
	First time.Duration
	Max   time.Duration
	// GiveUp is how long after a delivery's start (its event's time, or
	// its redelivery) retries go on.
	GiveUp time.Duration
	// MinAttempts is how many attempts a delivery gets even when it is
	// already older than GiveUp (an event that queued behind a failing one
	// must not be dropped on its first transient failure).
	MinAttempts int
}

// DefaultPolicy is the contract's: first retry within 5 s, delays capped at
// 5 minutes, retries for at least 24 hours.
func DefaultPolicy() Policy {
	return Policy{First: 2 * time.Second, Max: 5 * time.Minute, GiveUp: 24 * time.Hour, MinAttempts: 3}
}

// Delay is the wait after the failed attempt number n (1 for the first
// attempt), with r in [0, 1) choosing the jitter.
func (p Policy) Delay(n int, r float64) time.Duration {
	d := p.First
	for i := 1; i < n && d < p.Max; i++ {
		d *= 2
	}
	d = min(d, p.Max)
	return d/2 + time.Duration(r*float64(d/2))
}

// Next decides after the failed attempt number n of a delivery started at
// started: retry at the returned time, or give up.
func (p Policy) Next(n int, started, now time.Time, r float64) (at time.Time, giveUp bool) {
	if now.Sub(started) >= p.GiveUp && n >= p.MinAttempts {
		return time.Time{}, true
	}
	return now.Add(p.Delay(n, r)), false
}

func (p Policy) orDefault() Policy {
	if p.First <= 0 || p.Max <= 0 || p.GiveUp <= 0 {
		return DefaultPolicy()
	}
	return p
}

// SignaturePrefix starts the X-Collab-Signature header's value.
const SignaturePrefix = "ed25519="

// Sign returns the X-Collab-Signature value for body: "ed25519=" and the
// standard, padded base64 of the Ed25519 signature of the raw bytes.
func Sign(key ed25519.PrivateKey, body []byte) string {
	return SignaturePrefix + base64.StdEncoding.EncodeToString(ed25519.Sign(key, body))
}

// Verify checks an X-Collab-Signature value against body, as a receiver does.
func Verify(pub ed25519.PublicKey, body []byte, header string) bool {
	if len(header) <= len(SignaturePrefix) || header[:len(SignaturePrefix)] != SignaturePrefix {
		return false
	}
	sig, err := base64.StdEncoding.DecodeString(header[len(SignaturePrefix):])
	if err != nil {
		return false
	}
	return ed25519.Verify(pub, body, sig)
}
