// Package pluginclient is the host's side of the plugin contract: a
// *Client speaks to one running plugin, whatever contract version it
// negotiated, and passes arguments and results through as bytes, checked
// to be JSON objects. Plugin authors never import it: they write plugins
// with package pluginproto, whose request shapes (CallRequest,
// ReadRequest, PromptRequest), Input and errors the Client shares.
//
// # Starting a plugin
//
// A host starts a plugin with go-plugin using Handshake and
// PluginSets (as ClientConfig.VersionedPlugins), dispenses PluginName
// to get a *Client for the negotiated version, and then calls Describe
// (which tells it the plugin's Offers), ListTools, Watch and CallTool, and
// for what the plugin offers ListResources, ReadResource, GetPrompt,
// Complete, SubscribeResource, ... The Client passes arguments and results
// through as bytes, checked to be JSON objects; what differs between
// contract versions stays inside it. A call, read or prompt get whose
// handler asks the client returns an *pluginproto.InputRequiredError: the host gets the
// answers and retries with pluginhost.CallRequest.Input (ReadRequest.Input,
// PromptRequest.Input). A call that needs a client capability the client
// did not declare returns a *pluginproto.CapabilityRequiredError naming it. A call
// whose pluginhost.CallRequest.Tasks says it may go on as a task calls
// pluginhost.CallRequest.Detach when the plugin says it does; its answer still comes
// as any call's. A call the plugin failed running (its handler panicked)
// returns an error wrapping ErrPluginFailed.
//
// # Inside
//
// With a plugin of contract 2 every call shares one CallsV2 stream (the
// mux, mux.go): on the frame lane when the host handed one at launch
// (OfferLane) and the plugin took it at Describe (lane.go,
// internal/lane), else the CallsV2 rpc; with a plugin of contract 1 each call opens a CallTool
// stream of its own (the adapter, contract1.go). Both answer the same
// errors as the plugin's in-process helpers do, through the rules of
// internal/pluginwire.
package pluginclient
