package pluginproto

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
	"google.golang.org/protobuf/proto"

	"plughost.test/contract1/sdk/internal/pb"
)

// mux is the host's side of the Calls stream: many calls on one long-lived
// stream per plugin, each call named by an id. One goroutine (read) receives
// everything the plugin sends and hands each message to its call's queue;
// the calling goroutines send their Starts under sendMu and run their
// Progress and Log callbacks themselves, in order.
//
// The stream is opened at the first call. When it breaks, every call in
// flight on it fails, and the next call opens a new one. When the plugin
// answers UNIMPLEMENTED (it predates Calls), the calls in flight are retried
// with CallTool, which every later call uses too.
type mux struct {
	rpc    pb.PluginClient
	exited context.Context // the plugin process's lifetime; nil in some tests

	mu          sync.Mutex
	unsupported bool       // the plugin answered UNIMPLEMENTED: use CallTool
	cur         *muxStream // the open stream; nil before the first call and after a break
	nextID      uint64
}

// muxStream is one Calls stream and the calls in flight on it.
type muxStream struct {
	stream grpc.BidiStreamingClient[pb.CallsHostMessage, pb.CallsPluginMessage]
	cancel context.CancelFunc
	sendMu sync.Mutex          // one Send at a time
	calls  map[uint64]*muxCall // guarded by mux.mu; a call leaves it when finished
}

// muxCall is one call in flight: the messages the reader goroutine queued
// for it, and how the stream ended if it did.
type muxCall struct {
	mu     sync.Mutex
	queue  []*pb.CallsPluginMessage
	queued int           // bytes of the notifications in queue
	broken error         // the stream's error, once it broke
	ready  chan struct{} // capacity 1: something was queued or the stream broke
}

// errFallback tells a call that the plugin does not serve Calls and that it
// was not run: retry it with CallTool.
var errFallback = errors.New("pluginproto: the plugin does not serve Calls")

// maxMuxArgs is the size of arguments above which a call takes its own
// CallTool stream: a large message would hold up every other call's Start
// behind it, and one above the plugin's receive limit (4 MiB by default in
// gRPC) would break the shared stream and fail them all.
const maxMuxArgs = 256 << 10

// call runs req on the Calls stream. It returns errFallback when the call
// must be made with CallTool instead.
func (m *mux) call(ctx context.Context, c *Client, req *CallRequest, args json.RawMessage) (json.RawMessage, error) {
	if len(args) > maxMuxArgs {
		return nil, errFallback
	}
	s, id, call, err := m.register()
	if err != nil {
		return nil, c.callError(ctx, req.Tool, err)
	}
	if s == nil {
		return nil, errFallback
	}
	s.sendMu.Lock()
	err = s.stream.Send(&pb.CallsHostMessage{CallId: id, Msg: &pb.CallsHostMessage_Start{Start: &pb.CallStart{
		Tool: req.Tool, Arguments: args, Progress: req.Progress != nil,
	}}})
	s.sendMu.Unlock()
	if err != nil && !errors.Is(err, io.EOF) {
		// Not a broken stream (that is io.EOF, and the reader reports it):
		// this call cannot be sent.
		m.finish(s, id)
		return nil, c.callError(ctx, req.Tool, err)
	}
	var queue []*pb.CallsPluginMessage
	for {
		select {
		case <-call.ready:
		case <-ctx.Done():
			if m.finish(s, id) {
				go s.sendCancel(id)
			}
			return nil, fmt.Errorf("call %q: %w", req.Tool, ctx.Err())
		}
		call.mu.Lock()
		queue, call.queue = call.queue, queue[:0]
		call.queued = 0
		broken := call.broken
		call.mu.Unlock()
		for i, msg := range queue {
			queue[i] = nil
			switch msg := msg.GetMsg().(type) {
			case *pb.CallsPluginMessage_Progress:
				if req.Progress != nil {
					req.Progress(msg.Progress.GetProgress(), msg.Progress.GetTotal(), msg.Progress.GetMessage())
				}
			case *pb.CallsPluginMessage_Log:
				if req.Log != nil {
					req.Log(msg.Log.GetLevel(), msg.Log.GetLogger(), msg.Log.GetData())
				}
			case *pb.CallsPluginMessage_Result:
				if !isObject(msg.Result) {
					return nil, fmt.Errorf("call %q: %w: not a JSON object: %.80q", req.Tool, ErrInvalidResult, msg.Result)
				}
				return msg.Result, nil
			case *pb.CallsPluginMessage_Error:
				return nil, c.callError(ctx, req.Tool, status.Error(codes.Code(msg.Error.GetCode()), msg.Error.GetMessage()))
			default:
				// A message of a later contract revision: ignored, as on
				// a CallTool stream.
			}
		}
		if broken != nil {
			if broken == errFallback {
				return nil, errFallback
			}
			return nil, m.brokenError(ctx, req.Tool, broken)
		}
	}
}

