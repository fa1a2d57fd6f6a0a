package oauth

import (
	"crypto/sha256"
	"sync"
	"time"
)

// tokenCache keeps what was learnt of tokens (a verified JWT's caller, an
// introspection answer), keyed by the token's SHA-256: the token itself
// is never kept. Each entry lives until its expiry; at most max are kept,
// and when full, expired entries go first, then any (map order).
type tokenCache[V any] struct {
	max int

	mu sync.Mutex
	m  map[[sha256.Size]byte]cacheEntry[V]
}

type cacheEntry[V any] struct {
	v       V
	expires time.Time
}

func newTokenCache[V any](max int) *tokenCache[V] {
	return &tokenCache[V]{max: max, m: map[[sha256.Size]byte]cacheEntry[V]{}}
}

// get returns the value kept for key, if it has not expired at now.
func (c *tokenCache[V]) get(key [sha256.Size]byte, now time.Time) (V, bool) {
	c.mu.Lock()
	e, ok := c.m[key]
	c.mu.Unlock()
	if !ok || !now.Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.v, true
}

// put keeps v for key until expires, making room when the cache is full.
func (c *tokenCache[V]) put(key [sha256.Size]byte, v V, expires, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		for k, e := range c.m {
			if !now.Before(e.expires) {
				delete(c.m, k)
			}
		}
	}
	for k := range c.m { // still full: any one goes
		if len(c.m) < c.max {
			break
		}
		delete(c.m, k)
	}
	c.m[key] = cacheEntry[V]{v, expires}
}
