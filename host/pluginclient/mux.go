package pluginclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/internal/pluginpb"
	"github.com/plughost/plughost/internal/pluginwire"
	"github.com/plughost/plughost/pluginproto"
)

// mux is the host's side of contract 2: every call of a plugin on its one
// CallsV2 stream, each named by an id. Each calling goroutine sends its own
// frames (one Send at a time, under sendMu), one goroutine (read) receives
// everything the plugin sends and hands each frame to its call's queue, and
// each caller runs its own Progress and Log callbacks, in order.
//
// Goroutine hand-offs on the host per call: three. The Start goes from the
// caller to gRPC's writer goroutine, the answer from gRPC's reader goroutine
// to read, and from read to the caller. read cannot be one of the callers
// (taking turns at Recv): a caller blocked in Recv could not return the
// moment its context ends.
//
// Frames are not batched. A version of this stream whose messages carried
// every frame ready at the time (sent by whichever caller found the stream
// idle, with no extra goroutine) was measured at 16 calls in flight: across
// a process (BenchmarkHostCPU) its messages carried 1.03 frames on average
// from the plugin and 1.1 to it, since gRPC's Send only hands a message to
// its writer goroutine and is seldom found busy; in-process
// (BenchmarkCallsV2) CPU per call was 15.1–15.6 µs batched and 15.3–15.5 µs
// one frame per message. gRPC's writer already puts the messages that are
// ready together into one write.
//
// The stream is opened at the first call. When it breaks, every call in
// flight on it fails, and the next call opens a new one.
type mux struct {
	rpc    pluginpb.PluginClient
	exited context.Context // the plugin process's lifetime; nil in some tests
	recv   grpc.CallOption // bounds each message the plugin sends (Limits.MaxResultSize)

	mu     sync.Mutex
	cur    *muxStream // the open stream; nil before the first call and after a break
	nextID uint64
}

// muxStream is one CallsV2 stream and the calls in flight on it.
type muxStream struct {
	stream grpc.BidiStreamingClient[pluginpb.HostFrame, pluginpb.PluginFrame]
	cancel context.CancelFunc
	sendMu sync.Mutex          // one Send at a time
	calls  map[uint64]*muxCall // guarded by mux.mu; a call leaves it when finished
}

// muxCall is one call in flight: the frames the reader goroutine queued for
// it, and how the stream ended if it did. Calls are recycled through
// callPool once their caller has taken their last frame.
type muxCall struct {
	mu     sync.Mutex
	queue  []*pluginpb.PluginFrame
	queued int           // bytes of the notifications in queue
	broken error         // the stream's error, once it broke
	ready  chan struct{} // capacity 1: something was queued or the stream broke
	// detach: a Detach frame was queued; later ones are dropped (a call
	// goes on as a task once).
	detach bool

	// async, when set (by register, under mux.mu), receives the call's
	// frames on the reader goroutine instead of the queue.
	async *asyncCall

	// The Start frame, reused from call to call.
	start      pluginpb.CallStart
	startMsg   pluginpb.HostFrame_Start
	startFrame pluginpb.HostFrame
}

var callPool = sync.Pool{New: func() any { return &muxCall{ready: make(chan struct{}, 1)} }}

const (
	// argsChunk is the most argument bytes one HostFrame carries: larger
	// arguments are sent in pieces, interleaved with other calls' frames.
	argsChunk = 64 << 10
	// maxQueued is how many frames may wait for a call whose caller is busy
	// (in its Progress or Log callback). Beyond it the plugin's progress and
	// log frames for the call are dropped, never its answer: on the shared
	// stream nothing holds a flooding plugin back but this.
	maxQueued = 1000
	// maxQueuedBytes bounds the same queue in bytes (a log message may be
	// large).
	maxQueuedBytes = 4 << 20
)