// register adds a call with a new id to the open stream, opening one if
// needed. It returns a nil stream when the plugin does not serve Calls.
func (m *mux) register() (*muxStream, uint64, *muxCall, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.unsupported {
		return nil, 0, nil, nil
	}
	if m.cur == nil {
		parent := m.exited
		if parent == nil {
			parent = context.Background()
		}
		// The stream lives as long as the plugin: it ends when the
		// process exits, when the connection closes, or when it breaks.
		ctx, cancel := context.WithCancel(parent)
		stream, err := m.rpc.Calls(ctx)
		if err != nil {
			cancel()
			return nil, 0, nil, err
		}
		m.cur = &muxStream{stream: stream, cancel: cancel, calls: make(map[uint64]*muxCall)}
		go m.read(m.cur)
	}
	m.nextID++
	call := &muxCall{ready: make(chan struct{}, 1)}
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

// sendCancel tells the plugin to cancel a call the host stopped waiting
// for. It runs on its own goroutine, so that the caller returns at once even
// when the stream is slow to take the message.
func (s *muxStream) sendCancel(id uint64) {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	_ = s.stream.Send(&pb.CallsHostMessage{CallId: id, Msg: &pb.CallsHostMessage_Cancel{Cancel: &pb.CallCancel{}}})
}

// read hands the plugin's messages to their calls until the stream breaks,
// then fails the calls still in flight with the stream's error.
func (m *mux) read(s *muxStream) {
	for {
		msg, err := s.stream.Recv()
		if err != nil {
			m.broke(s, err)
			return
		}
		m.mu.Lock()
		call := s.calls[msg.GetCallId()]
		switch msg.GetMsg().(type) {
		case *pb.CallsPluginMessage_Result, *pb.CallsPluginMessage_Error:
			delete(s.calls, msg.GetCallId()) // finished: later messages for it are dropped
		}
		m.mu.Unlock()
		if call == nil {
			continue // a finished or cancelled call, or an id the host never sent
		}
		call.mu.Lock()
		switch {
		case !isNotification(msg):
			call.queue = append(call.queue, msg)
		case len(call.queue) < maxQueued && call.queued+proto.Size(msg) <= maxQueuedBytes:
			call.queue = append(call.queue, msg)
			call.queued += proto.Size(msg)
		}
		call.mu.Unlock()
		select {
		case call.ready <- struct{}{}:
		default: // already signalled
		}
	}
}

// maxQueued is how many messages may wait for a call whose caller is busy
// (in its Progress or Log callback). Beyond it the plugin's progress and log
// messages for the call are dropped, never its answer: on the shared stream
// nothing holds a flooding plugin back but this.
const maxQueued = 1000

// maxQueuedBytes bounds the same queue in bytes (a log message may be large).
const maxQueuedBytes = 4 << 20

func isNotification(msg *pb.CallsPluginMessage) bool {
	switch msg.GetMsg().(type) {
	case *pb.CallsPluginMessage_Progress, *pb.CallsPluginMessage_Log:
		return true
	}
	return false
}

// broke retires a broken stream: the next call opens a new one, or uses
// CallTool when the plugin said it does not serve Calls.
func (m *mux) broke(s *muxStream, err error) {
	s.cancel()
	if status.Code(err) == codes.Unimplemented {
		err = errFallback // the plugin ran none of the calls
	} else if errors.Is(err, io.EOF) {
		err = errStreamEnded
	}
	m.mu.Lock()
	if m.cur == s {
		m.cur = nil
	}
	if err == errFallback {
		m.unsupported = true
	}
	calls := s.calls
	s.calls = nil
	m.mu.Unlock()
	for _, call := range calls {
		call.mu.Lock()
		call.broken = err
		call.mu.Unlock()
		select {
		case call.ready <- struct{}{}:
		default:
		}
	}
}

// errStreamEnded is a Calls stream the plugin ended with calls in flight.
var errStreamEnded = errors.New("the plugin ended its calls stream")

// brokenError is the error of a call whose stream broke: ErrPluginClosed,
// whatever the stream's status said, since the plugin dropped the call.
func (m *mux) brokenError(ctx context.Context, tool string, err error) error {
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("call %q: %w", tool, ctx.Err())
	case m.exited != nil && m.exited.Err() != nil:
		return fmt.Errorf("call %q: %w: the plugin process has exited", tool, ErrPluginClosed)
	}
	return fmt.Errorf("call %q: %w: %v", tool, ErrPluginClosed, err)
}

// usable reports whether calls go on a Calls stream that is open now.
func (m *mux) usable() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.unsupported && m.cur != nil
}
