// Command contract1 is a plugin built with the frozen contract-1 SDK in sdk/
// (see README.md: never edit sdk/). pluginproto's TestContract1Plugin builds
// and runs it to prove that the host still serves plugins built with that SDK.
package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"plughost.test/contract1/sdk"
)

// callToolOnlyEnv, when "1", makes the plugin answer the optional Calls rpc
// with UNIMPLEMENTED, as a contract-1 plugin in another language may.
const callToolOnlyEnv = "CONTRACT1_FIXTURE_CALLTOOL_ONLY"

func main() {
	p := pluginproto.New("contract1", "1.0.0")
	p.AddTool(pluginproto.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object","properties":{"Text":{"type":"string"}}}`)}, echo)
	p.AddTool(pluginproto.Tool{Name: "report"}, func(_ context.Context, r *pluginproto.Request) (*pluginproto.Result, error) {
		r.Log("info", map[string]string{"step": "start"})
		r.Progress(1, 2, "half")
		r.Progress(2, 2, "done")
		return pluginproto.TextResult("reported"), nil
	})
	// block reports progress, waits for its context to end, then announces
	// the cancellation by adding a tool named cancelled_<ID>.
	p.AddTool(pluginproto.Tool{Name: "block"}, func(ctx context.Context, r *pluginproto.Request) (*pluginproto.Result, error) {
		var args struct{ ID string }
		if err := r.Bind(&args); err != nil {
			return nil, err
		}
		r.Progress(0, 0, "blocked")
		<-ctx.Done()
		p.AddTool(pluginproto.Tool{Name: "cancelled_" + args.ID}, echo)
		return nil, ctx.Err()
	})
	if os.Getenv(callToolOnlyEnv) != "1" {
		pluginproto.Serve(p)
		return
	}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: pluginproto.Handshake,
		Plugins:         p.PluginSet(),
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return grpc.NewServer(append(opts, grpc.StreamInterceptor(refuseCalls))...)
		},
		Logger: p.Logger(),
	})
}

// refuseCalls answers the Calls rpc with UNIMPLEMENTED.
func refuseCalls(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if strings.HasSuffix(info.FullMethod, "/Calls") {
		return status.Error(codes.Unimplemented, "this plugin serves CallTool only")
	}
	return handler(srv, ss)
}

func echo(_ context.Context, r *pluginproto.Request) (*pluginproto.Result, error) {
	var args struct{ Text string }
	if err := r.Bind(&args); err != nil {
		return nil, err
	}
	return pluginproto.TextResult(args.Text), nil
}
