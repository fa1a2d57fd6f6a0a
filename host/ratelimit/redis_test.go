package ratelimit

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/plughost/plughost/internal/redistest"
)

func redisClient(t *testing.T, socket string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Network: "unix", Addr: socket, DisableIdentity: true, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

// TestReplicasShareOneLimit: two limiters (two replicas) on one Redis let
// one burst through together, their requests interleaved from goroutines
// of each; the day quota too, in a key that expires.
func TestReplicasShareOneLimit(t *testing.T) {
	srv := redistest.Start(t)
	p := &Policy{Caller: Limits{Rate: 0.001, Burst: 30, CallsPerDay: 1000}, Rules: []Rule{{Name: "contractors", Match: contractors(t), Limits: Limits{CallsPerDay: 7}}}}
	var limiters []*Limiter
	for range 2 {
		limiters = append(limiters, New(p, NewRedis(RedisOptions{Client: redisClient(t, srv.Socket)})))
	}
	var wg sync.WaitGroup
	var passed atomic.Int64
	for i := range 6 {
		wg.Go(func() { passed.Add(int64(passes(limiters[i%2], call(alice, "echo"), 20))) })
	}
	wg.Wait()
	if got := passed.Load(); got != 30 {
		t.Errorf("%d of 120 requests across two replicas passed, want one burst, 30", got)
	}
	ref := limiters[1].Check(context.Background(), call(alice, "echo"))
	if ref == nil || ref.Limit != LimitRate || ref.RetryAfter < 900*time.Second {
		t.Errorf("refusal %+v, want the rate, retry after ~1000s", ref)
	}

	// carl's day quota of 7, shared.
	passed.Store(0)
	for i := range 4 {
		wg.Go(func() { passed.Add(int64(passes(limiters[i%2], call(carl, "echo"), 5))) })
	}
	wg.Wait()
	if got := passed.Load(); got != 7 {
		t.Errorf("carl: %d of 20 calls passed, want his day's 7", got)
	}
	ref = limiters[0].Check(context.Background(), call(carl, "echo"))
	day, left := dayOf(time.Now())
	if ref == nil || ref.Rule != "contractors" || ref.Limit != LimitCallsPerDay || ref.RetryAfter > left+time.Second {
		t.Errorf("carl's refusal %+v, want contractors' calls_per_day, retry by midnight", ref)
	}
	c := redisClient(t, srv.Socket)
	ttl, err := c.TTL(context.Background(), "plughost:rate:contractors:carl:day:"+day).Result()
	if err != nil || ttl <= 0 || ttl > left+time.Hour+time.Second {
		t.Errorf("the day counter's TTL: %v %v, want until the day's end and an hour", ttl, err)
	}
	keys, _ := c.Keys(context.Background(), "*").Result()
	for _, k := range keys {
		if strings.Contains(k, "https://as") {
			t.Errorf("key %q names the caller's issuer: keys hold only the caller's key", k)
		}
	}
}

// TestRedisDownFallsBackToMemory: with Redis gone, each replica limits
// alone in memory: the limit still holds there, and the failure is
// counted and logged once.
func TestRedisDownFallsBackToMemory(t *testing.T) {
	srv := redistest.Start(t)
	socket, cut := srv.Proxy(t)
	var errs atomic.Int64
	l := New(&Policy{Caller: Limits{Rate: 0.001, Burst: 3}}, NewRedis(RedisOptions{Client: redisClient(t, socket), OnError: func() { errs.Add(1) }}))
	if got := passes(l, call(alice, "echo"), 2); got != 2 {
		t.Fatalf("with redis: %d of 2 passed", got)
	}
	cut()
	if got := passes(l, call(alice, "echo"), 5); got != 3 {
		t.Errorf("redis down: %d of 5 passed, want the burst of this replica's memory, 3", got)
	}
	if errs.Load() != 5 {
		t.Errorf("%d requests counted as weighed without redis, want 5", errs.Load())
	}
}
