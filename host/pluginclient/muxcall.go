package pluginclient

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/internal/pluginpb"
)

// muxCall is one call on the CallsV2 stream, started by start; no
// goroutine waits for it (Client.CallTool waits for its done). Its life:
//
//   - The stream's reader hands it each of its frames (deliver). An answer
//     that finds nothing queued and no callback running ends the call
//     there: done runs on the reader. Anything else is queued, and a
//     goroutine of the call's own (drain, started when the queue fills
//     from empty) runs the Progress, Log and Detach callbacks in order,
//     then done with the answer. So a slow callback holds back its own
//     call only, and a callback may itself call the plugin.
//   - The queue is bounded (maxQueued frames, maxQueuedBytes): beyond it
//     the plugin's progress and log frames are dropped, never its answer.
//     On the shared stream nothing holds a flooding plugin back but this.
//   - Whoever removes the call's id from the stream ends it: the reader
//     with its answer, the stream's break (broke), or the end of ctx
//     (abandon, which tells the plugin). done runs exactly once; nothing
//     is delivered after it, and never a Detach callback with or after it.
//     A break or the end of ctx that finds a callback running leaves the
//     end to drain, after that callback.
//
// Calls are recycled through callPool once the reader answered them (it
// has then forgotten their id), after done.
type muxCall struct {
	m    *mux
	ctx  context.Context
	req  *pluginhost.CallRequest
	done func(json.RawMessage, error)
	mu   sync.Mutex
	// stop stops start's watch on ctx; set before the Start is sent (a
	// break may end the call before).
	stop   func() bool
	queue  []*pluginpb.PluginFrame
	queued int // bytes of the notifications in queue
	// detach: a Detach frame was queued; later ones are dropped (a call
	// goes on as a task once). detached: Detach ran.
	detach, detached bool
	draining         bool  // drain runs: it ends the call
	ended            bool  // done ran or is about to: later frames are dropped
	cancelled        error // ctx ended while draining: the call ends with it
	broken           error // the stream broke while draining: after the queue, the call ends with it

	// The Start frame, reused from call to call.
	start      pluginpb.CallStart
	startMsg   pluginpb.HostFrame_Start
	startFrame pluginpb.HostFrame
}

var callPool = sync.Pool{New: func() any { return new(muxCall) }}

// frameKind is what a frame means to its call.
type frameKind uint8

const (
	answerFrame       frameKind = iota // result, error or input_required: the call's last
	notificationFrame                  // progress or log
	detachFrame                        // the call goes on as a task
	laterFrame                         // of a later contract revision: ignored
)

const (
	// argsChunk is the most argument bytes one HostFrame carries: larger
	// arguments are sent in pieces, interleaved with other calls' frames.
	argsChunk = 64 << 10
	// maxQueued is how many frames may wait for a call whose callbacks are
	// busy. Beyond it the plugin's progress and log frames for the call
	// are dropped, never its answer.
	maxQueued = 1000
	// maxQueuedBytes bounds the same queue in bytes (a log message may be
	// large).
	maxQueuedBytes = 4 << 20
)

// pendingCall is a call sent: what gives it up (abandon) when its
// ctx ends. Zero for a call that needs no giving up (it ended at once, or
// it is a contract-1 call, whose stream ends with ctx).
type pendingCall struct {
	m    *mux
	s    *muxStream
	id   uint64
	call *muxCall
}

// start runs req on the CallsV2 stream without waiting: the frames are
// sent on the calling goroutine, and done gets the answer (see muxCall).
// With watch, the end of ctx abandons the call; without, the caller does.
func (m *mux) start(ctx context.Context, req *pluginhost.CallRequest, args json.RawMessage, in *pluginpb.Input, done func(json.RawMessage, error), watch bool) pendingCall {
	s, id, call, err := m.register(ctx, req, done)
	if err != nil {
		done(nil, callError(ctx, m.exited, req.Tool, err))
		return pendingCall{}
	}
	st := pendingCall{m, s, id, call}
	if watch {
		// Before the Start: nothing answers the call until it is sent,
		// and a call is recycled only once answered.
		stop := context.AfterFunc(ctx, st.abandon)
		call.mu.Lock()
		call.stop = stop
		call.mu.Unlock()
	}
	call.prepare(req, args, in)
	m.sendCall(ctx, s, id, call, args)
	return st
}