// call runs req on the CallsV2 stream.
func (m *mux) call(ctx context.Context, req *pluginhost.CallRequest, args json.RawMessage, in *pluginpb.Input) (json.RawMessage, error) {
	s, id, call, err := m.register(nil)
	if err != nil {
		return nil, callError(ctx, m.exited, req.Tool, err)
	}
	res, answered, err := m.run(ctx, s, id, call, req, args, in)
	if answered {
		// The reader is done with the call: it finished the id.
		call.reset()
		callPool.Put(call)
	}
	return res, err
}

// run sends the call's frames and waits for its answer (answered), the end
// of ctx or a broken stream.
func (m *mux) run(ctx context.Context, s *muxStream, id uint64, call *muxCall, req *pluginhost.CallRequest, args json.RawMessage, in *pluginpb.Input) (res json.RawMessage, answered bool, err error) {
	call.prepare(req, args, in)
	if !m.sendCall(ctx, s, id, call, args) {
		return nil, false, m.cancel(ctx, s, id, req.Tool)
	}
	return m.wait(ctx, s, id, call, req)
}

// prepare sets up the call's Start frame: the first 64 KiB of the
// arguments, the client's capabilities ({} when none) and input.
func (c *muxCall) prepare(req *pluginhost.CallRequest, args json.RawMessage, in *pluginpb.Input) {
	c.start = pluginpb.CallStart{
		Tool: req.Tool, Arguments: args, Progress: req.Progress != nil,
		ClientCapabilities: pluginwire.Capabilities(req.ClientCapabilities), Input: in, Tasks: req.Tasks,
		Traceparent: req.TraceParent, Tracestate: req.TraceState, Caller: callerPB(req.Caller),
	}
	if len(args) > argsChunk {
		c.start.Arguments, c.start.MoreArguments = args[:argsChunk], true
	}
}

// sendCall sends the Start frame prepared in call.start and the rest of
// the arguments, if any, in chunks. It reports false, having sent only part
// of the arguments, when ctx ended on the way.
func (m *mux) sendCall(ctx context.Context, s *muxStream, id uint64, call *muxCall, args json.RawMessage) bool {
	call.startMsg.Start = &call.start
	call.startFrame = pluginpb.HostFrame{CallId: id, Msg: &call.startMsg}
	s.send(&call.startFrame)
	for rest := args[len(call.start.Arguments):]; len(rest) > 0; {
		// One Send per chunk, so that other calls' frames go in between.
		if ctx.Err() != nil {
			return false
		}
		n := min(len(rest), argsChunk)
		s.send(&pluginpb.HostFrame{CallId: id, Msg: &pluginpb.HostFrame_Arguments{
			Arguments: &pluginpb.ArgumentsChunk{Data: rest[:n], More: n < len(rest)},
		}})
		rest = rest[n:]
	}
	return true
}

// send sends f. A failed Send ends the stream, and read reports it to every
// call in flight.
func (s *muxStream) send(f *pluginpb.HostFrame) {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	_ = s.stream.Send(f)
}

// cancel gives up a call whose ctx ended: the plugin is told, and the
// caller returns at once.
func (m *mux) cancel(ctx context.Context, s *muxStream, id uint64, tool string) error {
	if m.finish(s, id) {
		// On its own goroutine: the stream may be slow to take it.
		go s.send(&pluginpb.HostFrame{CallId: id, Msg: &pluginpb.HostFrame_Cancel{Cancel: &pluginpb.CallCancel{}}})
	}
	return fmt.Errorf("call %q: %w", tool, ctx.Err())
}

