package plugintest

import (
	"context"
	"encoding/json"

	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/pluginproto"
)

// The shapes of what a test hands a plugin, as the host would: one call
// (CallTool), one resources/read (ReadResource), one prompts/get
// (GetPrompt). Their fields are documented in package
// github.com/plughost/plughost/internal/pluginhost, which the host's client
// shares; a test fills them as in
//
//	plugintest.CallTool(ctx, p, &plugintest.CallRequest{Tool: "count", Arguments: json.RawMessage(`{"n":3}`)})
//
// AnswerInput (an AnswerFunc) answers the handler's requests to the client,
// so that the input rounds run in-process as over a host; Input is what a
// retry carries after an *InputRequiredError when AnswerInput is nil.
type (
	CallRequest   = pluginhost.CallRequest
	ReadRequest   = pluginhost.ReadRequest
	PromptRequest = pluginhost.PromptRequest
	Input         = pluginhost.Input
	AnswerFunc    = pluginhost.AnswerFunc
)

// ReadResource reads one resource of p in-process, as the host would
// (input rounds included when req.AnswerInput is set), and returns the MCP
// ReadResourceResult. An unknown URI wraps pluginproto.ErrUnknownResource.
func ReadResource(ctx context.Context, p *pluginproto.Plugin, req *ReadRequest) (json.RawMessage, error) {
	return pluginhost.Of(p).ReadResource(ctx, req)
}

// GetPrompt gets one prompt of p in-process, as the host would, and returns
// the MCP GetPromptResult. An unknown name wraps
// pluginproto.ErrUnknownPrompt, refused arguments
// pluginproto.ErrInvalidArguments.
func GetPrompt(ctx context.Context, p *pluginproto.Plugin, req *PromptRequest) (json.RawMessage, error) {
	return pluginhost.Of(p).GetPrompt(ctx, req)
}

// Complete answers one completion/complete of p in-process: params are the
// MCP CompleteRequest params, the result the CompleteResult. A ref naming
// nothing of p is an error naming it.
func Complete(ctx context.Context, p *pluginproto.Plugin, params json.RawMessage) (json.RawMessage, error) {
	return pluginhost.Of(p).Complete(ctx, params)
}
