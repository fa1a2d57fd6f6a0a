// Package pluginhost is the host's side of a plugin written with
// pluginproto: what a host hands a plugin, and how it reaches the parts of
// a *pluginproto.Plugin that an author never calls.
//
// The request shapes (CallRequest, ReadRequest, PromptRequest, with their
// Input and AnswerFunc) are shared by the host's client (package
// host/pluginclient), which sends them over the contract, and by a plugin
// run in-process, which answers them directly:
//
//	res, err := pluginhost.Of(p).CallTool(ctx, &pluginhost.CallRequest{Tool: "echo"})
//
// Of gives that in-process side of a *pluginproto.Plugin: its calls, reads,
// prompts and completions without a host (package plugintest builds on
// them), its go-plugin set (for a host that serves it itself), and the
// proxy hook with which host/wrapped serves an existing MCP server as a
// plugin (see Proxy).
package pluginhost

import (
	"context"
	"encoding/json"
	"os"

	"github.com/hashicorp/go-plugin"

	"github.com/plughost/plughost/internal/pluginpb"
)

// Plugin is the host's side of one *pluginproto.Plugin (see Of).
type Plugin interface {
	// CallTool runs one call as a host would, the input rounds included
	// when req.AnswerInput is set. Its errors are those of
	// host/pluginclient's Client.CallTool for the same failure.
	CallTool(ctx context.Context, req *CallRequest) (json.RawMessage, error)
	// ReadResource reads one resource, as CallTool calls.
	ReadResource(ctx context.Context, req *ReadRequest) (json.RawMessage, error)
	// GetPrompt gets one prompt, as CallTool calls.
	GetPrompt(ctx context.Context, req *PromptRequest) (json.RawMessage, error)
	// Complete answers completion/complete: params are the MCP
	// CompleteRequest params, the result the CompleteResult.
	Complete(ctx context.Context, params json.RawMessage) (json.RawMessage, error)
	// Hook answers one question to the plugin's hooks as its Hooks
	// stream would (q.Id and q.Cancel unused): an unserved point, a
	// handler's error or panic are the answer's error.
	Hook(ctx context.Context, q *pluginpb.HookCall) *pluginpb.HookAnswer
	// PluginSet is the go-plugin set that serves the plugin, for a host
	// that serves it in its own process.
	PluginSet() plugin.PluginSet
	// SetProxy makes px serve the plugin's requests (see Proxy); the
	// plugin declares what px offers besides tools with its Offer. Call it
	// before the plugin is served.
	SetProxy(px Proxy)
	// SetProxyLists replaces what the plugin lists with l, and tells the
	// host which lists changed (those that differ from what was set
	// before). An object without its key (a tool's or a prompt's name, a
	// resource's uri, a template's uriTemplate), or with one already
	// listed, is skipped and returned in the error, which names each; the
	// rest is set.
	SetProxyLists(l ProxyLists) error
	// SetLane makes f the plugin's end of the frame lane, taken at the
	// host's first Describe that offers one, for a host that serves the
	// plugin in its own process (a plugin process takes the one its
	// environment names).
	SetLane(f *os.File)
}

var of func(any) Plugin

// Register is called once, by package pluginproto, with the function
// that gives a *pluginproto.Plugin's host side.
func Register(f func(p any) Plugin) { of = f }

// Of returns the host's side of p, which must be a *pluginproto.Plugin.
func Of(p any) Plugin { return of(p) }