// abandon gives up a call whose ctx ended first, unless it ended already:
// the plugin is told, and done gets ctx's error.
func (st pendingCall) abandon() {
	m, s, id, call := st.m, st.s, st.id, st.call
	if m == nil || !m.finish(s, id) {
		return // answered or broken: call may be another's by now
	}
	// On its own goroutine: the stream may be slow to take it.
	go s.send(&pluginpb.HostFrame{CallId: id, Msg: &pluginpb.HostFrame_Cancel{Cancel: &pluginpb.CallCancel{}}})
	err := fmt.Errorf("call %q: %w", call.req.Tool, call.ctx.Err())
	call.mu.Lock()
	if call.draining {
		call.cancelled = err
		call.mu.Unlock()
		return
	}
	call.ended = true
	call.mu.Unlock()
	call.end(nil, err, false)
}

// deliver takes one frame of the call, on the stream's reader goroutine.
func (c *muxCall) deliver(f *pluginpb.PluginFrame, kind frameKind) {
	size := 0
	if kind == notificationFrame {
		size = len(f.GetLog().GetData()) + len(f.GetProgress().GetMessage()) + 32
	}
	c.mu.Lock()
	switch {
	case c.ended:
		c.mu.Unlock()
		return
	case kind == answerFrame && !c.draining:
		// Nothing queued (a queue is drained while draining is set):
		// the call ends here.
		c.ended = true
		c.mu.Unlock()
		res, _, err := c.m.frame(c.ctx, c.req, f)
		c.end(res, err, true)
		return
	case kind == notificationFrame && (len(c.queue) >= maxQueued || c.queued+size > maxQueuedBytes):
		c.mu.Unlock()
		return // the callbacks are busy and the plugin floods them
	case kind == detachFrame && c.detach:
		c.mu.Unlock()
		return // the first one counts: the others would be ignored
	}
	c.detach = c.detach || kind == detachFrame
	c.queue = append(c.queue, f)
	c.queued += size
	start := !c.draining
	c.draining = true
	c.mu.Unlock()
	if start {
		go c.drain()
	}
}

// broke ends the call with its stream's break err, after the callbacks
// already queued.
func (c *muxCall) broke(err error) {
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return
	}
	if c.draining {
		c.broken = err
		c.mu.Unlock()
		return
	}
	c.ended = true
	c.mu.Unlock()
	c.end(nil, brokenError(c.ctx, c.m.exited, fmt.Sprintf("call %q", c.req.Tool), err), false)
}

// drain runs the queued frames' callbacks in order until the queue is
// empty, and ends the call with its answer, its ctx's end or its stream's
// break when one came.
func (c *muxCall) drain() {
	var batch []*pluginpb.PluginFrame
	for {
		c.mu.Lock()
		batch, c.queue = c.queue, batch[:0]
		c.queued = 0
		if err := c.stopsAt(len(batch) == 0); err != nil {
			c.mu.Unlock()
			c.end(nil, err, false)
			return
		}
		if len(batch) == 0 {
			c.draining = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		for i, f := range batch {
			batch[i] = nil
			if f.GetDetach() != nil {
				detach(c.req, &c.detached)
				continue
			}
			res, final, err := c.m.frame(c.ctx, c.req, f)
			if !final {
				continue
			}
			c.mu.Lock()
			c.ended = true
			c.mu.Unlock()
			c.end(res, err, true)
			return
		}
	}
}

// stopsAt is the error that ends a draining call now: ctx's end, or, once
// the queue is empty, the stream's break. It marks the call ended. Under
// c.mu.
func (c *muxCall) stopsAt(empty bool) error {
	err := c.cancelled
	if err == nil && empty && c.broken != nil {
		err = brokenError(c.ctx, c.m.exited, fmt.Sprintf("call %q", c.req.Tool), c.broken)
	}
	if err != nil {
		c.ended, c.queue = true, c.queue[:0]
	}
	return err
}

// detach runs req's Detach for a Detach frame of its call, unless one
// came before (detached) or req did not offer a task.
func detach(req *pluginhost.CallRequest, detached *bool) {
	if *detached || !req.Tasks || req.Detach == nil {
		return
	}
	*detached = true
	req.Detach()
}

// end runs done, once per call, and recycles an answered call: the
// reader has forgotten its id.
func (c *muxCall) end(res json.RawMessage, err error, answered bool) {
	c.mu.Lock()
	stop := c.stop
	c.mu.Unlock()
	if stop != nil {
		stop()
	}
	c.done(res, err)
	if answered {
		c.reset()
		callPool.Put(c)
	}
}

// reset readies a finished call for its next user.
func (c *muxCall) reset() {
	queue := c.queue[:0]
	*c = muxCall{queue: queue}
}
