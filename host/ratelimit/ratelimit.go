// Package ratelimit bounds what one caller may ask of the host, whatever
// the number of its sessions (issue 35): a request rate with bursts, and a
// number of tool calls per day, for every caller alike (the limits
// block's caller block), for the callers a rule matches (its rule
// blocks, first match wins), and per tool within either.
//
//	limits {
//	  caller {
//	    rate          = 50      # requests per second, and bursts of
//	    burst         = 100
//	    calls_per_day = 10000   # tools/call, per UTC day
//	    tool "files__write" { rate = 1 }
//	  }
//	  rule "contractors" {
//	    match = "'contractors' in caller.claims.groups"
//	    rate  = 5               # what it does not set, the caller block sets
//	  }
//	}
//
// # What counts
//
// The rate counts each request that reaches a provider: tools/call,
// resources/read, prompts/get, completion/complete and resources/subscribe
// and unsubscribe. Lists, pings and the tasks methods are answered from the
// host's memory: a client re-lists after each list_changed, and counting
// that would refuse the work it lists for. calls_per_day counts tools/call
// only: it is the quota a team pays for. A tool block limits the calls of
// that tool (its exposed name, as clients call it) beside the caller's
// own limits: a call takes a token from both, and passes only when both
// have one.
//
// # The algorithm
//
// The rate is GCRA (the generic cell rate algorithm, a token bucket kept
// as one time per bucket: when it is next full): a request passes when
// the bucket, refilled at rate per second up to burst, holds a token, and
// is otherwise refused with the time until it would. A day quota is a
// counter per UTC day. The buckets and counters of one request are taken
// together or not at all, so a refused request costs nothing.
//
// In one process they live in memory ([NewMemory]), at most
// DefaultMaxKeys of them, the least recently used forgotten first (a
// caller so forgotten starts with a full bucket and a day count of 0).
// Replicas share them in the Redis their tasks use ([NewRedis]): one Lua
// script takes a request's buckets and counters, on Redis' clock, so two
// replicas enforce one limit together. When Redis does not answer, each
// replica enforces the limits alone, in memory, asking Redis again every
// 2 s: it fails open to one replica's share, logged and counted, since a
// limiter that refused everyone while its store is down would take the
// whole team's service down with it.
package ratelimit

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/plughost/plughost/host/access"
	"github.com/plughost/plughost/host/tool"
)

// Limits are the limits of one caller, or of its calls of one tool. A
// zero field sets no limit (in a rule: the caller block's applies).
type Limits struct {
	// Rate is requests per second (fractions allowed: 0.1 is one every
	// 10 s); 0: no rate limit.
	Rate float64
	// Burst is how many requests may come at once after a quiet spell;
	// 0 means DefaultBurst of Rate.
	Burst int
	// CallsPerDay is how many tools/call a caller may make per UTC day;
	// 0: no quota.
	CallsPerDay int
	// Tools are the limits of the calls of a tool, by the name clients
	// call it by; nil in a tool's own Limits.
	Tools map[string]Limits
}

// DefaultBurst is the burst of a rate that sets none: one second's worth,
// at least 1.
func DefaultBurst(rate float64) int { return max(1, int(math.Ceil(rate))) }

// burst is l.Burst, its default applied.
func (l Limits) burst() int {
	if l.Burst > 0 {
		return l.Burst
	}
	return DefaultBurst(l.Rate)
}

// over is l with what o sets in place of l's: a rule over the caller
// block. A tool o names takes o's limits for it over l's.
func (l Limits) over(o Limits) Limits {
	r := Limits{Rate: l.Rate, Burst: l.Burst, CallsPerDay: l.CallsPerDay}
	if o.Rate > 0 {
		r.Rate, r.Burst = o.Rate, o.Burst
	}
	if o.Burst > 0 {
		r.Burst = o.Burst
	}
	if o.CallsPerDay > 0 {
		r.CallsPerDay = o.CallsPerDay
	}
	if len(l.Tools)+len(o.Tools) > 0 {
		r.Tools = make(map[string]Limits, len(l.Tools)+len(o.Tools))
		for name, t := range l.Tools {
			r.Tools[name] = t
		}
		for name, t := range o.Tools {
			r.Tools[name] = r.Tools[name].over(t)
		}
	}
	return r
}

// Rule gives the callers Match matches limits of their own.
type Rule struct {
	// Name is the rule's label: metrics and refusals name it.
	Name string
	// Match is a CEL expression over the caller (access.CompileMatch).
	Match *access.Match
	// Limits are the rule's; what they leave zero, the caller block's
	// set.
	Limits Limits
}

// Policy is the limits block's caller and rule blocks.
type Policy struct {
	// Caller is every caller's limits, but those a rule matches.
	Caller Limits
	// Rules are tried in order; the first whose Match holds decides.
	Rules []Rule
}

// CallerRule is the rule name refusals and metrics give the caller block.
const CallerRule = "caller"

// resolve returns the rule that applies to c and its limits.
func (p *Policy) resolve(c *tool.Caller) (string, Limits) {
	for _, r := range p.Rules {
		if ok, _ := r.Match.Matches(c, &tool.Item{}, nil); ok { // one that cannot be evaluated does not hold
			return r.Name, p.Caller.over(r.Limits)
		}
	}
	return CallerRule, p.Caller
}

// The limits a Refusal names (the metric's limit label).
const (
	LimitRate            = "rate"
	LimitCallsPerDay     = "calls_per_day"
	LimitToolRate        = "tool_rate"
	LimitToolCallsPerDay = "tool_calls_per_day"
)

// Request is one request to weigh.
type Request struct {
	// Caller is who asks; Key names it (the same caller, the same key,
	// on every replica), and is all a store keeps of it.
	Caller *tool.Caller
	Key    string
	// Tool is the tool a tools/call calls; "" for other requests.
	Tool string
	// Call marks a tools/call: it counts toward calls_per_day.
	Call bool
}

