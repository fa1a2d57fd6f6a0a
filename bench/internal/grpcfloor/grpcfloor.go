// Package grpcfloor is the bare gRPC hop the plugin contract rides on, with
// nothing of ours: a raw-bytes codec, a unary method and a bidirectional
// stream method that reads one message, writes it back and ends (what a
// plugin's CallTool does). The benchmark runs the server in another process
// and calls it over a unix socket.
package grpcfloor

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
)

// Msg is the raw payload; the codec passes its bytes as they are.
type Msg struct{ B []byte }

// Codec is the raw-bytes codec (it only handles *Msg).
type Codec struct{}

func (Codec) Marshal(v any) ([]byte, error) {
	m, ok := v.(*Msg)
	if !ok {
		return nil, fmt.Errorf("grpcfloor: cannot marshal %T", v)
	}
	return m.B, nil
}

func (Codec) Unmarshal(data []byte, v any) error {
	m, ok := v.(*Msg)
	if !ok {
		return fmt.Errorf("grpcfloor: cannot unmarshal into %T", v)
	}
	m.B = append(m.B[:0], data...)
	return nil
}

func (Codec) Name() string { return "raw" }

// Method names, for ClientConn.Invoke and NewStream.
const (
	UnaryMethod  = "/floor.Echo/Unary"
	StreamMethod = "/floor.Echo/Stream"
)

// StreamDesc describes the bidirectional method for ClientConn.NewStream.
var StreamDesc = grpc.StreamDesc{StreamName: "Stream", ServerStreams: true, ClientStreams: true}

type echoServer interface{}

var serviceDesc = grpc.ServiceDesc{
	ServiceName: "floor.Echo",
	HandlerType: (*echoServer)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Unary",
		Handler: func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			m := new(Msg)
			if err := dec(m); err != nil {
				return nil, err
			}
			return m, nil
		},
	}},
	Streams: []grpc.StreamDesc{{
		StreamName:    "Stream",
		ServerStreams: true,
		ClientStreams: true,
		Handler: func(_ any, stream grpc.ServerStream) error {
			m := new(Msg)
			if err := stream.RecvMsg(m); err != nil {
				return err
			}
			return stream.SendMsg(m)
		},
	}},
}

// NewServer returns a gRPC server of the echo service with the raw codec.
func NewServer() *grpc.Server {
	s := grpc.NewServer(grpc.ForceServerCodec(Codec{}))
	s.RegisterService(&serviceDesc, struct{}{})
	return s
}
