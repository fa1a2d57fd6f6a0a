package pluginproto

import (
	"context"
	"errors"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"plughost.test/contract1/sdk/internal/pb"
)

// ContractVersion is the version of the plugin contract this package speaks.
// A host and a plugin exchange it in Describe; a host refuses a plugin that
// speaks another version.
const ContractVersion = 1

// PluginName is the name under which a plugin serves its tools in the
// go-plugin plugin set. The host dispenses it: Dispense(PluginName) returns a
// *Client.
const PluginName = "tools"

// Handshake is the go-plugin handshake shared by plughost and its plugins. The
// magic cookie is not a secret: it only stops a plugin binary started by hand
// from waiting forever for a host.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "PLUGHOST_PLUGIN",
	MagicCookieValue: "019544a273a2bc73910caf0182d93962b8325e5cc6bd15d4",
}

// Errors returned (wrapped) by Client and Plugin.CallTool. Match them with
// errors.Is.
var (
	// ErrUnknownTool: the plugin offers no tool of that name (it may have
	// removed it a moment ago).
	ErrUnknownTool = errors.New("unknown tool")
	// ErrPluginClosed: the plugin broke the stream or the connection before
	// the call or watch ended, usually because its process died.
	ErrPluginClosed = errors.New("the plugin closed the call (it died or dropped the connection)")
	// ErrNoResult: the plugin ended a call without sending its result.
	ErrNoResult = errors.New("plugin ended the call without a result")
	// ErrInvalidResult: the plugin's result is not a JSON object.
	ErrInvalidResult = errors.New("plugin sent an invalid result")
	// ErrContractVersion: the plugin speaks another contract version.
	ErrContractVersion = errors.New("incompatible plugin contract version")
)

// ClientPluginSet returns the go-plugin plugin set a host passes as
// plugin.ClientConfig.Plugins. Dispensing PluginName from the resulting
// client returns a *Client.
func ClientPluginSet() plugin.PluginSet {
	return plugin.PluginSet{PluginName: &grpcPlugin{}}
}

// serveNoCalls makes the plugins served by this process answer Calls with
// UNIMPLEMENTED; only the tests set it, to exercise the host's fallback.
var serveNoCalls bool

// grpcPlugin is the go-plugin glue: on the plugin side it registers the gRPC
// server of a *Plugin, on the host side it wraps the connection in a *Client.
type grpcPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	p *Plugin // nil on the host side
}

var _ plugin.GRPCPlugin = (*grpcPlugin)(nil)

func (g *grpcPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if g.p == nil {
		return errors.New("pluginproto: ClientPluginSet is for hosts; a plugin serves Plugin.PluginSet")
	}
	srv := newServer(g.p)
	srv.noCalls = serveNoCalls
	pb.RegisterPluginServer(s, srv)
	return nil
}

func (g *grpcPlugin) GRPCClient(ctx context.Context, _ *plugin.GRPCBroker, cc *grpc.ClientConn) (any, error) {
	return newClient(ctx, pb.NewPluginClient(cc)), nil
}