// Refusal says why a request is over its caller's limits.
type Refusal struct {
	// Rule is the rule whose limits apply (CallerRule for the caller
	// block).
	Rule string
	// Limit is one of the Limit… names; Tool is the tool of a tool's
	// limit.
	Limit string
	Tool  string
	// Allowed is the limit's value, as the message spells it.
	Allowed string
	// RetryAfter is how long until the request would pass.
	RetryAfter time.Duration
}

// Error is the message a client reads: the limit, the rule, when to retry.
func (r *Refusal) Error() string {
	what := r.Allowed
	if r.Tool != "" {
		what += " of tool " + strconv.Quote(r.Tool)
	}
	return fmt.Sprintf("rate limit exceeded: %s allows %s; retry after %v", ruleName(r.Rule), what, r.RetryAfter.Round(time.Millisecond))
}

func ruleName(rule string) string {
	if rule == CallerRule {
		return "the caller limits"
	}
	return "rule " + strconv.Quote(rule)
}

// A Store keeps the buckets and day counters.
type Store interface {
	// Take takes one token from each bucket and one from each quota, all
	// or none, at now; it returns -1 and 0 when it took them, else the
	// index of the one that refused (buckets first, then quotas) and the
	// time until it would not. err is a store that did not answer.
	Take(ctx context.Context, now time.Time, buckets []Bucket, quotas []Quota) (refused int, wait time.Duration, err error)
}

// Bucket is one token bucket: Key names it, refilled at Rate per second
// up to Burst.
type Bucket struct {
	Key   string
	Rate  float64
	Burst int
}

// Quota is one day counter: Key names it (without the day), at most Max a
// UTC day.
type Quota struct {
	Key string
	Max int
}

// Limiter applies a Policy to requests. Update swaps the policy while
// requests are weighed (a configuration reload). It is safe for concurrent
// use.
type Limiter struct {
	policy atomic.Pointer[Policy]
	active atomic.Bool // the policy limits something
	store  Store
	now    func() time.Time
}

// New returns a limiter of p (nil: none) keeping its buckets in store.
func New(p *Policy, store Store) *Limiter {
	l := &Limiter{store: store, now: time.Now}
	l.Update(p)
	return l
}

// Update makes p the policy of the requests weighed from now on (nil:
// none). A bucket keeps its level across an update: a new rate applies to
// what is left, so a reload gives nobody a fresh burst.
func (l *Limiter) Update(p *Policy) {
	if p == nil {
		p = &Policy{}
	}
	l.policy.Store(p)
	l.active.Store(len(p.Rules) > 0 || p.Caller.Rate > 0 || p.Caller.CallsPerDay > 0 || len(p.Caller.Tools) > 0)
}

// Active reports whether the policy limits anything: a caller may skip
// naming requests to Check when it does not.
func (l *Limiter) Active() bool { return l.active.Load() }

// Check weighs one request: nil when it passes (its tokens taken), else
// why not. A store that fails is the caller's Store's to absorb (the
// Redis store falls back to memory); Check itself never refuses for it.
func (l *Limiter) Check(ctx context.Context, r Request) *Refusal {
	rule, lim := l.policy.Load().resolve(r.Caller)
	type limit struct{ name, tool, allowed string }
	var (
		buckets [2]Bucket
		quotas  [2]Quota
		bl, ql  [2]limit
		nb, nq  int
	)
	prefix := rule + ":" + r.Key
	if lim.Rate > 0 {
		buckets[nb], bl[nb] = Bucket{Key: prefix + ":rate", Rate: lim.Rate, Burst: lim.burst()}, limit{LimitRate, "", perSecond(lim)}
		nb++
	}
	if r.Call && lim.CallsPerDay > 0 {
		quotas[nq], ql[nq] = Quota{Key: prefix + ":day", Max: lim.CallsPerDay}, limit{LimitCallsPerDay, "", strconv.Itoa(lim.CallsPerDay) + " tool calls per day"}
		nq++
	}
	if t, ok := lim.Tools[r.Tool]; ok && r.Tool != "" {
		key := prefix + ":tool:" + r.Tool
		if t.Rate > 0 {
			buckets[nb], bl[nb] = Bucket{Key: key + ":rate", Rate: t.Rate, Burst: t.burst()}, limit{LimitToolRate, r.Tool, perSecond(t)}
			nb++
		}
		if r.Call && t.CallsPerDay > 0 {
			quotas[nq], ql[nq] = Quota{Key: key + ":day", Max: t.CallsPerDay}, limit{LimitToolCallsPerDay, r.Tool, strconv.Itoa(t.CallsPerDay) + " calls per day"}
			nq++
		}
	}
	if nb+nq == 0 {
		return nil
	}
	i, wait, _ := l.store.Take(ctx, l.now(), buckets[:nb], quotas[:nq])
	if i < 0 {
		return nil
	}
	var which limit
	if i < nb {
		which = bl[i]
	} else {
		which = ql[i-nb]
	}
	return &Refusal{Rule: rule, Limit: which.name, Tool: which.tool, Allowed: which.allowed, RetryAfter: wait}
}

// perSecond spells a rate limit.
func perSecond(l Limits) string {
	return strconv.FormatFloat(l.Rate, 'g', -1, 64) + " requests per second (bursts of " + strconv.Itoa(l.burst()) + ")"
}

// dayOf is the UTC day of t, as a key names it, and the time left until
// the next one.
func dayOf(t time.Time) (string, time.Duration) {
	t = t.UTC()
	next := time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, time.UTC)
	return t.Format(time.DateOnly), next.Sub(t)
}
