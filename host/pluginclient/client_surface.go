package pluginclient

import (
	"context"
	"encoding/json"
	"fmt"

	"google.golang.org/grpc"

	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/internal/pluginpb"
	"github.com/plughost/plughost/internal/pluginwire"
	"github.com/plughost/plughost/pluginproto"
)

// The host's side of what a plugin of contract 2 offers besides tools:
// resources, resource templates, prompts and completion. Each method works
// only for what the plugin offered in Describe; otherwise it returns an
// error wrapping ErrNotOffered, without an rpc.

// maxListPages is the most pages the host asks for one list.
const maxListPages = 1000

// ListResources returns the plugin's resources, each an MCP Resource object
// as JSON, fetching every page. It is an error, wrapping ErrInvalidResult
// and naming the problem, when an item is not a JSON object, the plugin
// lists more than 1000 pages, or a page repeats an earlier cursor; one
// wrapping ErrTooLarge when the list is over the client's Limits.
func (c *Client) ListResources(ctx context.Context) ([]json.RawMessage, error) {
	return c.list(ctx, "list resources", c.offered().Resources, "resources", c.rpc.ListResources)
}

// ListResourceTemplates returns the plugin's resource templates, each an
// MCP ResourceTemplate object as JSON, as ListResources does.
func (c *Client) ListResourceTemplates(ctx context.Context) ([]json.RawMessage, error) {
	return c.list(ctx, "list resource templates", c.offered().Resources, "resources", c.rpc.ListResourceTemplates)
}

// ListPrompts returns the plugin's prompts, each an MCP Prompt object as
// JSON, as ListResources does.
func (c *Client) ListPrompts(ctx context.Context) ([]json.RawMessage, error) {
	return c.list(ctx, "list prompts", c.offered().Prompts, "prompts", c.rpc.ListPrompts)
}

// list fetches every page of one of the plugin's lists.
func (c *Client) list(ctx context.Context, what string, offered bool, feature string,
	rpc func(context.Context, *pluginpb.ListRequest, ...grpc.CallOption) (*pluginpb.ListResponse, error),
) ([]json.RawMessage, error) {
	if !offered {
		return nil, notOffered(what, feature)
	}
	var items []json.RawMessage
	cursor := ""
	seen := make(map[string]bool)
	size := 0 // bytes of the items so far
	for page := 1; ; page++ {
		resp, err := rpc(ctx, &pluginpb.ListRequest{Cursor: cursor}, grpc.MaxCallRecvMsgSize(c.limits.MaxListSize))
		if err != nil {
			if e := tooLarge(what, "MaxListSize", err); e != nil {
				return nil, e
			}
			return nil, pluginwire.RPCError(ctx, c.exited, what, err)
		}
		if err := c.limits.checkList(what, resp.GetItems()); err != nil {
			return nil, err
		}
		for _, it := range resp.GetItems() {
			size += len(it)
		}
		if n := len(items) + len(resp.GetItems()); n > c.limits.MaxItems || size > c.limits.MaxListSize {
			return nil, fmt.Errorf("%s: %w: %d items, %d bytes by page %d, over MaxItems (%d) or MaxListSize (%d bytes)",
				what, ErrTooLarge, n, size, page, c.limits.MaxItems, c.limits.MaxListSize)
		}
		for i, item := range resp.GetItems() {
			if !pluginwire.IsObject(item) {
				return nil, fmt.Errorf("%s: %w: item %d of page %d is not a JSON object: %.80q", what, ErrInvalidResult, i, page, item)
			}
			items = append(items, item)
		}
		cursor = resp.GetNextCursor()
		switch {
		case cursor == "":
			return items, nil
		case seen[cursor]:
			return nil, fmt.Errorf("%s: %w: page %d repeats the cursor %.80q of an earlier page", what, ErrInvalidResult, page, cursor)
		case page == maxListPages:
			return nil, fmt.Errorf("%s: %w: more than %d pages", what, ErrInvalidResult, maxListPages)
		}
		seen[cursor] = true
	}
}

// ReadResource reads a resource and returns the MCP ReadResourceResult as
// JSON ({"contents": [...]}), checked to be a JSON object. Its errors are
// those of CallTool, but an unknown resource wraps ErrUnknownResource,
// and a plugin's failure is returned with its message.
func (c *Client) ReadResource(ctx context.Context, req *pluginhost.ReadRequest) (json.RawMessage, error) {
	what := fmt.Sprintf("read resource %q", req.URI)
	if !c.offered().Resources {
		return nil, notOffered(what, "resources")
	}
	in, err := inputPB(req.Input)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	msg := &pluginpb.ReadResourceRequest{Uri: req.URI, ClientCapabilities: pluginwire.Capabilities(req.ClientCapabilities), Input: in, Caller: callerPB(req.Caller)}
	if err := pluginwire.CheckSize(what, msg); err != nil {
		return nil, err
	}
	resp, err := c.rpc.ReadResource(ctx, msg, grpc.MaxCallRecvMsgSize(MaxContentsSize))
	if err != nil {
		return nil, pluginwire.UnaryError(ctx, c.exited, what, err, pluginproto.ErrUnknownResource)
	}
	return answer(what, resp.GetResult(), resp.GetInputRequired())
}

