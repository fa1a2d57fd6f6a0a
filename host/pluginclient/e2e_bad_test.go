package pluginclient_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plughost/plughost/host/pluginclient"
	"github.com/plughost/plughost/internal/pluginpb"
)

// serveBad serves, as a real plugin process of contract 2, badServer: a
// plugin whose answers break the contract's rules in every way
// TestEndToEndMisbehavingPlugin checks.
func serveBad() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  pluginclient.Handshake,
		VersionedPlugins: map[int]plugin.PluginSet{2: {pluginclient.PluginName: badPlugin{}}},
		GRPCServer:       plugin.DefaultGRPCServer,
		Logger:           hclog.New(&hclog.LoggerOptions{Level: hclog.Off}),
	})
}

type badPlugin struct{ plugin.NetRPCUnsupportedPlugin }

func (badPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pluginpb.RegisterPluginServer(s, badServer{})
	return nil
}

func (badPlugin) GRPCClient(context.Context, *plugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, errors.New("the bad plugin has no client side")
}

type badServer struct {
	pluginpb.UnimplementedPluginServer
}

func (badServer) Describe(context.Context, *pluginpb.DescribeRequest) (*pluginpb.DescribeResponse, error) {
	return &pluginpb.DescribeResponse{Name: "bad", ContractVersion: 2, Offers: &pluginpb.Offers{Resources: true, ResourceSubscriptions: true, Prompts: true, Completions: true}}, nil
}

func (badServer) ListResources(context.Context, *pluginpb.ListRequest) (*pluginpb.ListResponse, error) {
	return &pluginpb.ListResponse{Items: [][]byte{[]byte(`{}`), []byte(`"x"`)}}, nil
}

// ListResourceTemplates never ends: its second page names its own cursor
// again.
func (badServer) ListResourceTemplates(context.Context, *pluginpb.ListRequest) (*pluginpb.ListResponse, error) {
	return &pluginpb.ListResponse{NextCursor: "again"}, nil
}

func (badServer) ListPrompts(_ context.Context, r *pluginpb.ListRequest) (*pluginpb.ListResponse, error) {
	resp := &pluginpb.ListResponse{NextCursor: r.GetCursor() + "+"}
	for range 4000 {
		resp.Items = append(resp.Items, []byte(`{"name":"p"}`))
	}
	return resp, nil
}

func (badServer) ReadResource(_ context.Context, r *pluginpb.ReadResourceRequest) (*pluginpb.ReadResourceResponse, error) {
	result := func(s string) *pluginpb.ReadResourceResponse {
		return &pluginpb.ReadResourceResponse{Answer: &pluginpb.ReadResourceResponse_Result{Result: []byte(s)}}
	}
	input := func(requests, state string) *pluginpb.ReadResourceResponse {
		return &pluginpb.ReadResourceResponse{Answer: &pluginpb.ReadResourceResponse_InputRequired{InputRequired: &pluginpb.InputRequired{Requests: []byte(requests), RequestState: state}}}
	}
	switch r.GetUri() {
	case "bad://array":
		return result(`[]`), nil
	case "bad://truncated":
		return result(`{"contents":`), nil
	case "bad://method":
		return input(`{"1":{"method":"tools/call","params":{}}}`, ""), nil
	case "bad://state":
		return input(`{"1":{"method":"roots/list"}}`, strings.Repeat("s", 64<<10+1)), nil
	case "bad://many":
		var b strings.Builder
		for i := range 17 {
			fmt.Fprintf(&b, `,"%d":{"method":"roots/list"}`, i)
		}
		return input("{"+b.String()[1:]+"}", ""), nil
	case "bad://none":
		return &pluginpb.ReadResourceResponse{}, nil
	}
	return nil, status.Error(codes.NotFound, r.GetUri())
}

func (badServer) GetPrompt(_ context.Context, r *pluginpb.GetPromptRequest) (*pluginpb.GetPromptResponse, error) {
	if r.GetName() == "string" {
		return &pluginpb.GetPromptResponse{Answer: &pluginpb.GetPromptResponse_Result{Result: []byte(`"messages"`)}}, nil
	}
	return nil, status.Error(codes.NotFound, r.GetName())
}

func (badServer) Complete(_ context.Context, r *pluginpb.CompleteRequest) (*pluginpb.CompleteResponse, error) {
	if string(r.GetParams()) == `{"bad":true}` {
		return &pluginpb.CompleteResponse{Result: []byte(`null`)}, nil
	}
	return nil, status.Error(codes.NotFound, "nothing")
}

func (badServer) SubscribeResource(_ context.Context, r *pluginpb.SubscribeResourceRequest) (*pluginpb.SubscribeResourceResponse, error) {
	return nil, status.Error(codes.NotFound, r.GetUri())
}

func (badServer) CallsV2(s grpc.BidiStreamingServer[pluginpb.HostFrame, pluginpb.PluginFrame]) error {
	for {
		f, err := s.Recv()
		if err != nil {
			return nil
		}
		out := &pluginpb.PluginFrame{CallId: f.GetCallId()}
		switch f.GetStart().GetTool() {
		case "input":
			out.Msg = &pluginpb.PluginFrame_InputRequired{InputRequired: &pluginpb.InputRequired{Requests: []byte(`{}`)}}
		case "ok":
			out.Msg = &pluginpb.PluginFrame_Result{Result: []byte(`{"content":[]}`)}
		default:
			out.Msg = &pluginpb.PluginFrame_Error{Error: &pluginpb.CallError{Code: uint32(codes.NotFound), Message: "no such tool"}}
		}
		if err := s.Send(out); err != nil {
			return err
		}
	}
}
