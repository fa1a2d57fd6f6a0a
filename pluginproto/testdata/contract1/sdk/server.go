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

	"plughost.test/contract1/sdk/internal/pb"
)

// server is the plugin side of the contract: it serves a *Plugin over gRPC.
type server struct {
	pb.UnimplementedPluginServer
	p *Plugin
	// noCalls answers Calls with UNIMPLEMENTED, as a plugin written against
	// an older contract revision does (tests use it to force the fallback).
	noCalls bool
}

func newServer(p *Plugin) *server {
	p.mu.Lock()
	p.listed = p.gen // the host has seen nothing yet, and it lists before it calls
	p.mu.Unlock()
	return &server{p: p}
}

func (s *server) Describe(_ context.Context, req *pb.DescribeRequest) (*pb.DescribeResponse, error) {
	if req.GetHostContractVersion() != ContractVersion {
		s.p.logger.Warn("host speaks another contract version", "host_contract_version", req.GetHostContractVersion(), "plugin_contract_version", ContractVersion)
	}
	s.p.logger.Debug("described to host", "host_version", req.GetHostVersion())
	return &pb.DescribeResponse{Name: s.p.name, Version: s.p.version, ContractVersion: ContractVersion}, nil
}

func (s *server) ListTools(context.Context, *pb.ListToolsRequest) (*pb.ListToolsResponse, error) {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	s.p.listed = s.p.gen
	tools := make([][]byte, len(s.p.order))
	for i, n := range s.p.order {
		tools[i] = s.p.tools[n].json
	}
	return &pb.ListToolsResponse{Tools: tools}, nil
}

func (s *server) CallTool(stream grpc.BidiStreamingServer[pb.CallToolHostMessage, pb.CallToolPluginMessage]) error {
	msg, err := stream.Recv()
	if err != nil {
		return err
	}
	start := msg.GetStart()
	if start == nil {
		return status.Error(codes.InvalidArgument, "the first message of a call must be CallStart")
	}
	res, err := s.p.call(stream.Context(), start.GetTool(), start.GetArguments(), start.GetProgress(), streamEmitter{stream})
	if errors.Is(err, ErrUnknownTool) {
		return status.Error(codes.NotFound, err.Error())
	}
	return stream.Send(&pb.CallToolPluginMessage{Msg: &pb.CallToolPluginMessage_Result{Result: res}})
}

// Calls serves many calls on one stream: each Start runs its handler in its
// own goroutine (through the same path as CallTool), and every message out
// goes through one mutex, since a gRPC stream takes one sender at a time.
// When the stream ends, every call still running is cancelled, and Calls
// returns once their handlers have.
func (s *server) Calls(stream grpc.BidiStreamingServer[pb.CallsHostMessage, pb.CallsPluginMessage]) error {
	if s.noCalls {
		return status.Error(codes.Unimplemented, "method Calls not implemented")
	}
	ctx, cancelAll := context.WithCancel(stream.Context())
	m := &muxServer{stream: stream, running: make(map[uint64]context.CancelFunc)}
	var wg sync.WaitGroup
	defer func() {
		cancelAll()
		wg.Wait()
	}()
	for {
		msg, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil // the host closed its side: cancel what runs, then end
			}
			return err
		}
		id := msg.GetCallId()
		switch msg.GetMsg().(type) {
		case *pb.CallsHostMessage_Start:
			start := msg.GetStart()
			if start == nil {
				_ = m.send(&pb.CallsPluginMessage{CallId: id, Msg: &pb.CallsPluginMessage_Error{Error: &pb.CallError{
					Code: uint32(codes.InvalidArgument), Message: "Start carries no CallStart",
				}}})
				continue
			}
			callCtx, cancel := context.WithCancel(ctx)
			m.mu.Lock()
			_, dup := m.running[id]
			if !dup {
				m.running[id] = cancel
			}
			m.mu.Unlock()
			if dup {
				cancel()
				s.p.logger.Warn("host reused the id of a running call; start ignored", "call_id", id)
				continue
			}
			wg.Go(func() {
				defer cancel()
				m.run(callCtx, s.p, id, start)
			})
		case *pb.CallsHostMessage_Cancel:
			m.mu.Lock()
			cancel := m.running[id]
			m.mu.Unlock()
			if cancel != nil {
				cancel()
			}
		default:
			// A message of a later contract revision: ignored.
		}
	}
}

