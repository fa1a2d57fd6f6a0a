package ratelimit

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/redis/go-redis/v9"
)

// take is the GCRA of Memory.Take in one Lua script, run on the Redis
// server's clock (TIME: the replicas' clocks need not agree), all of a
// request's buckets and counters taken together or none.
//
// KEYS are the buckets' keys, then the day counters' (their day in the
// key). ARGV[1] is the number of buckets; then each bucket's emission
// interval and burst, in microseconds and tokens; then each counter's
// most and its expiry in seconds. It returns {-1, 0} when it took them,
// else {the index (from 0) of the one that refused, the wait in
// microseconds} (a counter's wait is the caller's to compute: -1).
var take = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local n = tonumber(ARGV[1])
local refused, worst = -1, 0
local tats = {}
for i = 1, n do
  local interval = tonumber(ARGV[2 * i])
  local burst = tonumber(ARGV[2 * i + 1])
  local tat = tonumber(redis.call('GET', KEYS[i]) or '0')
  if tat < now then tat = now end
  local nxt = tat + interval
  local wait = nxt - now - burst * interval
  if wait > 0 then
    if wait > worst then refused, worst = i - 1, wait end
  end
  tats[i] = nxt
end
if refused >= 0 then return {refused, worst} end
local base = 2 * n + 2
for j = n + 1, #KEYS do
  local most = tonumber(ARGV[base + 2 * (j - n - 1)])
  if tonumber(redis.call('GET', KEYS[j]) or '0') >= most then return {j - 1, -1} end
end
for i = 1, n do
  redis.call('SET', KEYS[i], tats[i], 'PX', math.ceil((tats[i] - now) / 1000) + 1)
end
for j = n + 1, #KEYS do
  if redis.call('INCR', KEYS[j]) == 1 then
    redis.call('EXPIRE', KEYS[j], ARGV[base + 2 * (j - n - 1) + 1])
  end
end
return {-1, 0}
`)

// DefaultRedisTimeout bounds one exchange with Redis: past it the
// request is weighed in memory.
const DefaultRedisTimeout = time.Second

// retryRedis is how long after a failed exchange the store weighs
// requests in memory without asking Redis: during an outage a request
// does not wait out a timeout each, and Redis is asked again soon after it
// is back.
const retryRedis = 2 * time.Second

// RedisOptions configure a Redis store.
type RedisOptions struct {
	// Client is the connection to the Redis the replicas share.
	Client *redis.Client
	// KeyPrefix starts every key ("plughost:" when empty): the keys are
	// <prefix>rate:<rule>:<caller's digest>:rate, :day:<UTC date>,
	// :tool:<name>:rate and :tool:<name>:day:<UTC date>.
	KeyPrefix string
	// Timeout bounds each exchange (DefaultRedisTimeout).
	Timeout time.Duration
	// Fallback weighs requests while Redis does not answer (NewMemory(0)
	// when nil).
	Fallback *Memory
	// Logger tells of Redis failing and answering again; nil: nothing.
	Logger hclog.Logger
	// OnError, when not nil, is told of each request weighed in memory
	// because Redis failed (metrics count them).
	OnError func()
}

// Redis is a Store the replicas share. Its buckets are approximate in one
// way: while Redis does not answer, each replica weighs its requests in
// its own memory (RedisOptions.Fallback), so the team allows up to one
// limit per replica.
type Redis struct {
	opts RedisOptions

	mu     sync.Mutex
	failed bool      // the last exchange failed: logged once until one succeeds
	retry  time.Time // while failed, when to ask Redis again
}

// NewRedis returns a store in the Redis of opts.Client.
func NewRedis(opts RedisOptions) *Redis {
	if opts.KeyPrefix == "" {
		opts.KeyPrefix = "plughost:"
	}
	opts.KeyPrefix += "rate:"
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultRedisTimeout
	}
	if opts.Fallback == nil {
		opts.Fallback = NewMemory(0)
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	return &Redis{opts: opts}
}

// Take implements Store.
func (r *Redis) Take(ctx context.Context, now time.Time, buckets []Bucket, quotas []Quota) (int, time.Duration, error) {
	day, left := dayOf(now)
	keys := make([]string, 0, len(buckets)+len(quotas))
	args := make([]any, 1, 1+2*cap(keys))
	args[0] = len(buckets)
	for _, b := range buckets {
		keys = append(keys, r.opts.KeyPrefix+b.Key)
		args = append(args, int64(float64(time.Second/time.Microsecond)/b.Rate), b.Burst)
	}
	for _, q := range quotas {
		keys = append(keys, r.opts.KeyPrefix+q.Key+":"+day)
		args = append(args, q.Max, int64((left+time.Hour)/time.Second)) // an hour more: replicas' clocks disagree a little on the day
	}
	var res []int64
	err := errSkipped
	if r.asking(now) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.Timeout)
		defer cancel()
		res, err = take.Run(ctx, r.opts.Client, keys, args...).Int64Slice()
		if err == nil && len(res) != 2 {
			err = errors.New("the rate limit script answered " + strconv.Itoa(len(res)) + " values, not 2")
		}
		r.note(err, now)
	}
	if err != nil {
		if r.opts.OnError != nil {
			r.opts.OnError()
		}
		i, wait, _ := r.opts.Fallback.Take(ctx, now, buckets, quotas)
		return i, wait, err
	}
	switch i := int(res[0]); {
	case i < 0:
		return -1, 0, nil
	case res[1] < 0:
		return i, left, nil
	default:
		return i, time.Duration(res[1]) * time.Microsecond, nil
	}
}

// errSkipped is the error of a request weighed in memory without asking
// Redis, which failed moments ago.
var errSkipped = errors.New("redis failed less than " + retryRedis.String() + " ago")

// asking reports whether to ask Redis at now: not within retryRedis of a
// failure.
func (r *Redis) asking(now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.failed || !now.Before(r.retry)
}

// note logs the first failure of a run of them, and the first success
// after one.
func (r *Redis) note(err error, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.retry = now.Add(retryRedis)
	}
	switch {
	case err != nil && !r.failed:
		r.failed = true
		r.opts.Logger.Warn("rate limits: redis does not answer; this replica limits its callers alone, in memory, until it does", "error", err)
	case err == nil && r.failed:
		r.failed = false
		r.opts.Logger.Info("rate limits: redis answers again; the replicas limit their callers together")
	}
}
