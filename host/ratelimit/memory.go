package ratelimit

import (
	"context"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2/simplelru"
)

// DefaultMaxKeys is the default of NewMemory's maxKeys: the buckets and
// day counters one process keeps (about 100 bytes each).
const DefaultMaxKeys = 100_000

// Memory is a Store in this process. The algorithm is written here rather
// than taken from golang.org/x/time/rate: the Redis store runs the same
// one in a Lua script, and one process and a team of replicas must limit
// alike; and a request's buckets must be taken together or not at all.
type Memory struct {
	mu   sync.Mutex
	keys *lru.LRU[string, *entry]
}

// entry is a bucket's theoretical arrival time (when it is next full: the
// GCRA's TAT), or a day counter's day and count.
type entry struct {
	tat   time.Time
	day   string
	count int
}

// NewMemory returns a store keeping at most maxKeys buckets and counters
// (0: DefaultMaxKeys), forgetting the least recently used first.
func NewMemory(maxKeys int) *Memory {
	if maxKeys <= 0 {
		maxKeys = DefaultMaxKeys
	}
	keys, _ := lru.NewLRU[string, *entry](maxKeys, nil) // errs only for a size under 1
	return &Memory{keys: keys}
}

// Take implements Store.
func (m *Memory) Take(_ context.Context, now time.Time, buckets []Bucket, quotas []Quota) (int, time.Duration, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	tats := make([]time.Time, len(buckets)) // the buckets' TATs once taken
	refused, worst := -1, time.Duration(0)
	for i, b := range buckets {
		interval := time.Duration(float64(time.Second) / b.Rate)
		tat := now
		if e, ok := m.keys.Get(b.Key); ok && e.tat.After(now) {
			tat = e.tat
		}
		next := tat.Add(interval)
		if wait := next.Sub(now) - time.Duration(b.Burst)*interval; wait > 0 {
			if wait > worst {
				refused, worst = i, wait
			}
			continue
		}
		tats[i] = next
	}
	day, left := dayOf(now)
	for i, q := range quotas {
		if e, ok := m.keys.Get(q.Key); ok && e.day == day && e.count >= q.Max && left > worst {
			refused, worst = len(buckets)+i, left
		}
	}
	if refused >= 0 {
		return refused, worst, nil
	}
	for i, b := range buckets {
		if e, ok := m.keys.Get(b.Key); ok {
			e.tat = tats[i]
			continue
		}
		m.keys.Add(b.Key, &entry{tat: tats[i]})
	}
	for _, q := range quotas {
		e, ok := m.keys.Get(q.Key)
		switch {
		case !ok:
			e = &entry{day: day}
			m.keys.Add(q.Key, e)
		case e.day != day:
			e.day, e.count = day, 0
		}
		e.count++
	}
	return -1, 0, nil
}

// Len is how many buckets and counters it keeps.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.keys.Len()
}
