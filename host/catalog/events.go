package catalog

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/plughost/plughost/host/tool"
)

// clock is the time source of the coalescer; tests drive a fake one.
type clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) stopper
}

// stopper is a pending AfterFunc.
type stopper interface{ Stop() bool }

type realClock struct{}

func (realClock) Now() time.Time                              { return time.Now() }
func (realClock) AfterFunc(d time.Duration, f func()) stopper { return time.AfterFunc(d, f) }

// events turns a stream of changes into coalesced calls of the subscribers.
//
// A change starts (or extends) a burst; the burst ends Quiet after its last
// change, or MaxDelay after its first one, whichever comes first. Then the
// dispatcher goroutine calls every subscriber once, in subscription order,
// with the kinds of list the burst changed (every change says which).
// Changes during a delivery start the next burst; a slow subscriber delays
// deliveries, never Set or Remove. Bursts that end while a delivery waits
// join it: their kinds are merged.
type events struct {
	clock    clock
	quiet    time.Duration
	maxDelay time.Duration
	maxHold  time.Duration

	mu         sync.Mutex
	closed     bool
	pending    bool          // a burst is open
	burst      tool.Change   // what the open burst changed
	due        tool.Change   // what ended bursts changed, not yet delivered
	burstStart time.Time     // first change of the open burst
	timer      stopper       // ends the open burst
	gen        uint64        // identifies the current timer; a stale one does nothing
	bursts     atomic.Uint64 // bursts ended and handed to the dispatcher
	holds      int           // open holds: a burst does not end while > 0
	holdEpoch  uint64        // counts the times holds went from 0 to 1

	subMu sync.Mutex
	subs  []*subscriber

	deliver chan struct{} // capacity 1: at most one delivery waits
	done    chan struct{} // closed by Close
	stopped atomic.Bool   // set by close; checked before each callback
	wg      sync.WaitGroup
}

type subscriber struct {
	fn        func(tool.Change)
	cancelled atomic.Bool
}

func newEvents(clk clock, quiet, maxDelay, maxHold time.Duration) *events {
	e := &events{
		clock:    clk,
		quiet:    quiet,
		maxDelay: maxDelay,
		maxHold:  maxHold,
		deliver:  make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
	e.wg.Add(1)
	go e.dispatch()
	return e
}

// changed records one change of the lists ch says: it opens a burst or
// extends the open one.
func (e *events) changed(ch tool.Change) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	e.burst = merge(e.burst, ch)
	now := e.clock.Now()
	if !e.pending {
		e.pending = true
		e.burstStart = now
	}
	wait := e.quiet
	if left := e.burstStart.Add(e.maxDelay).Sub(now); left < wait {
		wait = max(left, 0)
	}
	if e.timer != nil {
		e.timer.Stop()
	}
	e.gen++
	gen := e.gen
	e.timer = e.clock.AfterFunc(wait, func() { e.fire(gen) })
}

// fire ends the burst whose timer is gen and hands it to the dispatcher.
func (e *events) fire(gen uint64) {
	e.mu.Lock()
	if e.closed || gen != e.gen || !e.pending {
		e.mu.Unlock()
		return // stopped too late, or superseded
	}
	e.timer = nil
	if e.holds > 0 {
		e.mu.Unlock()
		return // the last release ends the burst
	}
	e.endBurst()
}

// endBurst hands the open burst to the dispatcher. e.mu must be held; it is
// released.
func (e *events) endBurst() {
	e.pending = false
	e.due = merge(e.due, e.burst)
	e.burst = tool.Change{}
	e.bursts.Add(1)
	e.mu.Unlock()
	select {
	case e.deliver <- struct{}{}:
	default: // a delivery is already waiting; it covers this burst too
	}
}

// hold keeps the open burst (and any burst that opens meanwhile) from ending
// until release is called, or maxHold has passed, so that a batch of work
// the caller knows belongs together (the plugins of one burst of directory
// changes, each loading at its own pace) becomes one event.
// held reports whether a hold is open, and which: epoch counts the
// periods during which one or more holds were open, so that the catalog
// tells a hold from the next.
func (e *events) held() (epoch uint64, open bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.holdEpoch, e.holds > 0
}

func (e *events) hold() (release func()) {
	e.mu.Lock()
	if e.holds == 0 {
		e.holdEpoch++
	}
	e.holds++
	e.mu.Unlock()
	var once sync.Once
	var timeout stopper
	release = func() {
		once.Do(func() {
			e.mu.Lock()
			if timeout != nil {
				timeout.Stop()
			}
			e.holds--
			if e.holds == 0 && e.pending && !e.closed {
				// The held work is done: the burst ends now, without
				// waiting out the quiet period.
				if e.timer != nil {
					e.timer.Stop()
					e.timer = nil
				}
				e.gen++
				e.endBurst()
				return
			}
			e.mu.Unlock()
		})
	}
	e.mu.Lock()
	timeout = e.clock.AfterFunc(e.maxHold, release)
	e.mu.Unlock()
	return release
}

// dispatch is the one goroutine that calls subscribers.
func (e *events) dispatch() {
	defer e.wg.Done()
	for {
		select {
		case <-e.done:
			return
		case <-e.deliver:
		}
		e.mu.Lock()
		ch := e.due
		e.due = tool.Change{}
		e.mu.Unlock()
		if ch == (tool.Change{}) {
			continue // delivered with an earlier signal
		}
		e.subMu.Lock()
		subs := e.subs // subscribe and cancel copy, never modify in place
		e.subMu.Unlock()
		for _, s := range subs {
			if e.stopped.Load() {
				return
			}
			if !s.cancelled.Load() {
				s.fn(ch)
			}
		}
	}
}

func (e *events) subscribe(fn func(tool.Change)) (cancel func()) {
	e.subMu.Lock()
	defer e.subMu.Unlock()
	s := &subscriber{fn: fn}
	e.subs = append(e.subs[:len(e.subs):len(e.subs)], s)
	return func() {
		s.cancelled.Store(true)
		e.subMu.Lock()
		defer e.subMu.Unlock()
		for i, x := range e.subs {
			if x == s {
				subs := make([]*subscriber, 0, len(e.subs)-1)
				e.subs = append(append(subs, e.subs[:i]...), e.subs[i+1:]...)
				return
			}
		}
	}
}

// close stops the timer and the dispatcher and waits for a callback in
// progress to return.
func (e *events) close() {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		e.wg.Wait()
		return
	}
	e.closed = true
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
	e.mu.Unlock()
	e.stopped.Store(true)
	close(e.done)
	e.wg.Wait()
}

// merge returns the kinds a or b changed.
func merge(a, b tool.Change) tool.Change {
	return tool.Change{Tools: a.Tools || b.Tools, Resources: a.Resources || b.Resources, Prompts: a.Prompts || b.Prompts}
}
