package pluginclient

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/internal/pluginpb"
)

// asyncCall is a call started with Client.StartCall on the CallsV2 stream:
// no goroutine waits for it. The stream's reader runs its Progress, Log
// and Detach callbacks and then done, as the frames arrive; whoever
// removes its id from the stream's calls (the reader with its answer, the
// stream's break, or the end of ctx) completes it, so done runs exactly
// once, and never before a Detach callback that began, nor with one
// after it.
type asyncCall struct {
	m    *mux
	ctx  context.Context
	req  *pluginhost.CallRequest
	done func(json.RawMessage, error)
	// Set by register, under mux.mu.
	s  *muxStream
	id uint64
	// stop stops the watch on ctx; set under mux.mu once it exists.
	stop func() bool

	// Under detachMu: whether Detach ran, and whether done did (or is
	// about to).
	detachMu            sync.Mutex
	detached, completed bool
}

// start runs req on the CallsV2 stream without waiting: the frames are
// sent on the calling goroutine, the answer goes to done on the reader's.
func (m *mux) start(ctx context.Context, req *pluginhost.CallRequest, args json.RawMessage, in *pluginpb.Input, done func(json.RawMessage, error)) {
	a := &asyncCall{m: m, ctx: ctx, req: req, done: done}
	s, id, call, err := m.register(a)
	if err != nil {
		done(nil, callError(ctx, m.exited, req.Tool, err))
		return
	}
	stop := context.AfterFunc(ctx, a.cancelled)
	m.mu.Lock()
	a.stop = stop
	m.mu.Unlock()
	call.prepare(req, args, in)
	m.sendCall(ctx, s, id, call, args) // an early end of ctx is cancelled's to answer
}

// cancelled gives up the call when its ctx ends first: the plugin is told,
// and done gets ctx's error.
func (a *asyncCall) cancelled() {
	if a.m.finish(a.s, a.id) {
		// On its own goroutine: the stream may be slow to take it.
		go a.s.send(&pluginpb.HostFrame{CallId: a.id, Msg: &pluginpb.HostFrame_Cancel{Cancel: &pluginpb.CallCancel{}}})
		a.complete(nil, fmt.Errorf("call %q: %w", a.req.Tool, a.ctx.Err()))
	}
}

// deliver handles one frame for the call, on the reader goroutine. A
// notification that arrives after the call completed (ctx ended meanwhile)
// may still be delivered: the callbacks must tolerate it.
func (a *asyncCall) deliver(f *pluginpb.PluginFrame) {
	if f.GetDetach() != nil {
		a.detachMu.Lock()
		defer a.detachMu.Unlock()
		if !a.completed {
			detach(a.req, &a.detached)
		}
		return
	}
	if res, final, err := a.m.frame(a.ctx, a.req, f); final {
		a.complete(res, err)
	}
}

// complete ends the call: its caller removed its id from the stream.
// After a Detach callback that runs now, and instead of any later one:
// the call returns after it went on as a task, or not at all.
func (a *asyncCall) complete(res json.RawMessage, err error) {
	a.detachMu.Lock()
	a.completed = true
	a.detachMu.Unlock()
	a.m.mu.Lock()
	stop := a.stop
	a.m.mu.Unlock()
	if stop != nil {
		stop()
	}
	a.done(res, err)
}
