package pluginproto

import (
	"context"
	"errors"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/plughost/plughost/internal/plugincontract"
	"github.com/plughost/plughost/internal/pluginpb"
)

// ContractVersion is the version of the plugin contract a plugin built with
// this package serves, and the newest a host built with it speaks. A host
// also serves plugins of every older version (ClientPluginSets). The
// version is negotiated in go-plugin's handshake and repeated in Describe; a
// host refuses a plugin whose two answers differ.
const ContractVersion = plugincontract.Version

// PluginName is the name under which a plugin serves its tools in the
// go-plugin plugin set. The host dispenses it: Dispense(PluginName) returns a
// *Client.
const PluginName = plugincontract.PluginName

// Handshake is the go-plugin handshake shared by plughost and its plugins
// (plugincontract.Handshake).
var Handshake = plugincontract.Handshake

// Errors returned (wrapped) by Client and the in-process helpers
// (Plugin.CallTool, ...). Match them with errors.Is.
var (
	// ErrUnknownTool: the plugin offers no tool of that name (it may have
	// removed it a moment ago).
	ErrUnknownTool = errors.New("unknown tool")
	// ErrPluginClosed: the plugin broke the stream or the connection before
	// the call or watch ended, usually because its process died.
	ErrPluginClosed = errors.New("the plugin closed the call (it died or dropped the connection)")
	// ErrPluginFailed: the plugin failed running the call (a handler of
	// this SDK panicked; a plugin answers CallError INTERNAL). The error's
	// text ends with the plugin's message, after this error's text and
	// ": ". It is not the tool's own failure, which is an isError result.
	ErrPluginFailed = errors.New("the plugin failed running the call")
	// ErrNoResult: the plugin ended a call without sending its result.
	ErrNoResult = errors.New("plugin ended the call without a result")
	// ErrInvalidResult: the plugin's result is not a JSON object.
	ErrInvalidResult = errors.New("plugin sent an invalid result")
	// ErrContractVersion: the plugin speaks another contract version.
	ErrContractVersion = errors.New("incompatible plugin contract version")
	// ErrNotOffered: the Client was asked for something the plugin did not
	// offer in Describe (Description.Offers); no rpc was made.
	ErrNotOffered = errors.New("not offered by the plugin")
	// ErrUnknownResource: the plugin has no resource of that URI, listed or
	// matching one of its templates. A resource handler returns it for a
	// URI its template matched but that names nothing.
	ErrUnknownResource = errors.New("unknown resource")
	// ErrUnknownPrompt: the plugin has no prompt of that name.
	ErrUnknownPrompt = errors.New("unknown prompt")
	// ErrUnknownReference: a completion's ref names no prompt or resource
	// template of the plugin.
	ErrUnknownReference = errors.New("unknown prompt or resource template")
	// ErrInvalidArguments: a prompt's arguments or a completion's params
	// are missing or wrong; the error's text ends with the plugin's
	// message naming the problem. A prompt handler or completer returns it
	// (wrapped, with that message) to refuse its arguments.
	ErrInvalidArguments = errors.New("invalid arguments")
)

// ClientPluginSets returns the go-plugin plugin sets a host passes as
// plugin.ClientConfig.VersionedPlugins: one per contract version it speaks.
// Dispensing PluginName from the resulting client returns a *Client speaking
// the version the plugin chose (go-plugin's NegotiatedVersion).
//
// limits bound what the host takes from the plugin; nil means the
// defaults (see Limits).
func ClientPluginSets(limits *Limits) map[int]plugin.PluginSet {
	l := limits.withDefaults()
	sets := make(map[int]plugin.PluginSet, ContractVersion)
	for v := 1; v <= ContractVersion; v++ {
		sets[v] = plugin.PluginSet{PluginName: &grpcPlugin{contract: uint32(v), limits: l}}
	}
	return sets
}

// grpcPlugin is the go-plugin glue: on the plugin side it registers the gRPC
// server of a *Plugin, on the host side it wraps the connection in a *Client
// speaking the plugin set's contract version.
type grpcPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	p        *Plugin // nil on the host side
	contract uint32  // on the host side
	limits   Limits  // on the host side, defaults filled in
}

var _ plugin.GRPCPlugin = (*grpcPlugin)(nil)

func (g *grpcPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if g.p == nil {
		return errors.New("pluginproto: ClientPluginSets is for hosts; a plugin serves Plugin.PluginSet")
	}
	pluginpb.RegisterPluginServer(s, newServer(g.p))
	return nil
}

func (g *grpcPlugin) GRPCClient(ctx context.Context, _ *plugin.GRPCBroker, cc *grpc.ClientConn) (any, error) {
	return newClient(ctx, pluginpb.NewPluginClient(cc), g.contract, g.limits), nil
}
