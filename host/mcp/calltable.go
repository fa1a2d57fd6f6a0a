package mcp

import (
	"sync"
	"sync/atomic"
)

// callTable holds a session's calls in flight, by request id, the slots
// that bound how many run at once, and the count that bounds how many are
// in input rounds (waiting for the client's answers, or retrying).
type callTable struct {
	slots chan struct{} // running tools/call slots
	// waiting counts the calls in input rounds (call.inputRounds); at
	// most maxWaiting at once.
	waiting    atomic.Int64
	maxWaiting int64
	// inline counts the tools/calls started on the read loop, without a
	// worker (Session.inline; TestCallsStartInline reads it).
	inline atomic.Int64

	mu       sync.Mutex
	inflight map[string]*call
	closed   bool
}

func newCallTable(maxInFlight int) callTable {
	return callTable{slots: make(chan struct{}, maxInFlight), maxWaiting: int64(maxWaitingPerSlot * maxInFlight),
		inflight: make(map[string]*call)}
}

// close cancels every call in flight (they get no response) and refuses
// new ones.
func (t *callTable) close() {
	t.mu.Lock()
	t.closed = true
	for _, c := range t.inflight {
		c.cancelled = true
		c.reattach()
		c.cancel()
	}
	t.mu.Unlock()
}

// cancel cancels the call with the request id key, if it is in flight.
func (t *callTable) cancel(key string) {
	t.mu.Lock()
	if c := t.inflight[key]; c != nil {
		c.cancelled = true
		c.reattach()
		c.cancel()
	}
	t.mu.Unlock()
}

// reattach counts a detached call among the session's pending work
// again: it is being cancelled, and its end is work to wait for.
func (c *call) reattach() {
	if c.detached.CompareAndSwap(true, false) {
		c.s.pending.Add(1)
	}
}
