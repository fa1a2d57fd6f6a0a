package pluginclient

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"google.golang.org/grpc"

	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/internal/pluginpb"
	"github.com/plughost/plughost/internal/pluginwire"
)

// contract1 is the host's adapter for plugins built against contract 1
// (this package before contract 2, or a plugin in another language whose
// handshake answers 1): each call on a CallTool stream of its own, the one
// way every contract-1 plugin serves. A Client uses it, for all its calls,
// when go-plugin negotiated version 1; nothing else in the host knows the
// difference. pluginproto/testdata/contract1 is a plugin built with the
// frozen contract-1 SDK that TestContract1Plugin runs through it.
type contract1 struct {
	rpc    pluginpb.PluginClient
	exited context.Context // the plugin process's lifetime; nil in some tests
	recv   grpc.CallOption // bounds each message the plugin sends (Limits.MaxResultSize)
}

// start runs call on a goroutine of its own: a contract-1 stream is the
// call's, and someone must read it. The stream ends with ctx, watched or
// not.
func (v contract1) start(ctx context.Context, req *pluginhost.CallRequest, args json.RawMessage, in *pluginpb.Input, done func(json.RawMessage, error), _ bool) pendingCall {
	go func() { done(v.call(ctx, req, args, in)) }()
	return pendingCall{}
}

// call runs req on a CallTool stream of its own. Contract 1 knows nothing
// of the client's capabilities and input: in is dropped (a plugin of
// contract 1 never asks for input).
func (v contract1) call(ctx context.Context, req *pluginhost.CallRequest, args json.RawMessage, _ *pluginpb.Input) (json.RawMessage, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the stream
	stream, err := v.rpc.CallTool(ctx, v.recv)
	if err != nil {
		return nil, callError(ctx, v.exited, req.Tool, err)
	}
	err = stream.Send(&pluginpb.CallToolHostMessage{Msg: &pluginpb.CallToolHostMessage_Start{Start: &pluginpb.CallStart{
		Tool: req.Tool, Arguments: args, Progress: req.Progress != nil,
	}}})
	if err == io.EOF {
		// The stream ended before the start went out; Recv tells why.
		_, err = stream.Recv()
	}
	if err != nil {
		return nil, callError(ctx, v.exited, req.Tool, err)
	}
	for {
		msg, err := stream.Recv()
		if err != nil {
			return nil, callError(ctx, v.exited, req.Tool, err)
		}
		switch m := msg.GetMsg().(type) {
		case *pluginpb.CallToolPluginMessage_Progress:
			if req.Progress != nil {
				req.Progress(m.Progress.GetProgress(), m.Progress.GetTotal(), m.Progress.GetMessage())
			}
		case *pluginpb.CallToolPluginMessage_Log:
			if req.Log != nil {
				req.Log(m.Log.GetLevel(), m.Log.GetLogger(), m.Log.GetData())
			}
		case *pluginpb.CallToolPluginMessage_Result:
			if !pluginwire.IsObject(m.Result) {
				return nil, fmt.Errorf("call %q: %w: not a JSON object: %.80q", req.Tool, ErrInvalidResult, m.Result)
			}
			return m.Result, nil
		default:
			// A message of a later revision; this host cannot answer it,
			// and the plugin must not depend on an answer.
		}
	}
}
