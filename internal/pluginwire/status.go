package pluginwire

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// UnaryError turns a unary rpc's failure into one of the documented
// errors: NOT_FOUND wraps notFound, INVALID_ARGUMENT ErrInvalidArguments,
// both keeping the plugin's message; a broken connection ErrPluginClosed.
// Any other failure of the plugin is returned with its message.
func UnaryError(ctx, exited context.Context, what string, err error, notFound error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", what, ctx.Err())
	}
	st := status.Convert(err)
	switch st.Code() {
	case codes.NotFound:
		return fmt.Errorf("%s: %w: %s", what, notFound, st.Message())
	case codes.InvalidArgument:
		return fmt.Errorf("%s: %w: %s", what, ErrInvalidArguments, st.Message())
	case codes.Unavailable, codes.Canceled:
		return RPCError(ctx, exited, what, err)
	case codes.ResourceExhausted:
		// Kept as a gRPC status, so that the host can tell a size limit.
		return fmt.Errorf("%s: the plugin's answer is over the size limit: %w", what, err)
	}
	return fmt.Errorf("%s: the plugin failed (%s): %s", what, st.Code(), st.Message())
}
