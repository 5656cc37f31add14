package cache

import (
	"fmt"
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
