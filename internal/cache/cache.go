// Package cache is a small in-memory cache bounded by the bytes of what it
// holds, dropping the least recently used entries first: for values that
// cost CPU to make (rendered Markdown, highlighted code) and are keyed by
// what they were made from, so an entry is never stale, only evicted.
package cache

import (
	"container/list"
	"sync"
)

// Cache maps keys to values of a known size. It is safe for concurrent use.
type Cache[V any] struct {
	mu    sync.Mutex
	max   int64
	used  int64
	order *list.List // front: most recently used
	items map[string]*list.Element
	// making holds the keys whose value Do is making now.
	making map[string]*making[V]
}

// making is a value being made by Do, which other callers of Do with the
// same key wait for instead of making it again.
type making[V any] struct {
	done chan struct{}
	val  V
}

type item[V any] struct {
	key  string
	val  V
	size int64
}

// New returns a cache holding at most max bytes (as Put's sizes count).
func New[V any](max int64) *Cache[V] {
	return &Cache[V]{max: max, order: list.New(), items: map[string]*list.Element{}, making: map[string]*making[V]{}}
}

// Do returns the value under key, making it with mk when absent. Callers
// asking for a key while it is being made wait for that one making, so
// viewers arriving together pay for one render, not one each. mk returns
// the value, its size, and whether to keep it (a value made under a
// cancelled context may be partial).
func (c *Cache[V]) Do(key string, mk func() (V, int64, bool)) V {
	c.mu.Lock()
	if e, ok := c.items[key]; ok {
		c.order.MoveToFront(e)
		v := e.Value.(*item[V]).val
		c.mu.Unlock()
		return v
	}
	if m, ok := c.making[key]; ok {
		c.mu.Unlock()
		<-m.done
		return m.val
	}
	m := &making[V]{done: make(chan struct{})}
	c.making[key] = m
	c.mu.Unlock()
	keep := false
	var size int64
	defer func() {
		// In one critical section: a caller that finds the key no longer
		// being made must find it kept, or make it again.
		c.mu.Lock()
		delete(c.making, key)
		if keep {
			c.put(key, m.val, size)
		}
		c.mu.Unlock()
		close(m.done)
	}()
	m.val, size, keep = mk()
	return m.val
}

// Get returns the value under key.
func (c *Cache[V]) Get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[key]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*item[V]).val, true
	}
	var zero V
	return zero, false
}

// Put stores val of size bytes under key, evicting the least recently
// used entries to make room; a value larger than a quarter of the cache
// is not kept (one huge entry must not flush all the others).
func (c *Cache[V]) Put(key string, val V, size int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.put(key, val, size)
}

// put is Put with c.mu held.
func (c *Cache[V]) put(key string, val V, size int64) {
	if e, ok := c.items[key]; ok {
		c.used -= e.Value.(*item[V]).size
		c.order.Remove(e)
		delete(c.items, key)
	}
	if size > c.max/4 {
		return
	}
	for c.used+size > c.max && c.order.Len() > 0 {
		old := c.order.Back()
		it := old.Value.(*item[V])
		c.order.Remove(old)
		delete(c.items, it.key)
		c.used -= it.size
	}
	c.items[key] = c.order.PushFront(&item[V]{key: key, val: val, size: size})
	c.used += size
}

// Len is the number of entries held.
func (c *Cache[V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// Bytes is the sum of the held entries' sizes.
func (c *Cache[V]) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}
