package pluginproto

import (
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/plughost/plughost/internal/pluginpb"
)

// withinHostLimit returns f if the host receives a message of its size
// (max bytes, DescribeRequest.max_message_size). A larger result or input
// request becomes a CallError RESOURCE_EXHAUSTED naming both sizes, and a
// larger progress or log message is dropped (nil), logged: sent, it would
// break the stream and fail every call in flight on it, not only its own.
func (p *Plugin) withinHostLimit(f *pluginpb.PluginFrame, max int) *pluginpb.PluginFrame {
	size := proto.Size(f)
	if size <= max {
		return f
	}
	switch f.GetMsg().(type) {
	case *pluginpb.PluginFrame_Progress, *pluginpb.PluginFrame_Log:
		p.logger.Warn("dropped a progress or log message over the host's limit", "bytes", size, "limit", max)
		return nil
	}
	msg := fmt.Sprintf("the plugin's answer, a message of %d bytes, is over MaxResultSize (%d bytes); it was not sent", size, max)
	p.logger.Warn("a call's answer is over the host's limit; the call fails instead", "bytes", size, "limit", max)
	return &pluginpb.PluginFrame{CallId: f.GetCallId(), Msg: &pluginpb.PluginFrame_Error{Error: &pluginpb.CallError{Code: uint32(codes.ResourceExhausted), Message: msg}}}
}
