// Command badplugin is a plugin of the end-to-end tests that lists the
// mistakes a tool author makes, the way a plugin in any language can: it
// serves contract 2 without the pluginproto SDK (whose AddTool refuses
// most of them), writing the contract's messages by hand, so that a test
// can check that `plughost plugins` shows each definition the host refuses
// and why.
//
// It offers, besides one valid tool "ok", a resource, a template and a
// prompt:
//
//   - tools: "bad_schema" (an inputSchema that does not compile),
//     "no_schema" (no inputSchema), "bad name!" (a name outside
//     [a-zA-Z0-9_.-]), one without a name, and "ok" a second time;
//   - a resource whose "uri" is not a URI, and a valid one "bad://fine";
//   - a resource template whose URI template does not parse;
//   - a prompt whose "arguments" is not an array.
//
// It serves Describe and the List rpcs only: WatchTools, CallsV2 and the
// rest answer Unimplemented.
package main

import (
	"context"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/plughost/plughost/internal/plugincontract"
)

var tools = []string{
	`{"name":"ok","description":"A valid tool.","inputSchema":{"type":"object"}}`,
	`{"name":"bad_schema","description":"Its schema does not compile.","inputSchema":{"type":"object","properties":{"n":{"type":"integer","minimum":"zero"}}}}`,
	`{"name":"no_schema","description":"It has no inputSchema."}`,
	`{"name":"bad name!","description":"Its name has a space.","inputSchema":{"type":"object"}}`,
	`{"description":"It has no name.","inputSchema":{"type":"object"}}`,
	`{"name":"ok","description":"The same name again.","inputSchema":{"type":"object"}}`,
}

var resources = []string{
	`{"uri":"bad://fine","name":"fine"}`,
	`{"uri":"not a uri","name":"broken"}`,
}

var templates = []string{`{"uriTemplate":"bad://{unclosed","name":"broken"}`}

var prompts = []string{`{"name":"broken_prompt","arguments":"none"}`}

func main() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  plugincontract.Handshake,
		VersionedPlugins: map[int]plugin.PluginSet{2: {plugincontract.PluginName: grpcPlugin{}}},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return grpc.NewServer(append(opts, grpc.ForceServerCodec(codec{}))...)
		},
		Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, JSONFormat: true}),
	})
}

type grpcPlugin struct{ plugin.NetRPCUnsupportedPlugin }

func (grpcPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	s.RegisterService(&service, nil)
	return nil
}

func (grpcPlugin) GRPCClient(context.Context, *plugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, nil // never a host
}

// raw is a message as its wire bytes.
type raw struct{ b []byte }

// codec passes raw messages through and the others (go-plugin's own
// services) to protobuf.
type codec struct{}

func (codec) Marshal(v any) ([]byte, error) {
	if r, ok := v.(*raw); ok {
		return r.b, nil
	}
	return proto.Marshal(v.(proto.Message))
}

func (codec) Unmarshal(data []byte, v any) error {
	if r, ok := v.(*raw); ok {
		r.b = append([]byte(nil), data...)
		return nil
	}
	return proto.Unmarshal(data, v.(proto.Message))
}

func (codec) Name() string { return "proto" }

var service = grpc.ServiceDesc{
	ServiceName: "plughost.plugin.v1.Plugin",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{
		method("Describe", describe()),
		method("ListTools", list(tools)),
		method("ListResources", list(resources)),
		method("ListResourceTemplates", list(templates)),
		method("ListPrompts", list(prompts)),
	},
}

func method(name string, resp []byte) grpc.MethodDesc {
	return grpc.MethodDesc{MethodName: name, Handler: func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		if err := dec(&raw{}); err != nil {
			return nil, err
		}
		return &raw{b: resp}, nil
	}}
}

// describe is a DescribeResponse: name 1, version 2, contract_version 3,
// offers 4 (resources 1, prompts 3).
func describe() []byte {
	var offers []byte
	offers = protowire.AppendTag(offers, 1, protowire.VarintType)
	offers = protowire.AppendVarint(offers, 1)
	offers = protowire.AppendTag(offers, 3, protowire.VarintType)
	offers = protowire.AppendVarint(offers, 1)
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, "badplugin")
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendString(b, "1")
	b = protowire.AppendTag(b, 3, protowire.VarintType)
	b = protowire.AppendVarint(b, 2)
	b = protowire.AppendTag(b, 4, protowire.BytesType)
	return protowire.AppendBytes(b, offers)
}

// list is a ListToolsResponse or a ListResponse: the items are field 1.
func list(items []string) []byte {
	var b []byte
	for _, it := range items {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendString(b, it)
	}
	return b
}
