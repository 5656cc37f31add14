package web

import (
	"context"
	"testing"
	"time"
)

// One client holds at most half the slots; the others stay for everyone
// else; a waiter gets a slot as soon as one frees for it, first come
// first served, and one that cannot have it gives up after its wait.
func TestSlotsShare(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		total, share int
	}{{1, 1}, {2, 1}, {4, 2}, {5, 2}, {8, 4}}
	for _, tt := range tests {
		s := newSlots(tt.total)
		for i := 0; i < tt.share; i++ {
			if !s.acquire(ctx, "a", 0) {
				t.Fatalf("%d slots: a's slot %d refused", tt.total, i+1)
			}
		}
		if s.acquire(ctx, "a", 10*time.Millisecond) {
			t.Fatalf("%d slots: a got more than its share %d", tt.total, tt.share)
		}
		free := tt.total - tt.share
		for i := 0; i < free && i < tt.share; i++ {
			if !s.acquire(ctx, "b", 0) {
				t.Fatalf("%d slots: b refused while a holds its share", tt.total)
			}
		}
	}

	s := newSlots(4)
	for _, k := range []string{"a", "a", "b", "b"} {
		s.acquire(ctx, k, 0)
	}
	got := make(chan string, 2)
	go func() {
		if s.acquire(ctx, "c", 5*time.Second) {
			got <- "c"
		}
	}()
	for s.waiting() == 0 {
		time.Sleep(time.Millisecond) // until c queues: no timing is asserted
	}
	s.release("a")
	if w := <-got; w != "c" || s.inUse("c") != 1 {
		t.Fatalf("the freed slot went to %q", w)
	}
	if s.acquire(ctx, "d", 0) {
		t.Fatal("a fifth slot")
	}
	// a waiter over its share is passed over, not served.
	done := make(chan bool, 1)
	go func() { done <- s.acquire(ctx, "b", 50*time.Millisecond) }()
	if <-done {
		t.Fatal("b got a third slot")
	}
}
