package pluginproto

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"plughost.test/contract1/sdk/internal/pb"
)

// Client is the host's view of one running plugin, dispensed by go-plugin
// from ClientPluginSet. It is safe for concurrent use.
type Client struct {
	rpc    pb.PluginClient
	exited context.Context // cancelled by go-plugin when the plugin process exits
	mux    mux             // the Calls stream, when the plugin serves it
}

func newClient(exited context.Context, rpc pb.PluginClient) *Client {
	return &Client{rpc: rpc, exited: exited, mux: mux{rpc: rpc, exited: exited}}
}

// Description is what a plugin says about itself.
type Description struct {
	// Name and Version are the plugin's own, as given to New.
	Name, Version string
	// ContractVersion is the contract version the plugin speaks.
	ContractVersion uint32
}

// Describe asks the plugin for its name, version and contract version, and
// tells it the host's version. When the plugin speaks another contract
// version it returns the description and an error wrapping
// ErrContractVersion.
func (c *Client) Describe(ctx context.Context, hostVersion string) (Description, error) {
	resp, err := c.rpc.Describe(ctx, &pb.DescribeRequest{HostContractVersion: ContractVersion, HostVersion: hostVersion})
	if err != nil {
		return Description{}, c.rpcError(ctx, "describe", err)
	}
	d := Description{Name: resp.GetName(), Version: resp.GetVersion(), ContractVersion: resp.GetContractVersion()}
	if d.ContractVersion != ContractVersion {
		return d, fmt.Errorf("%w: plugin %q speaks contract version %d, this host speaks %d", ErrContractVersion, d.Name, d.ContractVersion, ContractVersion)
	}
	return d, nil
}

// ListTools returns the plugin's tools, each an MCP Tool object as JSON.
// An entry that is not a JSON object is an error naming it.
func (c *Client) ListTools(ctx context.Context) ([]json.RawMessage, error) {
	resp, err := c.rpc.ListTools(ctx, &pb.ListToolsRequest{})
	if err != nil {
		return nil, c.rpcError(ctx, "list tools", err)
	}
	tools := make([]json.RawMessage, len(resp.GetTools()))
	for i, t := range resp.GetTools() {
		if !isObject(t) {
			return nil, fmt.Errorf("list tools: tool %d is not a JSON object: %.80q", i, t)
		}
		tools[i] = t
	}
	return tools, nil
}

// CallRequest is one call of a tool, for Client.CallTool and Plugin.CallTool.
type CallRequest struct {
	// Tool is the tool's name as the plugin gave it.
	Tool string
	// Arguments is the JSON object of arguments; nil means {}. It is passed
	// to the plugin as is.
	Arguments json.RawMessage
	// Progress receives the plugin's progress reports. Nil means the client
	// did not ask for progress, and the plugin sends none.
	Progress func(progress, total float64, message string)
	// Log receives the plugin's log messages: an MCP level, the logger name
	// (empty for the plugin itself) and any JSON value. Nil drops them.
	Log func(level, logger string, data json.RawMessage)
}

var emptyObject = json.RawMessage("{}")

// CallTool runs a tool in the plugin and returns its MCP CallToolResult JSON,
// as the plugin sent it. Progress and Log are called, in order, on the
// calling goroutine before CallTool returns. Cancelling ctx cancels the call
// and the handler's context in the plugin, and CallTool returns at once.
//
// Calls share one long-lived Calls stream per plugin, opened at the first
// call; a plugin that does not serve Calls (one written against the first
// revision of the contract) gets a CallTool stream per call instead, as do
// calls whose arguments are larger than 256 KiB.
//
// Errors wrap ctx's error when ctx ended, ErrUnknownTool when the plugin has
// no such tool, ErrPluginClosed when the plugin broke the call (it died),
// ErrNoResult when it ended the call without a result and ErrInvalidResult
// when its result is not a JSON object.
func (c *Client) CallTool(ctx context.Context, req *CallRequest) (json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("call %q: %w", req.Tool, err)
	}
	args := req.Arguments
	if len(args) == 0 {
		args = emptyObject
	}
	res, err := c.mux.call(ctx, c, req, args)
	if err != errFallback {
		return res, err
	}
	return c.callStream(ctx, req, args)
}

// callStream runs a call on a CallTool stream of its own.
func (c *Client) callStream(ctx context.Context, req *CallRequest, args json.RawMessage) (json.RawMessage, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the stream
	stream, err := c.rpc.CallTool(ctx)
	if err != nil {
		return nil, c.callError(ctx, req.Tool, err)
	}
	err = stream.Send(&pb.CallToolHostMessage{Msg: &pb.CallToolHostMessage_Start{Start: &pb.CallStart{
		Tool: req.Tool, Arguments: args, Progress: req.Progress != nil,
	}}})
	if err == io.EOF {
		// The stream ended before the start went out; Recv tells why.
		_, err = stream.Recv()
	}
	if err != nil {
		return nil, c.callError(ctx, req.Tool, err)
	}
	for {
		msg, err := stream.Recv()
		if err != nil {
			return nil, c.callError(ctx, req.Tool, err)
		}
		switch m := msg.GetMsg().(type) {
		case *pb.CallToolPluginMessage_Progress:
			if req.Progress != nil {
				req.Progress(m.Progress.GetProgress(), m.Progress.GetTotal(), m.Progress.GetMessage())
			}
		case *pb.CallToolPluginMessage_Log:
			if req.Log != nil {
				req.Log(m.Log.GetLevel(), m.Log.GetLogger(), m.Log.GetData())
			}
		case *pb.CallToolPluginMessage_Result:
			if !isObject(m.Result) {
				return nil, fmt.Errorf("call %q: %w: not a JSON object: %.80q", req.Tool, ErrInvalidResult, m.Result)
			}
			return m.Result, nil
		default:
			// A message of a later contract revision; this host cannot
			// answer it, and the plugin must not depend on an answer.
		}
	}
}

// callError turns a stream error into one of the documented errors.
func (c *Client) callError(ctx context.Context, tool string, err error) error {
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("call %q: %w", tool, ctx.Err())
	case err == io.EOF:
		return fmt.Errorf("call %q: %w", tool, ErrNoResult)
	case status.Code(err) == codes.NotFound:
		return fmt.Errorf("call %q: %w: %s", tool, ErrUnknownTool, status.Convert(err).Message())
	}
	return c.rpcError(ctx, fmt.Sprintf("call %q", tool), err)
}

// rpcError wraps an RPC failure; a broken connection or stream becomes
// ErrPluginClosed.
func (c *Client) rpcError(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", what, ctx.Err())
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.Canceled:
		if c.exited != nil && c.exited.Err() != nil {
			return fmt.Errorf("%s: %w: the plugin process has exited", what, ErrPluginClosed)
		}
		return fmt.Errorf("%s: %w: %v", what, ErrPluginClosed, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// WatchTools calls changed each time the plugin's tool list changes (the
// host then calls ListTools). It blocks until ctx ends, returning ctx's
// error, or until the stream breaks, returning an error wrapping
// ErrPluginClosed. changed runs on WatchTools' goroutine; one call may stand
// for several changes.
func (c *Client) WatchTools(ctx context.Context, changed func()) error {
	stream, err := c.rpc.WatchTools(ctx, &pb.WatchToolsRequest{})
	if err != nil {
		return c.rpcError(ctx, "watch tools", err)
	}
	for {
		if _, err := stream.Recv(); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("watch tools: %w: the plugin ended the watch", ErrPluginClosed)
			}
			return c.rpcError(ctx, "watch tools", err)
		}
		changed()
	}
}
