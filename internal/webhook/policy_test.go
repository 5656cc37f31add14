package webhook

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

// The default policy's numbers are the contract's: first retry within 5 s,
// delays doubling up to a 5-minute cap, retries for at least 24 hours.
func TestDefaultPolicy(t *testing.T) {
	p := DefaultPolicy()
	for _, tc := range []struct {
		n        int
		r        float64
		min, max time.Duration
	}{
		{1, 0, time.Second, time.Second},
		{1, 0.999999, 1900 * time.Millisecond, 2 * time.Second},
		{2, 0, 2 * time.Second, 2 * time.Second},
		{3, 0.5, 6 * time.Second, 6 * time.Second},
		{7, 0, 64 * time.Second, 64 * time.Second},
		{8, 0.999999, 255 * time.Second, 256 * time.Second},
		{9, 0, 150 * time.Second, 150 * time.Second},
		{1000, 0.999999, 4*time.Minute + 59*time.Second, 5 * time.Minute},
	} {
		if d := p.Delay(tc.n, tc.r); d < tc.min || d > tc.max {
			t.Errorf("Delay(%d, %v) = %v, want in [%v, %v]", tc.n, tc.r, d, tc.min, tc.max)
		}
	}
	if d := p.Delay(1, 0.999999); d > 5*time.Second {
		t.Errorf("first retry after %v", d)
	}

	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		n       int
		elapsed time.Duration
		giveUp  bool
	}{
		{1, 0, false},
		{300, 23*time.Hour + 59*time.Minute, false},
		{300, 24 * time.Hour, true},
		{1, 48 * time.Hour, false}, // an old event still gets MinAttempts tries
		{3, 48 * time.Hour, true},
	} {
		at, giveUp := p.Next(tc.n, start, start.Add(tc.elapsed), 0.5)
		if giveUp != tc.giveUp {
			t.Errorf("Next(%d, +%v) gave up = %v", tc.n, tc.elapsed, giveUp)
		}
		if !giveUp && at.Sub(start.Add(tc.elapsed)) != p.Delay(tc.n, 0.5) {
			t.Errorf("Next(%d, +%v) = %v", tc.n, tc.elapsed, at)
		}
	}

	// Simulate a receiver that never answers: it must be tried for at least
	// 24 h, with at least one attempt every 5 minutes.
	now, n := start, 0
	for {
		n++
		next, giveUp := p.Next(n, start, now, 0.999999)
		if giveUp {
			break
		}
		if next.Sub(now) > 5*time.Minute {
			t.Fatalf("attempt %d waits %v", n, next.Sub(now))
		}
		now = next
	}
	if now.Sub(start) < 24*time.Hour {
		t.Errorf("gave up after %v and %d attempts", now.Sub(start), n)
	}
}

func TestSignVerify(t *testing.T) {
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"id":1,"event":"issue.filed"}`)
	h := Sign(key, body)
	b64, ok := strings.CutPrefix(h, "ed25519=")
	if !ok {
		t.Fatalf("header %q", h)
	}
	if raw, err := base64.StdEncoding.DecodeString(b64); err != nil || len(raw) != ed25519.SignatureSize || !strings.HasSuffix(b64, "==") {
		t.Fatalf("signature %q is not padded standard base64 of 64 bytes", b64)
	}
	other, _, _ := ed25519.GenerateKey(rand.Reader)
	for _, tc := range []struct {
		name   string
		pub    ed25519.PublicKey
		body   []byte
		header string
		ok     bool
	}{
		{"valid", pub, body, h, true},
		{"body changed", pub, []byte(`{"id":2,"event":"issue.filed"}`), h, false},
		{"other key", other, body, h, false},
		{"no prefix", pub, body, b64, false},
		{"empty", pub, body, "", false},
		{"garbage", pub, body, "ed25519=!!!", false},
	} {
		if got := Verify(tc.pub, tc.body, tc.header); got != tc.ok {
			t.Errorf("%s: Verify = %v", tc.name, got)
		}
	}
}

// The production settings keep the contract's promises that are about the
// dispatcher's own schedule rather than the retry policy: new events are
// looked for at least every second (a commit wakes it sooner), expired
// leases at least every 5 s, and the schedule runs on the real clock.
func TestDefaultsMeetContract(t *testing.T) {
	o := Options{}.withDefaults()
	if o.Poll <= 0 || o.Poll > time.Second {
		t.Errorf("Poll %v: new events must reach the dispatcher within a second", o.Poll)
	}
	if o.SweepEvery <= 0 || o.SweepEvery > 5*time.Second {
		t.Errorf("SweepEvery %v: expired leases must be looked for at least every 5 s", o.SweepEvery)
	}
	if o.Policy != DefaultPolicy() {
		t.Errorf("Policy %+v, want the default", o.Policy)
	}
	if before, now := time.Now(), o.Now(); now.Before(before) || now.Sub(before) > time.Hour {
		t.Errorf("Now() = %v at %v: want the real clock", now, before)
	}
}
