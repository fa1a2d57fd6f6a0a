package pluginproto

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/plughost/plughost/internal/plugincontract"
	"github.com/plughost/plughost/internal/pluginpb"
)

// server is the plugin side of contract 2: it serves a *Plugin over gRPC.
// It does not serve CallTool, the call path of contract 1. The rpcs of
// resources, prompts and completion are in server_surface.go.
type server struct {
	pluginpb.UnimplementedPluginServer
	p *Plugin
}

var _ pluginpb.PluginServer = (*server)(nil)

func newServer(p *Plugin) *server {
	p.mu.Lock()
	p.listed = p.gen // the host has seen nothing yet, and it lists before it calls
	p.mu.Unlock()
	return &server{p: p}
}

func (s *server) Describe(_ context.Context, req *pluginpb.DescribeRequest) (*pluginpb.DescribeResponse, error) {
	if req.GetHostContractVersion() != plugincontract.Version {
		s.p.logger.Warn("host speaks another contract version", "host_contract_version", req.GetHostContractVersion(), "plugin_contract_version", plugincontract.Version)
	}
	s.p.logger.Debug("described to host", "host_version", req.GetHostVersion())
	s.p.hostMaxMessage.Store(int64(req.GetMaxMessageSize()))
	s.p.host.set(Host{Version: req.GetHostVersion(), ContractVersion: req.GetHostContractVersion()})
	o, a, r := s.p.Offers(), s.p.About(), s.p.Requested()
	resp := &pluginpb.DescribeResponse{Name: s.p.name, Version: s.p.version, ContractVersion: plugincontract.Version, Offers: &pluginpb.Offers{
		Resources: o.Resources, ResourceSubscriptions: o.ResourceSubscriptions, Prompts: o.Prompts, Completions: o.Completions,
		Hooks: hookStrings(o.Hooks),
	}, Title: a.Title, Description: a.Description}
	if req.GetLaneOffered() {
		resp.Lane = s.p.takeLane()
	}
	if !r.Empty() {
		resp.Requests = &pluginpb.Requests{Read: r.Read, Write: r.Write, Net: r.Net, Env: r.Env}
	}
	return resp, nil
}

func (s *server) ListTools(context.Context, *pluginpb.ListToolsRequest) (*pluginpb.ListToolsResponse, error) {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	s.p.listed[kindTools] = s.p.gen[kindTools]
	tools := make([][]byte, len(s.p.tools.order))
	for i, e := range s.p.tools.all() {
		tools[i] = e.json
	}
	return &pluginpb.ListToolsResponse{Tools: tools}, nil
}

// CallsV2 serves every call of the host on one stream. The receiving loop
// starts each call's handler in a goroutine of its own (through the same
// path as the in-process CallTool), and every frame out goes through one mutex,
// since a gRPC stream takes one sender at a time. When the stream ends,
// every call still running is cancelled, and CallsV2 returns once their
// handlers have.
func (s *server) CallsV2(stream grpc.BidiStreamingServer[pluginpb.HostFrame, pluginpb.PluginFrame]) error {
	c, end := s.p.serveCalls(stream.Context(), &lockedSender[pluginpb.PluginFrame]{stream: stream})
	defer end()
	for {
		f, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil // the host closed its side: cancel what runs, then end
			}
			return err
		}
		c.handle(f)
	}
}

// serveCalls starts serving a CallsV2 stream whose frames out go to out
// and whose frames in the caller passes to handle. end cancels every call
// still running and returns once their handlers have.
func (p *Plugin) serveCalls(ctx context.Context, out sender[pluginpb.PluginFrame]) (c *serverCalls, end func()) {
	ctx, cancelAll := context.WithCancel(ctx)
	c = &serverCalls{p: p, ctx: ctx, out: out, calls: make(map[uint64]*serverCall)}
	return c, func() {
		cancelAll()
		c.running.Wait()
	}
}

// sender sends the messages of one stream, the CallsV2 frames or a hook's
// answers: a gRPC stream's (lockedSender) or the frame lane's (lane.go).
// Safe for concurrent use, so that messages ready together go in one
// write on the lane.
type sender[T any] interface {
	Send(*T) error
}