// wait runs the call's callbacks until its answer arrives (answered), ctx
// ends or the stream breaks.
func (m *mux) wait(ctx context.Context, s *muxStream, id uint64, call *muxCall, req *pluginhost.CallRequest) (res json.RawMessage, answered bool, err error) {
	var queue []*pluginpb.PluginFrame
	detached := false
	for {
		select {
		case <-call.ready:
		case <-ctx.Done():
			return nil, false, m.cancel(ctx, s, id, req.Tool)
		}
		call.mu.Lock()
		queue, call.queue = call.queue, queue[:0]
		call.queued = 0
		broken := call.broken
		call.mu.Unlock()
		for i, f := range queue {
			queue[i] = nil
			if f.GetDetach() != nil {
				detach(req, &detached)
				continue
			}
			if res, final, err := m.frame(ctx, req, f); final {
				call.queue = queue[:0] // for the next user of call
				return res, true, err
			}
		}
		if broken != nil {
			return nil, false, m.brokenError(ctx, req.Tool, broken)
		}
	}
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

// frame acts on one frame of req's call but Detach (see detach): a
// notification goes to its callback; an answer is returned, with final
// set (an input_required as an *InputRequiredError, an error with
// required_capabilities as a *CapabilityRequiredError, an error INTERNAL
// wrapping ErrPluginFailed). Frames of a later contract revision are
// ignored.
func (m *mux) frame(ctx context.Context, req *pluginhost.CallRequest, f *pluginpb.PluginFrame) (res json.RawMessage, final bool, err error) {
	switch msg := f.GetMsg().(type) {
	case *pluginpb.PluginFrame_Progress:
		if req.Progress != nil {
			req.Progress(msg.Progress.GetProgress(), msg.Progress.GetTotal(), msg.Progress.GetMessage())
		}
	case *pluginpb.PluginFrame_Log:
		if req.Log != nil {
			req.Log(msg.Log.GetLevel(), msg.Log.GetLogger(), msg.Log.GetData())
		}
	case *pluginpb.PluginFrame_Result:
		if !pluginwire.IsObject(msg.Result) {
			return nil, true, fmt.Errorf("call %q: %w: not a JSON object: %.80q", req.Tool, pluginproto.ErrInvalidResult, msg.Result)
		}
		return msg.Result, true, nil
	case *pluginpb.PluginFrame_Error:
		if len(msg.Error.GetRequiredCapabilities()) > 0 {
			return nil, true, callCapabilityError(req.Tool, msg.Error)
		}
		switch codes.Code(msg.Error.GetCode()) {
		case codes.Internal:
			return nil, true, pluginwire.PluginFailed(req.Tool, msg.Error.GetMessage())
		case codes.ResourceExhausted: // an answer over max_message_size, not sent
			return nil, true, fmt.Errorf("call %q: %w: %s", req.Tool, ErrTooLarge, msg.Error.GetMessage())
		}
		return nil, true, callError(ctx, m.exited, req.Tool, status.Error(codes.Code(msg.Error.GetCode()), msg.Error.GetMessage()))
	case *pluginpb.PluginFrame_InputRequired:
		return nil, true, inputRequired(fmt.Sprintf("call %q", req.Tool), msg.InputRequired)
	}
	return nil, false, nil
}

// reset readies a finished call for its next user.
func (c *muxCall) reset() {
	c.start, c.startMsg, c.startFrame = pluginpb.CallStart{}, pluginpb.HostFrame_Start{}, pluginpb.HostFrame{}
	c.queued, c.broken, c.detach = 0, nil, false
	select {
	case <-c.ready: // a signal for frames the caller took already
	default:
	}
}

// register adds a call with a new id to the open stream, opening one if
// needed. With async, the call is a fresh one that delivers to async.
func (m *mux) register(async *asyncCall) (*muxStream, uint64, *muxCall, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cur == nil {
		parent := m.exited
		if parent == nil {
			parent = context.Background()
		}
		// The stream lives as long as the plugin: it ends when the
		// process exits, when the connection closes, or when it breaks.
		ctx, cancel := context.WithCancel(parent)
		stream, err := m.rpc.CallsV2(ctx, m.recv)
		if err != nil {
			cancel()
			return nil, 0, nil, err
		}
		m.cur = &muxStream{stream: stream, cancel: cancel, calls: make(map[uint64]*muxCall)}
		go m.read(m.cur)
	}
	m.nextID++
	var call *muxCall
	if async == nil {
		call = callPool.Get().(*muxCall)
	} else {
		// Not pooled: after its answer, the reader may still hold it for
		// a late notification.
		call = &muxCall{async: async}
		async.s, async.id = m.cur, m.nextID
	}
	m.cur.calls[m.nextID] = call
	return m.cur, m.nextID, call, nil
}

// finish removes a call from its stream and reports whether it was still
// in flight there (no answer and no break yet).
func (m *mux) finish(s *muxStream, id uint64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := s.calls[id]
	delete(s.calls, id)
	return ok
}

// read hands the plugin's frames to their calls until the stream breaks,
// then fails the calls still in flight with the stream's error.
func (m *mux) read(s *muxStream) {
	for {
		f, err := s.stream.Recv()
		if err != nil {
			m.broke(s, err)
			return
		}
		m.deliver(s, f)
	}
}

// deliver queues a frame for its call, if the call is still in flight.
func (m *mux) deliver(s *muxStream, f *pluginpb.PluginFrame) {
	m.mu.Lock()
	call := s.calls[f.GetCallId()]
	notification, isDetach := false, false
	switch f.GetMsg().(type) {
	case *pluginpb.PluginFrame_Result, *pluginpb.PluginFrame_Error, *pluginpb.PluginFrame_InputRequired:
		delete(s.calls, f.GetCallId()) // finished: later frames for it are dropped
	case *pluginpb.PluginFrame_Progress, *pluginpb.PluginFrame_Log:
		notification = true
	case *pluginpb.PluginFrame_Detach:
		isDetach = true
	}
	m.mu.Unlock()
	if call == nil {
		return // a finished or cancelled call, or an id the host never sent
	}
	if call.async != nil {
		call.async.deliver(f)
		return
	}
	size := 0
	if notification {
		size = len(f.GetLog().GetData()) + len(f.GetProgress().GetMessage()) + 32
	}
	call.mu.Lock()
	defer call.mu.Unlock()
	if notification && (len(call.queue) >= maxQueued || call.queued+size > maxQueuedBytes) {
		return // the caller is busy and the plugin floods it
	}
	if isDetach {
		if call.detach {
			return // the first one counts: the others would be ignored
		}
		call.detach = true
	}
	call.queue = append(call.queue, f)
	call.queued += size
	select {
	case call.ready <- struct{}{}:
	default: // already signalled
	}
}

// broke retires a broken stream: the next call opens a new one.
func (m *mux) broke(s *muxStream, err error) {
	s.cancel()
	if errors.Is(err, io.EOF) {
		err = errStreamEnded
	}
	m.mu.Lock()
	if m.cur == s {
		m.cur = nil
	}
	calls := s.calls
	s.calls = nil
	m.mu.Unlock()
	for _, call := range calls {
		if a := call.async; a != nil {
			a.complete(nil, m.brokenError(a.ctx, a.req.Tool, err))
			continue
		}
		call.mu.Lock()
		call.broken = err
		select {
		case call.ready <- struct{}{}:
		default:
		}
		call.mu.Unlock()
	}
}

// errStreamEnded is a CallsV2 stream the plugin ended with calls in flight.
var errStreamEnded = errors.New("the plugin ended its calls stream")

// brokenError is the error of a call whose stream broke: ErrTooLarge when
// the host refused a message over Limits.MaxResultSize (which breaks the
// stream, and so every call in flight on it), else ErrPluginClosed,
// whatever the stream's status said, since the plugin dropped the call.
func (m *mux) brokenError(ctx context.Context, tool string, err error) error {
	what := fmt.Sprintf("call %q", tool)
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("%s: %w", what, ctx.Err())
	case m.exited != nil && m.exited.Err() != nil:
		return fmt.Errorf("%s: %w: the plugin process has exited", what, ErrPluginClosed)
	}
	if e := tooLarge(what, "MaxResultSize", err); e != nil {
		return e
	}
	return fmt.Errorf("call %q: %w: %v", tool, ErrPluginClosed, err)
}