// muxServer is the plugin's side of one Calls stream.
type muxServer struct {
	stream grpc.BidiStreamingServer[pb.CallsHostMessage, pb.CallsPluginMessage]
	sendMu sync.Mutex // one Send at a time

	mu      sync.Mutex
	running map[uint64]context.CancelFunc // calls whose answer is not sent yet
}

func (m *muxServer) send(msg *pb.CallsPluginMessage) error {
	m.sendMu.Lock()
	defer m.sendMu.Unlock()
	return m.stream.Send(msg)
}

// run runs one call and sends its answer, which finishes the call id.
func (m *muxServer) run(ctx context.Context, p *Plugin, id uint64, start *pb.CallStart) {
	res, err := p.call(ctx, start.GetTool(), start.GetArguments(), start.GetProgress(), muxEmitter{m, id})
	answer := &pb.CallsPluginMessage{CallId: id}
	if errors.Is(err, ErrUnknownTool) {
		answer.Msg = &pb.CallsPluginMessage_Error{Error: &pb.CallError{Code: uint32(codes.NotFound), Message: err.Error()}}
	} else {
		answer.Msg = &pb.CallsPluginMessage_Result{Result: res}
	}
	m.mu.Lock()
	delete(m.running, id) // a Cancel from now on finds nothing
	m.mu.Unlock()
	_ = m.send(answer) // a failed send means the stream broke; its context ends every call
}

// muxEmitter sends a call's notifications on the Calls stream.
type muxEmitter struct {
	m  *muxServer
	id uint64
}

func (e muxEmitter) progress(progress, total float64, message string) error {
	return e.m.send(&pb.CallsPluginMessage{CallId: e.id, Msg: &pb.CallsPluginMessage_Progress{
		Progress: &pb.Progress{Progress: progress, Total: total, Message: message},
	}})
}

func (e muxEmitter) log(level string, data json.RawMessage) error {
	return e.m.send(&pb.CallsPluginMessage{CallId: e.id, Msg: &pb.CallsPluginMessage_Log{
		Log: &pb.LogMessage{Level: level, Data: data},
	}})
}

// streamEmitter sends a call's notifications on its stream.
type streamEmitter struct {
	stream grpc.BidiStreamingServer[pb.CallToolHostMessage, pb.CallToolPluginMessage]
}

func (e streamEmitter) progress(progress, total float64, message string) error {
	return e.stream.Send(&pb.CallToolPluginMessage{Msg: &pb.CallToolPluginMessage_Progress{
		Progress: &pb.Progress{Progress: progress, Total: total, Message: message},
	}})
}

func (e streamEmitter) log(level string, data json.RawMessage) error {
	return e.stream.Send(&pb.CallToolPluginMessage{Msg: &pb.CallToolPluginMessage_Log{
		Log: &pb.LogMessage{Level: level, Data: data},
	}})
}

// WatchTools sends one message per burst of changes to the tool list. A
// change the host has not listed yet when it starts watching is announced at
// once, so nothing is lost between the host's first ListTools and its watch.
func (s *server) WatchTools(_ *pb.WatchToolsRequest, stream grpc.ServerStreamingServer[pb.ToolsChanged]) error {
	ctx := stream.Context()
	s.p.mu.RLock()
	changed, pending := s.p.changed, s.p.gen != s.p.listed
	s.p.mu.RUnlock()
	for {
		if pending {
			if err := stream.Send(&pb.ToolsChanged{}); err != nil {
				return fmt.Errorf("watch: %w", err)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
		s.p.mu.RLock()
		changed = s.p.changed
		s.p.mu.RUnlock()
		pending = true
	}
}
