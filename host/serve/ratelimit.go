package serve

import (
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/redis/go-redis/v9"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/host/ratelimit"
)

// rateLimits are serve's per-caller rate limits (the limits block's
// caller and rule blocks; host/ratelimit): kept in the Redis of the tasks
// block when it has one, so that the replicas limit each caller together,
// else in this process. The limiter exists whenever serve does, limits or
// none, so that a reload can add them.
type rateLimits struct {
	limiter *ratelimit.Limiter
	client  *redis.Client // nil in memory
}

// openRateLimits opens serve's limiter for cfg; the redis password is
// read as the tasks' is (before serve clears the environment).
func openRateLimits(cfg *config.Config, obs *observer, getenv func(string) string, log hclog.Logger) (*rateLimits, error) {
	r := cfg.Tasks.Redis
	if r == nil {
		return &rateLimits{limiter: ratelimit.New(cfg.Limits.Callers, ratelimit.NewMemory(0))}, nil
	}
	password, err := redisPassword(r, getenv, log)
	if err != nil {
		return nil, err
	}
	network := "tcp"
	if strings.HasPrefix(r.Address, "/") {
		network = "unix"
	}
	// Its own connections: a request weighed never waits behind the
	// tasks' subscription or their transactions.
	client := redis.NewClient(&redis.Options{Network: network, Addr: r.Address, Username: r.Username, Password: password, DB: r.DB,
		DisableIdentity: true, ContextTimeoutEnabled: true, MaxRetries: -1})
	opts := ratelimit.RedisOptions{Client: client, KeyPrefix: r.KeyPrefix, Logger: log}
	if obs.metrics != nil {
		opts.OnError = obs.metrics.RateLimitStoreError
	}
	log.Debug("rate limits are kept in redis", "address", r.Address)
	return &rateLimits{limiter: ratelimit.New(cfg.Limits.Callers, ratelimit.NewRedis(opts)), client: client}, nil
}

// close closes the connections to redis.
func (r *rateLimits) close() {
	if r != nil && r.client != nil {
		r.client.Close()
	}
}

// onRateLimited is mcp.Options.OnRateLimited: the metrics and the audit
// log, whichever are on; nil when neither is.
func (o *observer) onRateLimited() func(*mcp.RateLimited) {
	if o.metrics == nil && o.audit == nil {
		return nil
	}
	return func(e *mcp.RateLimited) {
		if o.metrics != nil {
			o.metrics.RateLimited(e.Refusal.Rule, e.Refusal.Limit)
		}
		if o.audit != nil {
			o.audit.RateLimited(e)
		}
	}
}

// reloadRateLimits is the reload of the limits block's caller and rule
// blocks: the limiter takes next's for the requests weighed from now on
// (a caller's buckets keep their levels: a reload gives nobody a fresh
// burst). Where the buckets are kept (the tasks' redis, or memory) is the
// start's: a redis block added, removed or moved applies at the next
// start, which the reload's own warning names.
func (h *Host) reloadRateLimits(_, next *config.Config) error {
	if h.rate == nil { // not serving
		return nil
	}
	h.rate.limiter.Update(next.Limits.Callers)
	return nil
}

// rateLimiter is mcp.Options.RateLimit: nil when not serving.
func (h *Host) rateLimiter() *ratelimit.Limiter {
	if h.rate == nil {
		return nil
	}
	return h.rate.limiter
}
