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
}

type item[V any] struct {
	key  string
	val  V
	size int64
}

// New returns a cache holding at most max bytes (as Put's sizes count).
func New[V any](max int64) *Cache[V] {
	return &Cache[V]{max: max, order: list.New(), items: map[string]*list.Element{}}
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