// lockedSender is a gRPC stream, one Send at a time (a gRPC stream's Send
// is not safe for concurrent use).
type lockedSender[T any] struct {
	mu     sync.Mutex
	stream sender[T]
}

func (g *lockedSender[T]) Send(m *T) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stream.Send(m)
}

// serverCalls is the plugin's side of one CallsV2 stream, on gRPC or on
// the frame lane.
type serverCalls struct {
	p       *Plugin
	ctx     context.Context // the stream's; cancelled when it ends
	out     sender[pluginpb.PluginFrame]
	running sync.WaitGroup // the handlers

	mu    sync.Mutex
	calls map[uint64]*serverCall // calls not answered yet
}

// serverCall is a call whose arguments are still coming (assembling) or
// whose handler runs (cancel not nil).
type serverCall struct {
	start      *pluginpb.CallStart
	assembling bool
	args       []byte // the arguments so far, while assembling
	cancel     context.CancelFunc
}

// handle acts on one frame of the host.
func (c *serverCalls) handle(f *pluginpb.HostFrame) {
	id := f.GetCallId()
	switch msg := f.GetMsg().(type) {
	case *pluginpb.HostFrame_Start:
		c.mu.Lock()
		_, dup := c.calls[id]
		call := &serverCall{start: msg.Start}
		if !dup {
			c.calls[id] = call
		}
		c.mu.Unlock()
		if dup {
			c.p.logger.Warn("host reused the id of a running call; start ignored", "call_id", id)
			return
		}
		if msg.Start.GetMoreArguments() {
			call.assembling, call.args = true, append([]byte(nil), msg.Start.GetArguments()...)
			return
		}
		c.run(id, call, msg.Start.GetArguments())
	case *pluginpb.HostFrame_Arguments:
		c.mu.Lock()
		call := c.calls[id]
		c.mu.Unlock()
		if call == nil || !call.assembling {
			return // a call cancelled while its arguments came, or not assembling
		}
		call.args = append(call.args, msg.Arguments.GetData()...)
		if !msg.Arguments.GetMore() {
			args := call.args
			call.assembling, call.args = false, nil
			c.run(id, call, args)
		}
	case *pluginpb.HostFrame_Cancel:
		c.mu.Lock()
		call := c.calls[id]
		if call != nil && call.cancel == nil {
			delete(c.calls, id) // its arguments were still coming: it never ran
		}
		c.mu.Unlock()
		switch {
		case call == nil:
		case call.cancel != nil:
			call.cancel()
		default:
			c.answer(&pluginpb.PluginFrame{CallId: id, Msg: &pluginpb.PluginFrame_Error{Error: &pluginpb.CallError{Code: uint32(codes.Canceled), Message: "cancelled before its arguments were complete"}}})
		}
	default:
		// A frame of a later contract revision: ignored.
	}
}

// run starts the handler of a call whose arguments are complete.
func (c *serverCalls) run(id uint64, call *serverCall, args []byte) {
	ctx, cancel := context.WithCancel(c.ctx)
	c.mu.Lock()
	call.cancel = cancel
	c.mu.Unlock()
	st := call.start
	inv := invocation{caps: st.GetClientCapabilities(), input: inputOf(st.GetInput()), tasks: st.GetTasks(),
		traceParent: st.GetTraceparent(), traceState: st.GetTracestate(), caller: callerOf(st.GetCaller())}
	c.running.Go(func() {
		defer cancel()
		res, err := c.p.call(ctx, st.GetTool(), args, st.GetProgress(), frameEmitter{c, id}, inv)
		var (
			ir *InputRequiredError
			cr *CapabilityRequiredError
			pe *panicError
		)
		switch {
		case errors.As(err, &pe):
			c.answer(&pluginpb.PluginFrame{CallId: id, Msg: &pluginpb.PluginFrame_Error{Error: &pluginpb.CallError{Code: uint32(codes.Internal), Message: pe.msg}}})
		case errors.As(err, &ir):
			c.answer(&pluginpb.PluginFrame{CallId: id, Msg: &pluginpb.PluginFrame_InputRequired{InputRequired: &pluginpb.InputRequired{Requests: ir.Requests, RequestState: ir.State}}})
		case errors.As(err, &cr):
			c.answer(&pluginpb.PluginFrame{CallId: id, Msg: &pluginpb.PluginFrame_Error{Error: &pluginpb.CallError{
				Code: uint32(codes.FailedPrecondition), Message: cr.Message, RequiredCapabilities: cr.Capabilities,
			}}})
		case err != nil: // ErrUnknownTool
			c.answer(&pluginpb.PluginFrame{CallId: id, Msg: &pluginpb.PluginFrame_Error{Error: &pluginpb.CallError{Code: uint32(codes.NotFound), Message: err.Error()}}})
		default:
			c.answer(&pluginpb.PluginFrame{CallId: id, Msg: &pluginpb.PluginFrame_Result{Result: res}})
		}
	})
}

