package ratelimit

import (
	"context"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/plughost/plughost/internal/redistest"
)

// benchCheck weighs calls of 1000 callers in turn, each under a caller
// limit and a tool limit with a day quota (three keys a call), limits
// high enough that every call passes.
func benchCheck(b *testing.B, store Store) {
	l := New(&Policy{Caller: Limits{Rate: 1e5, Burst: 1e6, CallsPerDay: 1e9, Tools: map[string]Limits{"echo": {Rate: 1e5, Burst: 1e6}}}}, store)
	reqs := make([]Request, 1000)
	for i := range reqs {
		reqs[i] = call(alice, "echo")
		reqs[i].Key = strconv.Itoa(i)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if ref := l.Check(context.Background(), reqs[i%len(reqs)]); ref != nil {
			b.Fatal(ref)
		}
	}
}

func BenchmarkCheckMemory(b *testing.B) { benchCheck(b, NewMemory(0)) }

// BenchmarkCheckRedis: a real redis-server on a unix socket: one round
// trip and the script a call.
func BenchmarkCheckRedis(b *testing.B) {
	srv := redistest.Start(b)
	c := redis.NewClient(&redis.Options{Network: "unix", Addr: srv.Socket, DisableIdentity: true})
	b.Cleanup(func() { c.Close() })
	benchCheck(b, NewRedis(RedisOptions{Client: c}))
}
