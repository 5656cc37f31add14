package cache

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

func TestCache(t *testing.T) {
	tests := []struct {
		name string
		max  int64
		puts []int64 // sizes of keys k0, k1, …, in order
		get  []int   // keys read after each put (-1: none)
		want []string
	}{
		{"fits", 100, []int64{10, 10, 10}, nil, []string{"k0", "k1", "k2"}},
		{"evicts oldest", 40, []int64{10, 10, 10, 10, 10}, nil, []string{"k1", "k2", "k3", "k4"}},
		{"a read keeps it", 40, []int64{10, 10, 10, 10, 10}, []int{-1, -1, -1, 0, -1}, []string{"k0", "k2", "k3", "k4"}},
		{"too big is not kept", 100, []int64{10, 26}, nil, []string{"k0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New[int](tt.max)
			for i, sz := range tt.puts {
				c.Put(fmt.Sprint("k", i), i, sz)
				if i < len(tt.get) && tt.get[i] >= 0 {
					c.Get(fmt.Sprint("k", tt.get[i]))
				}
			}
			var got []string
			for i := range tt.puts {
				if v, ok := c.Get(fmt.Sprint("k", i)); ok {
					if v != i {
						t.Fatalf("k%d holds %d", i, v)
					}
					got = append(got, fmt.Sprint("k", i))
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("held %v, want %v", got, tt.want)
			}
			if c.Bytes() > tt.max {
				t.Fatalf("holds %d bytes, more than %d", c.Bytes(), tt.max)
			}
		})
	}
}

// Do makes a value once however many ask for it at the same time.
func TestDoMakesOnce(t *testing.T) {
	c := New[string](1 << 20)
	var made atomic.Int32
	release := make(chan struct{})
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = c.Do("k", func() (string, int64, bool) {
				made.Add(1)
				<-release
				return "v", 1, true
			})
		}()
	}
	for made.Load() == 0 {
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	if made.Load() != 1 {
		t.Fatalf("made %d times", made.Load())
	}
	for _, g := range got {
		if g != "v" {
			t.Fatalf("got %q", g)
		}
	}
	if v := c.Do("k", func() (string, int64, bool) { t.Fatal("made again"); return "", 0, false }); v != "v" {
		t.Fatalf("kept %q", v)
	}
	// A value not to keep is returned but not kept.
	c.Do("partial", func() (string, int64, bool) { return "p", 1, false })
	if _, ok := c.Get("partial"); ok {
		t.Fatal("kept a value marked not to keep")
	}
}
