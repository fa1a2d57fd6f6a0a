package ratelimit

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/plughost/plughost/host/access"
	"github.com/plughost/plughost/host/tool"
)

// clock is a fake time a Limiter reads.
type clock struct{ t time.Time }

func (c *clock) now() time.Time               { return c.t }
func (c *clock) advance(d time.Duration)      { c.t = c.t.Add(d) }
func newClock() *clock                        { return &clock{t: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)} }
func memLimiter(p *Policy, c *clock) *Limiter { l := New(p, NewMemory(0)); l.now = c.now; return l }

var (
	alice = &tool.Caller{Subject: "alice", Issuer: "https://as", Claims: map[string]any{"groups": []any{"staff"}}}
	carl  = &tool.Caller{Subject: "carl", Issuer: "https://as", Claims: map[string]any{"groups": []any{"contractors"}}}
)

func call(c *tool.Caller, toolName string) Request {
	return Request{Caller: c, Key: c.Subject, Tool: toolName, Call: true}
}

func contractors(t *testing.T) *access.Match {
	t.Helper()
	m, err := access.CompileMatch(access.Source{Name: "contractors", Expr: "has(caller.claims.groups) && 'contractors' in caller.claims.groups", File: "f", Line: 1, Column: 1})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// passes counts the requests that pass of n in a row, at one instant.
func passes(l *Limiter, r Request, n int) int {
	ok := 0
	for range n {
		if l.Check(context.Background(), r) == nil {
			ok++
		}
	}
	return ok
}

// TestBurstThenRate: a burst passes at once, the next is refused naming
// the limit and the wait, and a token comes back after 1/rate.
func TestBurstThenRate(t *testing.T) {
	c := newClock()
	l := memLimiter(&Policy{Caller: Limits{Rate: 2, Burst: 3}}, c)
	if got := passes(l, call(alice, "echo"), 5); got != 3 {
		t.Fatalf("%d of 5 passed at once, want the burst, 3", got)
	}
	ref := l.Check(context.Background(), call(alice, "echo"))
	if ref == nil || ref.Rule != CallerRule || ref.Limit != LimitRate || ref.RetryAfter != 500*time.Millisecond {
		t.Fatalf("refusal %+v, want the caller's rate, retry after 500ms", ref)
	}
	if want := "rate limit exceeded: the caller limits allows 2 requests per second (bursts of 3); retry after 500ms"; ref.Error() != want {
		t.Errorf("message %q, want %q", ref.Error(), want)
	}
	// Another caller has a bucket of its own.
	if got := passes(l, call(carl, "echo"), 3); got != 3 {
		t.Errorf("carl: %d of 3 passed", got)
	}
	c.advance(500 * time.Millisecond)
	if got := passes(l, call(alice, "echo"), 2); got != 1 {
		t.Errorf("after 500ms: %d passed, want 1", got)
	}
}

// TestRuleOverridesCaller: the first rule matching sets its own limits,
// and what it leaves unset comes from the caller block.
func TestRuleOverridesCaller(t *testing.T) {
	c := newClock()
	p := &Policy{Caller: Limits{Rate: 50, Burst: 100, CallsPerDay: 4}, Rules: []Rule{{Name: "contractors", Match: contractors(t), Limits: Limits{Rate: 2}}}}
	l := memLimiter(p, c)
	if got := passes(l, call(carl, "echo"), 10); got != 2 {
		t.Errorf("carl (contractor): %d of 10 passed, want the rule's burst, 2", got)
	}
	ref := l.Check(context.Background(), call(carl, "echo"))
	if ref == nil || ref.Rule != "contractors" || ref.Limit != LimitRate {
		t.Errorf("carl's refusal %+v, want rule contractors' rate", ref)
	}
	// The day quota is the caller block's, for both.
	if got := passes(l, call(alice, "echo"), 10); got != 4 {
		t.Errorf("alice: %d of 10 passed, want calls_per_day, 4", got)
	}
	c.advance(time.Hour)
	if got := passes(l, call(carl, "echo"), 5); got != 2 {
		t.Errorf("carl after an hour: %d passed, want his day's 4 less 2 taken", got)
	}
	ref = l.Check(context.Background(), call(alice, "echo"))
	if ref == nil || ref.Limit != LimitCallsPerDay || ref.RetryAfter != 11*time.Hour {
		t.Errorf("alice's refusal %+v, want calls_per_day, retry at midnight UTC (11h)", ref)
	}
	// A request that is not a call does not count toward the day.
	if l.Check(context.Background(), Request{Caller: alice, Key: "alice"}) != nil {
		t.Error("a read was refused by the day quota of calls")
	}
	c.advance(11 * time.Hour)
	if l.Check(context.Background(), call(alice, "echo")) != nil {
		t.Error("a new day did not reset the quota")
	}
}

// TestToolLimits: a tool's limits apply to its calls beside the caller's,
// and a refused request takes nothing from any bucket.
func TestToolLimits(t *testing.T) {
	c := newClock()
	l := memLimiter(&Policy{Caller: Limits{Rate: 1, Burst: 3, Tools: map[string]Limits{"write": {Rate: 1, Burst: 1, CallsPerDay: 2}}}}, c)
	if l.Check(context.Background(), call(alice, "write")) != nil {
		t.Fatal("the first write was refused")
	}
	ref := l.Check(context.Background(), call(alice, "write"))
	if ref == nil || ref.Limit != LimitToolRate || ref.Tool != "write" {
		t.Fatalf("second write: %+v, want the tool's rate", ref)
	}
	// The refused write took no token of the caller's: two more pass.
	if got := passes(l, call(alice, "echo"), 3); got != 2 {
		t.Errorf("echo after a refused write: %d passed, want 2", got)
	}
	c.advance(3 * time.Second)
	if l.Check(context.Background(), call(alice, "write")) != nil {
		t.Fatal("the second write, later, was refused")
	}
	c.advance(3 * time.Second)
	ref = l.Check(context.Background(), call(alice, "write"))
	if ref == nil || ref.Limit != LimitToolCallsPerDay {
		t.Errorf("third write: %+v, want the tool's calls_per_day", ref)
	}
}

// TestUpdateKeepsLevels: a new policy applies to the next request, and a
// bucket keeps what was taken from it.
func TestUpdateKeepsLevels(t *testing.T) {
	c := newClock()
	l := memLimiter(&Policy{Caller: Limits{Rate: 1, Burst: 2}}, c)
	passes(l, call(alice, "echo"), 2)
	l.Update(&Policy{Caller: Limits{Rate: 1, Burst: 4}})
	if got := passes(l, call(alice, "echo"), 5); got != 2 {
		t.Errorf("after raising the burst to 4: %d passed, want the 2 left", got)
	}
	l.Update(nil)
	if got := passes(l, call(alice, "echo"), 5); got != 5 {
		t.Errorf("with no limits: %d of 5 passed", got)
	}
}

// TestMemoryBounded: the store keeps at most its bound, forgetting the
// least recently used.
func TestMemoryBounded(t *testing.T) {
	m := NewMemory(10)
	l := New(&Policy{Caller: Limits{Rate: 1, Burst: 1}}, m)
	for i := range 100 {
		l.Check(context.Background(), Request{Caller: alice, Key: string(rune('a' + i))})
	}
	if m.Len() != 10 {
		t.Errorf("the store keeps %d keys, want its bound, 10", m.Len())
	}
}

// TestConcurrentChecks: under -race, many goroutines at one bucket let
// exactly its burst through (the rate is too slow to refill meanwhile).
func TestConcurrentChecks(t *testing.T) {
	l := New(&Policy{Caller: Limits{Rate: 0.001, Burst: 25}}, NewMemory(0))
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for range 8 {
		wg.Go(func() {
			n := passes(l, call(alice, "echo"), 20)
			mu.Lock()
			ok += n
			mu.Unlock()
		})
	}
	wg.Wait()
	if ok != 25 {
		t.Errorf("%d passed, want 25", ok)
	}
}
