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

	"github.com/plughost/plughost/internal/lane"
	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/internal/pluginpb"
	"github.com/plughost/plughost/internal/pluginwire"
)

// mux is the host's side of contract 2: every call of a plugin on its one
// CallsV2 stream, each named by an id. The stream is the frame lane when
// the plugin took one at Describe (lane.go), else the CallsV2 rpc; the
// call logic is the same over both (callStream). Each calling goroutine
// sends its own frames, and one goroutine (read) receives everything the
// plugin sends and hands each frame to its call (see muxCall: an answer
// that finds nothing queued ends the call on the spot; notifications are
// queued for a goroutine of the call's own, which runs its Progress and
// Log callbacks in order).
//
// Goroutine hand-offs on the host per call, over gRPC: three. The Start
// goes from the caller to gRPC's writer goroutine, the answer from gRPC's
// reader goroutine to read, and from read (through done) to a caller that
// waits (Client.CallTool). read cannot be one of the callers (taking turns
// at Recv): a caller blocked in Recv could not return the moment its
// context ends. Over the lane: one, from read to the waiting caller; the
// caller writes its Start itself, with the frames of the calls that came
// while it wrote (internal/lane's batching), and read decodes each frame
// on the socket's own goroutine.
//
// Over gRPC, frames are not batched. A version of this stream whose
// messages carried every frame ready at the time (sent by whichever caller
// found the stream idle, with no extra goroutine) was measured at 16 calls
// in flight: across a process (BenchmarkHostCPU) its messages carried 1.03
// frames on average from the plugin and 1.1 to it, since gRPC's Send only
// hands a message to its writer goroutine and is seldom found busy;
// in-process (BenchmarkCallsV2) CPU per call was 15.1–15.6 µs batched and
// 15.3–15.5 µs one frame per message. gRPC's writer already puts the
// messages that are ready together into one write.
//
// The stream is opened at Describe when the plugin took the lane, else at
// the first call. When it breaks, every call in flight on it fails, and
// the next call opens a new one: on gRPC, since a broken lane is not
// reopened.
type mux struct {
	rpc    pluginpb.PluginClient
	exited context.Context // the plugin process's lifetime; nil in some tests
	recv   grpc.CallOption // bounds each message the plugin sends (Limits.MaxResultSize)

	mu     sync.Mutex
	cur    *muxStream // the open stream; the lane's from Describe, else nil before the first call and after a break
	nextID uint64
}

// callStream is one CallsV2 stream: the rpc's (grpcStream) or the frame
// lane's (laneConn). Send is safe for concurrent use; one goroutine
// Recvs.
type callStream interface {
	Send(*pluginpb.HostFrame) error
	Recv() (*pluginpb.PluginFrame, error)
}

// grpcStream is the CallsV2 rpc's stream, one Send at a time.
type grpcStream struct {
	mu     sync.Mutex
	stream grpc.BidiStreamingClient[pluginpb.HostFrame, pluginpb.PluginFrame]
}

func (g *grpcStream) Send(f *pluginpb.HostFrame) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stream.Send(f)
}

func (g *grpcStream) Recv() (*pluginpb.PluginFrame, error) { return g.stream.Recv() }

