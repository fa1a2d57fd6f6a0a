package pluginproto

import (
	"context"
	"encoding/json"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plughost/plughost/internal/pluginpb"
)

// The plugin's side of resources, prompts and completion. Lists are
// answered in one page: the host accepts messages of any size from a
// plugin, and one page is a consistent snapshot.

func (s *server) ListResources(_ context.Context, req *pluginpb.ListRequest) (*pluginpb.ListResponse, error) {
	return s.list(req, kindResources, func() []json.RawMessage {
		return jsonOf(s.p.resources.all(), func(e *resourceEntry) json.RawMessage { return e.json })
	})
}

func (s *server) ListResourceTemplates(_ context.Context, req *pluginpb.ListRequest) (*pluginpb.ListResponse, error) {
	return s.list(req, kindResources, func() []json.RawMessage {
		return jsonOf(s.p.templates.all(), func(e *templateEntry) json.RawMessage { return e.json })
	})
}

func (s *server) ListPrompts(_ context.Context, req *pluginpb.ListRequest) (*pluginpb.ListResponse, error) {
	return s.list(req, kindPrompts, func() []json.RawMessage {
		return jsonOf(s.p.prompts.all(), func(e *promptEntry) json.RawMessage { return e.json })
	})
}

// list answers a list of kind k with items, which runs under the plugin's
// lock, and records that the host has listed k.
func (s *server) list(req *pluginpb.ListRequest, k kind, items func() []json.RawMessage) (*pluginpb.ListResponse, error) {
	if req.GetCursor() != "" {
		return nil, status.Errorf(codes.InvalidArgument, "unknown cursor %q: this plugin lists everything in one page", req.GetCursor())
	}
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	s.p.listed[k] = s.p.gen[k]
	resp := &pluginpb.ListResponse{}
	for _, item := range items() {
		resp.Items = append(resp.Items, item)
	}
	return resp, nil
}

func (s *server) ReadResource(ctx context.Context, req *pluginpb.ReadResourceRequest) (*pluginpb.ReadResourceResponse, error) {
	res, err := s.p.read(ctx, req.GetUri(), invocation{caps: req.GetClientCapabilities(), input: inputOf(req.GetInput()), caller: callerOf(req.GetCaller())})
	if ir := (*InputRequiredError)(nil); errors.As(err, &ir) {
		return &pluginpb.ReadResourceResponse{Answer: &pluginpb.ReadResourceResponse_InputRequired{InputRequired: inputRequiredPB(ir)}}, nil
	}
	if err != nil {
		return nil, err
	}
	return &pluginpb.ReadResourceResponse{Answer: &pluginpb.ReadResourceResponse_Result{Result: res}}, nil
}

func (s *server) GetPrompt(ctx context.Context, req *pluginpb.GetPromptRequest) (*pluginpb.GetPromptResponse, error) {
	res, err := s.p.getPrompt(ctx, req.GetName(), req.GetArguments(), invocation{caps: req.GetClientCapabilities(), input: inputOf(req.GetInput()), caller: callerOf(req.GetCaller())})
	if ir := (*InputRequiredError)(nil); errors.As(err, &ir) {
		return &pluginpb.GetPromptResponse{Answer: &pluginpb.GetPromptResponse_InputRequired{InputRequired: inputRequiredPB(ir)}}, nil
	}
	if err != nil {
		return nil, err
	}
	return &pluginpb.GetPromptResponse{Answer: &pluginpb.GetPromptResponse_Result{Result: res}}, nil
}

func (s *server) Complete(ctx context.Context, req *pluginpb.CompleteRequest) (*pluginpb.CompleteResponse, error) {
	res, err := s.p.complete(ctx, req.GetParams())
	if err != nil {
		return nil, err
	}
	return &pluginpb.CompleteResponse{Result: res}, nil
}

// SubscribeResource records the host's subscription to a resource the
// plugin has (listed, or matching a template), so that ResourceUpdated
// reports it; or ends one.
func (s *server) SubscribeResource(ctx context.Context, req *pluginpb.SubscribeResourceRequest) (*pluginpb.SubscribeResourceResponse, error) {
	uri := req.GetUri()
	if px := s.p.getProxy(); px != nil {
		return &pluginpb.SubscribeResourceResponse{}, s.p.proxySubscribe(ctx, px, uri, !req.GetUnsubscribe())
	}
	if req.GetUnsubscribe() {
		s.p.mu.Lock()
		delete(s.p.subs, uri)
		s.p.mu.Unlock()
		return &pluginpb.SubscribeResourceResponse{}, nil
	}
	if _, _, _, ok := s.p.findResource(uri); !ok {
		return nil, status.Errorf(codes.NotFound, "no resource %q", uri)
	}
	s.p.mu.Lock()
	if _, ok := s.p.subs[uri]; !ok {
		s.p.subs[uri] = 0 // no update yet
	}
	s.p.mu.Unlock()
	return &pluginpb.SubscribeResourceResponse{}, nil
}

func inputRequiredPB(ir *InputRequiredError) *pluginpb.InputRequired {
	return &pluginpb.InputRequired{Requests: ir.Requests, RequestState: ir.State}
}
