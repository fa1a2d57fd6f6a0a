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
// The contract has versions, and the version is go-plugin's application
// protocol version: the host starts a plugin with PLUGIN_PROTOCOL_VERSIONS
// listing every version it speaks (1,2), and the plugin answers with one in
// the second field of its handshake line (1|2|unix|/path/to.sock|grpc for
// version 2). A plugin in another language picks its version there;
// Describe's contract_version must say the same.
//
// Contract 2 (ContractVersion, what Serve speaks) runs every call of a
// plugin on one long-lived CallsV2 stream: the host names each call by an id
// and sends Start (then, for arguments over 64 KiB, Arguments chunks) and
// Cancel frames; the plugin answers with progress, log and finally result
// or error frames. Contract 1 ran each call on a CallTool stream of its own;
// the host still serves plugins built against it, through an adapter chosen
// once when the plugin starts (testdata/contract1 holds such a plugin,
// built with the SDK of that time, for the tests).
//
// # The host
//
// A host starts a plugin with go-plugin using Handshake and
// ClientPluginSets (as ClientConfig.VersionedPlugins), dispenses PluginName
// to get a *Client for the negotiated version, and then calls Describe,
// ListTools, WatchTools and CallTool. The Client passes arguments and results
// through as bytes; what differs between contract versions stays inside it.
package pluginproto