// muxStream is one CallsV2 stream and the calls in flight on it.
type muxStream struct {
	stream callStream
	lane   *laneConn // the lane the stream is, or nil
	cancel context.CancelFunc
	calls  map[uint64]*muxCall // guarded by mux.mu; a call leaves it when finished
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
// the arguments, if any, in chunks. It stops, having sent only part of the
// arguments, when ctx ended on the way (abandon answers the call). call is
// not touched once its Start is sent: its answer may recycle it.
func (m *mux) sendCall(ctx context.Context, s *muxStream, id uint64, call *muxCall, args json.RawMessage) {
	rest := args[len(call.start.Arguments):]
	call.startMsg.Start = &call.start
	call.startFrame = pluginpb.HostFrame{CallId: id, Msg: &call.startMsg}
	s.send(&call.startFrame)
	for len(rest) > 0 {
		// One Send per chunk, so that other calls' frames go in between.
		if ctx.Err() != nil {
			return
		}
		n := min(len(rest), argsChunk)
		s.send(&pluginpb.HostFrame{CallId: id, Msg: &pluginpb.HostFrame_Arguments{
			Arguments: &pluginpb.ArgumentsChunk{Data: rest[:n], More: n < len(rest)},
		}})
		rest = rest[n:]
	}
}

// send sends f. A failed Send ends the stream, and read reports it to every
// call in flight.
func (s *muxStream) send(f *pluginpb.HostFrame) {
	_ = s.stream.Send(f)
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
			return nil, true, fmt.Errorf("call %q: %w: not a JSON object: %.80q", req.Tool, ErrInvalidResult, msg.Result)
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

// register adds a new call of req, with a new id, to the open stream,
// opening one if needed.
func (m *mux) register(ctx context.Context, req *pluginhost.CallRequest, done func(json.RawMessage, error)) (*muxStream, uint64, *muxCall, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cur == nil {
		s, err := m.open()
		if err != nil {
			return nil, 0, nil, err
		}
		m.cur = s
		go m.read(m.cur)
	}
	m.nextID++
	call := callPool.Get().(*muxCall)
	call.m, call.ctx, call.req, call.done = m, ctx, req, done
	m.cur.calls[m.nextID] = call
	return m.cur, m.nextID, call, nil
}

// newMuxStream is a stream whose calls are not started yet: the lane's
// (lane set) or the rpc's.
func newMuxStream(stream callStream, lane *laneConn, cancel context.CancelFunc) *muxStream {
	return &muxStream{stream: stream, lane: lane, cancel: cancel, calls: make(map[uint64]*muxCall)}
}

// open opens the CallsV2 rpc's stream (the lane's opens at Describe:
// Client.takeLane). Under m.mu.
func (m *mux) open() (*muxStream, error) {
	parent := m.exited
	if parent == nil {
		parent = context.Background()
	}
	// The stream lives as long as the plugin: it ends when the
	// process exits, when the connection closes, or when it breaks.
	sctx, cancel := context.WithCancel(parent)
	stream, err := m.rpc.CallsV2(sctx, m.recv)
	if err != nil {
		cancel()
		return nil, err
	}
	return newMuxStream(&grpcStream{stream: stream}, nil, cancel), nil
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

// deliver hands a frame to its call, if the call is still in flight.
func (m *mux) deliver(s *muxStream, f *pluginpb.PluginFrame) {
	m.mu.Lock()
	call := s.calls[f.GetCallId()]
	var kind frameKind
	switch f.GetMsg().(type) {
	case *pluginpb.PluginFrame_Result, *pluginpb.PluginFrame_Error, *pluginpb.PluginFrame_InputRequired:
		delete(s.calls, f.GetCallId()) // finished: later frames for it are dropped
		kind = answerFrame
	case *pluginpb.PluginFrame_Progress, *pluginpb.PluginFrame_Log:
		kind = notificationFrame
	case *pluginpb.PluginFrame_Detach:
		kind = detachFrame
	default:
		kind = laterFrame
	}
	m.mu.Unlock()
	if call == nil || kind == laterFrame {
		return // a finished or cancelled call, an id the host never sent, or a frame of a later revision
	}
	call.deliver(f, kind)
}

// broke retires a broken stream: the next call opens a new one.
func (m *mux) broke(s *muxStream, err error) {
	s.cancel()
	if s.lane != nil {
		err = s.lane.broke(err, m.exited)
	}
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
		call.broke(err)
	}
}

// errStreamEnded is a CallsV2 stream the plugin ended with calls in flight.
var errStreamEnded = errors.New("the plugin ended its calls stream")

// brokenError is the error of a call or a hook's question (what) whose
// stream broke: ErrTooLarge when the host refused a message over
// Limits.MaxResultSize (which breaks the stream, and so everything in
// flight on it), else ErrPluginClosed, whatever the stream's status said,
// since the plugin dropped it.
func brokenError(ctx, exited context.Context, what string, err error) error {
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("%s: %w", what, ctx.Err())
	case exited != nil && exited.Err() != nil:
		return fmt.Errorf("%s: %w: the plugin process has exited", what, ErrPluginClosed)
	}
	if e := tooLarge(what, "MaxResultSize", err); e != nil {
		return e
	}
	if errors.Is(err, lane.ErrTooLarge) {
		return fmt.Errorf("%s: %w: %v (MaxResultSize)", what, ErrTooLarge, err)
	}
	return fmt.Errorf("%s: %w: %v", what, ErrPluginClosed, err)
}
