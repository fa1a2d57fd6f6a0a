package pluginclient

import (
	"context"
	"errors"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/plughost/plughost/internal/plugincontract"
	"github.com/plughost/plughost/internal/pluginpb"
	"github.com/plughost/plughost/internal/pluginwire"
)

// Handshake is the go-plugin handshake a host passes as
// plugin.ClientConfig.HandshakeConfig (the plugin's Serve answers it).
var Handshake = plugincontract.Handshake

// PluginName is the name a host dispenses from a started plugin's
// go-plugin client: Dispense(PluginName) returns a *Client.
const PluginName = plugincontract.PluginName

// ContractVersion is the newest version of the plugin contract this client
// speaks; it speaks every older one too (PluginSets).
const ContractVersion = plugincontract.Version

// OldestContractVersion is the oldest contract version a host built with
// this package still loads (PluginSets offers every version from it to
// ContractVersion): contract 1, so a plugin built before contract 2 keeps
// working. Raising it drops those plugins: a new major version of the
// module, by the promise of docs/plugin-authors.md.
const OldestContractVersion = 1

// Errors the Client returns (wrapped) besides those of pluginproto (a
// resource's or a prompt's absence, refused arguments), which a plugin's
// handlers return. Match them with errors.Is.
var (
	// ErrUnknownTool: the plugin offers no tool of that name (it may have
	// removed it a moment ago).
	ErrUnknownTool = pluginwire.ErrUnknownTool
	// ErrPluginFailed: the plugin failed running the call (a handler of
	// pluginproto panicked; a plugin answers CallError INTERNAL). The error's
	// text ends with the plugin's message, after this error's text and
	// ": ". It is not the tool's own failure, which is an isError result.
	ErrPluginFailed = pluginwire.ErrPluginFailed
	// ErrInvalidResult: the plugin's result is not a JSON object.
	ErrInvalidResult = pluginwire.ErrInvalidResult
	// ErrUnknownReference: a completion's ref names no prompt or resource
	// template of the plugin.
	ErrUnknownReference = pluginwire.ErrUnknownReference
	// ErrPluginClosed: the plugin broke the stream or the connection
	// before the call or watch ended, usually because its process died.
	ErrPluginClosed = pluginwire.ErrPluginClosed
	// ErrNoResult: the plugin ended a call without sending its result.
	ErrNoResult = pluginwire.ErrNoResult
	// ErrContractVersion: the plugin speaks another contract version.
	ErrContractVersion = errors.New("incompatible plugin contract version")
	// ErrNotOffered: the Client was asked for something the plugin did
	// not offer in Describe (Description.Offers); no rpc was made.
	ErrNotOffered = errors.New("not offered by the plugin")
)

// PluginSets returns the go-plugin plugin sets a host passes as
// plugin.ClientConfig.VersionedPlugins: one per contract version it speaks.
// Dispensing PluginName from the resulting client returns a *Client speaking
// the version the plugin chose (go-plugin's NegotiatedVersion).
//
// limits bound what the host takes from the plugin; nil means the
// defaults (see Limits).
func PluginSets(limits *Limits) map[int]plugin.PluginSet {
	l := limits.withDefaults()
	sets := make(map[int]plugin.PluginSet, ContractVersion-OldestContractVersion+1)
	for v := OldestContractVersion; v <= ContractVersion; v++ {
		sets[v] = plugin.PluginSet{PluginName: &grpcPlugin{contract: uint32(v), limits: l}}
	}
	return sets
}

// grpcPlugin is the go-plugin glue of the host's side: it wraps the
// connection in a *Client speaking the plugin set's contract version.
type grpcPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	contract uint32
	limits   Limits // defaults filled in
}

var _ plugin.GRPCPlugin = (*grpcPlugin)(nil)

func (g *grpcPlugin) GRPCServer(*plugin.GRPCBroker, *grpc.Server) error {
	return errors.New("pluginclient: a host dispenses a plugin's tools; a plugin serves them with Serve")
}

func (g *grpcPlugin) GRPCClient(ctx context.Context, _ *plugin.GRPCBroker, cc *grpc.ClientConn) (any, error) {
	return newClient(ctx, pluginpb.NewPluginClient(cc), g.contract, g.limits), nil
}