// answer sends a call's result or error, which finishes its id.
func (c *serverCalls) answer(f *pluginpb.PluginFrame) {
	c.mu.Lock()
	delete(c.calls, f.GetCallId()) // a Cancel from now on finds nothing
	c.mu.Unlock()
	_ = c.send(f) // a failed Send ends the stream, and every call's context
}

func (c *serverCalls) send(f *pluginpb.PluginFrame) error {
	if max := c.p.hostMaxMessage.Load(); max > 0 {
		if f = c.p.withinHostLimit(f, int(max)); f == nil {
			return nil
		}
	}
	return c.out.Send(f)
}

// frameEmitter sends a call's notifications on the CallsV2 stream.
type frameEmitter struct {
	c  *serverCalls
	id uint64
}

func (e frameEmitter) progress(progress, total float64, message string) error {
	return e.c.send(&pluginpb.PluginFrame{CallId: e.id, Msg: &pluginpb.PluginFrame_Progress{
		Progress: &pluginpb.Progress{Progress: progress, Total: total, Message: message},
	}})
}

func (e frameEmitter) log(level string, data json.RawMessage) error {
	return e.c.send(&pluginpb.PluginFrame{CallId: e.id, Msg: &pluginpb.PluginFrame_Log{
		Log: &pluginpb.LogMessage{Level: level, Data: data},
	}})
}

func (e frameEmitter) detach() error {
	return e.c.send(&pluginpb.PluginFrame{CallId: e.id, Msg: &pluginpb.PluginFrame_Detach{Detach: &pluginpb.Detach{}}})
}

// WatchTools sends one message per burst of changes: which lists changed,
// and which subscribed resources were updated. A change the host has not
// listed yet when it starts watching is announced at once, so nothing is
// lost between the host's first lists and its watch; an update is sent by
// one watch only.
func (s *server) WatchTools(_ *pluginpb.WatchToolsRequest, stream grpc.ServerStreamingServer[pluginpb.ToolsChanged]) error {
	ctx := stream.Context()
	s.p.mu.RLock()
	seen := s.p.listed
	s.p.mu.RUnlock()
	for {
		msg, changed := s.p.changes(&seen)
		if msg != nil {
			if err := stream.Send(msg); err != nil {
				return fmt.Errorf("watch: %w", err)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
	}
}

// changes returns what changed since seen (nil for nothing), updating
// seen, and the channel closed at the next change.
func (p *Plugin) changes(seen *[numKinds]uint64) (*pluginpb.ToolsChanged, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	msg := &pluginpb.ToolsChanged{
		Tools:     p.gen[kindTools] != seen[kindTools],
		Resources: p.gen[kindResources] != seen[kindResources],
		Prompts:   p.gen[kindPrompts] != seen[kindPrompts],
	}
	*seen = p.gen
	if p.updates > p.sent {
		type update struct {
			uri string
			n   uint64
		}
		var updates []update
		for uri, n := range p.subs {
			if n > p.sent {
				updates = append(updates, update{uri, n})
			}
		}
		slices.SortFunc(updates, func(a, b update) int { return cmp.Compare(a.n, b.n) })
		for _, u := range updates {
			msg.Updated = append(msg.Updated, u.uri)
		}
		p.sent = p.updates
	}
	if !msg.Tools && !msg.Resources && !msg.Prompts && len(msg.Updated) == 0 {
		return nil, p.changed
	}
	return msg, p.changed
}
