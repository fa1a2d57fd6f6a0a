package pluginproto

import (
	"context"
	"errors"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/plughost/plughost/internal/pluginpb"
	"github.com/plughost/plughost/internal/pluginwire"
)

// Errors a handler returns (wrapped) to refuse a request, and that the
// in-process helpers (plugintest.ReadResource, ...) and the host's client
// (host/pluginclient) return for the same failures. Match them with
// errors.Is.
var (
	// ErrUnknownResource: the plugin has no resource of that URI, listed or
	// matching one of its templates. A resource handler returns it for a
	// URI its template matched but that names nothing.
	ErrUnknownResource = pluginwire.ErrUnknownResource
	// ErrUnknownPrompt: the plugin has no prompt of that name.
	ErrUnknownPrompt = pluginwire.ErrUnknownPrompt
	// ErrInvalidArguments: a prompt's arguments or a completion's params
	// are missing or wrong; the error's text ends with the plugin's
	// message naming the problem. A prompt handler or completer returns it
	// (wrapped, with that message) to refuse its arguments.
	ErrInvalidArguments = pluginwire.ErrInvalidArguments
)

// grpcPlugin is the go-plugin glue of the plugin's side: it registers the
// gRPC server of a *Plugin. The host's side is host/pluginclient's.
type grpcPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	p *Plugin
}

var _ plugin.GRPCPlugin = (*grpcPlugin)(nil)

func (g *grpcPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pluginpb.RegisterPluginServer(s, newServer(g.p))
	return nil
}

func (g *grpcPlugin) GRPCClient(context.Context, *plugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, errors.New("pluginproto: a plugin serves its tools; a host dispenses them with host/pluginclient")
}
