// Package pluginproto is the contract between plughost and its plugins, and
// the Go SDK for writing a plugin.
//
// # Writing a plugin
//
// A plugin is a program that offers MCP tools. It builds a Plugin, adds its
// tools and calls Serve from main:
//
//	func main() {
//		p := pluginproto.New("greeter", "1.0.0")
//		p.AddTool(pluginproto.Tool{
//			Name:        "greet",
//			Description: "Greets someone by name.",
//			InputSchema: json.RawMessage(`{"type":"object",
//				"properties":{"name":{"type":"string"}},"required":["name"]}`),
//		}, greet)
//		pluginproto.Serve(p)
//	}
//
//	func greet(ctx context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
//		var args struct{ Name string }
//		if err := req.Bind(&args); err != nil {
//			return nil, err
//		}
//		return pluginproto.TextResult("Hello, " + args.Name + "!"), nil
//	}
//
// Build it, drop the binary into the host's plugin directory, and the host
// lists greet to every client. A handler's error becomes an isError result
// the model reads (so it can correct its arguments); a panic is recovered into
// one. A handler may report progress (Request.Progress) and send log messages
// to the client (Request.Log) before it returns; its context is cancelled when
// the client cancels the call. Tools may be added and removed while the plugin
// runs: the host is told and tells its clients.
//
// Nothing may be printed to stdout before Serve: stdout carries the
// go-plugin handshake. Operator logs go to stderr through Plugin.Logger.
//
// To test a tool without a host, call Plugin.CallTool, which runs it exactly
// as a call from the host would.
//
// # The contract
//
// Serve speaks gRPC through hashicorp/go-plugin with the Handshake below; the
// service is in proto/plugin.proto. MCP shapes (tool definitions, arguments,
// results, log data) travel as JSON bytes inside protobuf envelopes, so a
// plugin in another language needs only a gRPC server, the go-plugin
// handshake and that file.
//
// A call can travel two ways. CallTool is a stream per call: simple, and all
// a plugin in another language must serve. Calls is optional and cheaper: one
// long-lived stream per plugin carries every call, each named by an id the
// host picks, with Start and Cancel going to the plugin and progress, log,
// result or error messages coming back. A Go plugin serves both; the host
// uses Calls and falls back to CallTool for good when the plugin answers
// UNIMPLEMENTED.
//
// # The host
//
// A host starts a plugin with go-plugin using Handshake and ClientPluginSet,
// dispenses PluginName to get a *Client, and then calls Describe, ListTools,
// WatchTools and CallTool. The Client passes arguments and results through as
// bytes, and multiplexes its calls on one Calls stream when the plugin
// serves it.
package pluginproto
