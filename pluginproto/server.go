package pluginproto

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plughost/plughost/pluginproto/internal/pb"
)

// server is the plugin side of the contract: it serves a *Plugin over gRPC.
type server struct {
	pb.UnimplementedPluginServer
	p *Plugin
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
