package redistore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/plughost/plughost/host/tasks"
)

// ListScan bounds the task keys List looks at: Redis has no index of the
// tasks by time, so List scans their keys (SCAN, which never blocks the
// server as KEYS would) and reads them in batches. Past ListScan keys it
// stops: with more tasks than that, the listing is the newest of those
// it saw, not of all.
const ListScan = 10000

// listBatch is how many records one MGET reads.
const listBatch = 200

// List returns the tasks of every replica, newest first, at most limit
// (tasks.MaxList at most), without their payloads; a record that expired
// or was refused (its seal broken) is left out.
func (s *Store) List(ctx context.Context, limit int) ([]*tasks.Task, error) {
	if tasks.ListLimit(limit) == 0 {
		return nil, nil
	}
	prefix := s.taskKey("")
	var keys []string
	it := s.client.Scan(ctx, 0, globEscape(prefix)+"*", listBatch).Iterator()
	for len(keys) < ListScan && it.Next(ctx) {
		keys = append(keys, it.Val())
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("redis: listing the tasks: %w", err)
	}
	var out []*tasks.Task
	for len(keys) > 0 {
		batch := keys[:min(len(keys), listBatch)]
		keys = keys[len(batch):]
		values, err := s.client.MGet(ctx, batch...).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("redis: listing the tasks: %w", err)
		}
		for i, v := range values {
			str, ok := v.(string)
			if !ok { // expired since the scan
				continue
			}
			id := strings.TrimPrefix(batch[i], prefix)
			t, err := s.decode(id, []byte(str))
			if err != nil { // logged by decode
				continue
			}
			out = append(out, t.Summary())
		}
	}
	return tasks.NewestFirst(out, limit), nil
}

// globEscape escapes the characters SCAN's MATCH pattern gives a meaning.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
