// Package heap is imported for its init, which maps in the next 2 MiB of
// the Go heap (prefault.Heap) as early as the process can: collab-hook
// imports it, whose serve touched about 1 MiB of fresh heap over 2 MiB in
// a push (SQLite's schema, the hand-off, git's pipes). collab-hook-fast
// does not: what it allocates after the runtime's start fits in the pages
// it already has, and mapping 2 MiB in would cost it 0.5 ms for nothing.
package heap

import "github.com/collab-forge/collab/internal/prefault"

// Budget is what init maps in.
const Budget = 2 << 20

func init() { prefault.Heap(Budget) }