// MaxContentsSize bounds the answer of a plugin to ReadResource and
// GetPrompt (16 MiB): a larger one fails with a gRPC ResourceExhausted
// error naming both sizes, and nothing of it is kept.
const MaxContentsSize = 16 << 20

// maxCompletionSize bounds the answer to Complete: 100 values of a few
// KiB each at most.
const maxCompletionSize = 1 << 20

// GetPrompt renders a prompt and returns the MCP GetPromptResult as JSON
// ({"description"?, "messages": [...]}), checked to be a JSON object. Its
// errors are those of ReadResource, but an unknown prompt wraps
// ErrUnknownPrompt, and missing or bad arguments wrap ErrInvalidArguments,
// ending with the plugin's message naming the problem.
func (c *Client) GetPrompt(ctx context.Context, req *pluginhost.PromptRequest) (json.RawMessage, error) {
	what := fmt.Sprintf("get prompt %q", req.Name)
	if !c.offered().Prompts {
		return nil, notOffered(what, "prompts")
	}
	in, err := inputPB(req.Input)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	args := req.Arguments
	if len(args) == 0 {
		args = pluginwire.EmptyObject
	}
	msg := &pluginpb.GetPromptRequest{Name: req.Name, Arguments: args, ClientCapabilities: pluginwire.Capabilities(req.ClientCapabilities), Input: in, Caller: callerPB(req.Caller)}
	if err := pluginwire.CheckSize(what, msg); err != nil {
		return nil, err
	}
	resp, err := c.rpc.GetPrompt(ctx, msg, grpc.MaxCallRecvMsgSize(MaxContentsSize))
	if err != nil {
		return nil, pluginwire.UnaryError(ctx, c.exited, what, err, pluginproto.ErrUnknownPrompt)
	}
	return answer(what, resp.GetResult(), resp.GetInputRequired())
}

// Complete answers a completion/complete: params are the MCP
// CompleteRequest params, with the plugin's own prompt name or URI
// template in ref. It returns the MCP CompleteResult as JSON, checked to
// be a JSON object. A ref naming nothing of the plugin's is an error
// wrapping ErrUnknownReference; params the plugin refuses, one wrapping
// ErrInvalidArguments with its message.
func (c *Client) Complete(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	const what = "complete"
	if !c.offered().Completions {
		return nil, notOffered(what, "completions")
	}
	msg := &pluginpb.CompleteRequest{Params: params}
	if err := pluginwire.CheckSize(what, msg); err != nil {
		return nil, err
	}
	resp, err := c.rpc.Complete(ctx, msg, grpc.MaxCallRecvMsgSize(maxCompletionSize))
	if err != nil {
		return nil, pluginwire.UnaryError(ctx, c.exited, what, err, ErrUnknownReference)
	}
	return answer(what, resp.GetResult(), nil)
}

// SubscribeResource asks the plugin to report changes of the contents of
// the resource at uri in Change.Updated, or, with subscribe false, to stop.
// A host subscribes once per URI, however many of its clients did. An
// unknown resource is an error wrapping ErrUnknownResource.
func (c *Client) SubscribeResource(ctx context.Context, uri string, subscribe bool) error {
	what := fmt.Sprintf("subscribe to resource %q", uri)
	if !subscribe {
		what = fmt.Sprintf("unsubscribe from resource %q", uri)
	}
	if !c.offered().ResourceSubscriptions {
		return notOffered(what, "resource subscriptions")
	}
	_, err := c.rpc.SubscribeResource(ctx, &pluginpb.SubscribeResourceRequest{Uri: uri, Unsubscribe: !subscribe})
	if err != nil {
		return pluginwire.UnaryError(ctx, c.exited, what, err, pluginproto.ErrUnknownResource)
	}
	return nil
}

func notOffered(what, feature string) error {
	return fmt.Errorf("%s: %w: the plugin did not offer %s in Describe", what, ErrNotOffered, feature)
}

// answer is a unary rpc's answer: its result, checked to be a JSON object,
// or its input_required as an *InputRequiredError.
func answer(what string, result []byte, ir *pluginpb.InputRequired) (json.RawMessage, error) {
	if ir != nil {
		return nil, inputRequired(what, ir)
	}
	return pluginwire.Result(what, result)
}
