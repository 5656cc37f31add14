package events

import "testing"

func TestPublicIDs(t *testing.T) {
	p := NewPublicIDs([]byte("forge secret"))
	seen := map[int64]bool{}
	increasing := 0
	prev := int64(0)
	for id := int64(1); id <= 5000; id++ {
		pub := p.Public(id)
		if pub < 1 || pub >= MaxPublicID || seen[pub] {
			t.Fatalf("Public(%d) = %d: out of range or repeated", id, pub)
		}
		seen[pub] = true
		if back, ok := p.Log(pub); !ok || back != id {
			t.Fatalf("Log(Public(%d)) = %d, %v", id, back, ok)
		}
		if pub > prev {
			increasing++
		}
		prev = pub
	}
	// Consecutive ids say nothing about each other: about half go up.
	if increasing < 2200 || increasing > 2800 {
		t.Errorf("%d of 5000 public ids above their predecessor", increasing)
	}
	for _, id := range []int64{MaxPublicID - 1, 1 << 40} {
		if back, ok := p.Log(p.Public(id)); !ok || back != id {
			t.Errorf("round trip of %d: %d, %v", id, back, ok)
		}
	}
	for _, bad := range []int64{0, -1, MaxPublicID, 1 << 62} {
		if p.Public(bad) != 0 {
			t.Errorf("Public(%d) = %d", bad, p.Public(bad))
		}
		if _, ok := p.Log(bad); ok {
			t.Errorf("Log(%d) accepted", bad)
		}
	}
	if q := NewPublicIDs([]byte("another forge")); q.Public(1) == p.Public(1) && q.Public(2) == p.Public(2) {
		t.Error("two keys give the same ids")
	}
	if NewPublicIDs([]byte("forge secret")).Public(7) != p.Public(7) {
		t.Error("the same key gives other ids")
	}
}
