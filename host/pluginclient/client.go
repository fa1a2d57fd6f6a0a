package pluginclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/internal/pluginpb"
	"github.com/plughost/plughost/internal/pluginwire"
	"github.com/plughost/plughost/pluginproto"
)

// Client is the host's view of one running plugin, dispensed by go-plugin
// from PluginSets. It speaks the contract version negotiated in the
// plugin's handshake, and is safe for concurrent use.
type Client struct {
	rpc      pluginpb.PluginClient
	exited   context.Context                    // cancelled by go-plugin when the plugin process exits
	contract uint32                             // the negotiated contract version
	calls    callPath                           // how calls reach the plugin, chosen by contract
	offers   atomic.Pointer[pluginproto.Offers] // what Describe said; nil before
	limits   Limits                             // defaults filled in
	hooks    *hookMux                           // questions to the plugin's hooks (Hook)
	// laneOffer is the frame lane OfferLane gave, until Describe offers
	// it (lane.go).
	laneOffer atomic.Pointer[laneConn]
}

// callPath runs calls in a plugin: the CallsV2 stream of contract 2 (mux),
// or a CallTool stream per call for a plugin of contract 1 (contract1).
type callPath interface {
	start(ctx context.Context, req *pluginhost.CallRequest, args json.RawMessage, in *pluginpb.Input, done func(json.RawMessage, error), watch bool) pendingCall
}

var (
	_ callPath = (*mux)(nil)
	_ callPath = contract1{}
)

// newClient returns the Client of a plugin whose handshake named contract,
// bounded by limits (defaults filled in).
func newClient(exited context.Context, rpc pluginpb.PluginClient, contract uint32, limits Limits) *Client {
	recv := grpc.MaxCallRecvMsgSize(limits.MaxResultSize)
	c := &Client{rpc: rpc, exited: exited, contract: contract, limits: limits,
		hooks: &hookMux{rpc: rpc, exited: exited, recv: recv, max: limits.MaxHookQuestions}}
	if contract == 1 {
		c.calls = contract1{rpc: rpc, exited: exited, recv: recv}
	} else {
		c.calls = &mux{rpc: rpc, exited: exited, recv: recv}
	}
	return c
}

// Description is what a plugin says about itself.
type Description struct {
	// Name and Version are the plugin's own, as given to New.
	Name, Version string
	// ContractVersion is the contract version the plugin speaks.
	ContractVersion uint32
	// Offers is what the plugin offers besides tools: zero for a plugin of
	// contract 1, or one that offers only tools.
	Offers pluginproto.Offers
	// About is the plugin's title and description (Plugin.SetAbout),
	// within MaxTitle and MaxDescription.
	About pluginproto.About
	// Cut says that the plugin sent a longer title or description than
	// the bounds, and About holds what fit.
	Cut bool
	// Requests is what the plugin asks to be granted (Plugin.Request),
	// at most MaxRequests entries of each kind, each at most
	// MaxRequestSize bytes (the rest is dropped).
	Requests pluginproto.Requests
}

// Describe asks the plugin for its name, version, contract version,
// offers, title and description, and tells it the host's version. The Client remembers the
// offers: its methods for resources, prompts and completions work only
// after Describe, for what was offered. When the plugin names another
// contract version than its handshake did, it returns the description and
// an error wrapping ErrContractVersion.
func (c *Client) Describe(ctx context.Context, hostVersion string) (Description, error) {
	offered, settle := c.takeLane()
	resp, err := c.rpc.Describe(ctx, &pluginpb.DescribeRequest{HostContractVersion: c.contract, HostVersion: hostVersion,
		MaxMessageSize: uint32(c.limits.MaxResultSize), LaneOffered: offered})
	if err != nil {
		settle(false)
		return Description{}, pluginwire.RPCError(ctx, c.exited, "describe", err)
	}
	settle(resp.GetLane() && resp.GetContractVersion() == c.contract)
	d := Description{Name: resp.GetName(), Version: resp.GetVersion(), ContractVersion: resp.GetContractVersion()}
	sent := pluginproto.About{Title: resp.GetTitle(), Description: resp.GetDescription()}
	d.About = Bound(sent)
	d.Cut = d.About != sent
	if r := resp.GetRequests(); r != nil {
		d.Requests = pluginproto.Requests{Read: bounded(r.GetRead()), Write: bounded(r.GetWrite()), Net: bounded(r.GetNet()), Env: bounded(r.GetEnv())}
	}
	if d.ContractVersion != c.contract {
		return d, fmt.Errorf("%w: plugin %q speaks contract version %d, but its handshake named %d", ErrContractVersion, d.Name, d.ContractVersion, c.contract)
	}
	if o := resp.GetOffers(); o != nil && c.contract >= 2 {
		d.Offers = pluginproto.Offers{
			Resources:             o.GetResources() || o.GetResourceSubscriptions(),
			ResourceSubscriptions: o.GetResourceSubscriptions(),
			Prompts:               o.GetPrompts(),
			Completions:           o.GetCompletions(),
			Hooks:                 hookPoints(o.GetHooks()),
		}
	}
	c.offers.Store(&d.Offers)
	return d, nil
}

// ListTools returns the plugin's tools, each an MCP Tool object as JSON.
// An entry that is not a JSON object is an error naming it; a list over
// the client's Limits (items, bytes per definition, bytes in all) is an
// error wrapping ErrTooLarge naming the limit.
func (c *Client) ListTools(ctx context.Context) ([]json.RawMessage, error) {
	resp, err := c.rpc.ListTools(ctx, &pluginpb.ListToolsRequest{}, grpc.MaxCallRecvMsgSize(c.limits.MaxListSize))
	if err != nil {
		if e := tooLarge("list tools", "MaxListSize", err); e != nil {
			return nil, e
		}
		return nil, pluginwire.RPCError(ctx, c.exited, "list tools", err)
	}
	if err := c.limits.checkList("list tools", resp.GetTools()); err != nil {
		return nil, err
	}
	tools := make([]json.RawMessage, len(resp.GetTools()))
	for i, t := range resp.GetTools() {
		if !pluginwire.IsObject(t) {
			return nil, fmt.Errorf("list tools: tool %d is not a JSON object: %.80q", i, t)
		}
		tools[i] = t
	}
	return tools, nil
}

// arguments is what a call sends: req.Arguments, or {} when it has none.
func arguments(req *pluginhost.CallRequest) json.RawMessage {
	if len(req.Arguments) == 0 {
		return pluginwire.EmptyObject
	}
	return req.Arguments
}

// CallTool runs a tool in the plugin and returns its MCP CallToolResult JSON,
// as the plugin sent it. Progress, Log and Detach are called, in order, on
// the calling goroutine before CallTool returns. Cancelling ctx cancels the call
// and the handler's context in the plugin, and CallTool returns at once.
// CallTool keeps no reference to req or its Arguments once it returned.
//
// With a plugin of contract 2, calls share the plugin's one CallsV2 stream,
// opened at the first call; with a plugin of contract 1, each call has a
// CallTool stream of its own.
//
// When the handler needs the client's input first, the error is an
// *InputRequiredError (checked: 1 to 16 requests the client can answer, a
// state of at most 64 KiB): get the answers and call again with Input set.
// When it cannot run because the client did not declare a capability it
// needs, the error is a *CapabilityRequiredError naming them (a JSON
// object, checked). Other errors wrap ctx's error when ctx ended,
// ErrUnknownTool when the plugin has no such tool, ErrPluginFailed when
// the plugin failed running it (its handler panicked), ErrPluginClosed
// when the plugin broke the call (it died), ErrNoResult when it ended the
// call without a result and ErrInvalidResult when its result is not a
// JSON object, or its input_required or required capabilities break the
// rules.
//
// CallTool is StartCall, waiting for its done (and watching ctx itself:
// a watch through context.AfterFunc would have every call in flight take
// the lock of ctx's parent).
func (c *Client) CallTool(ctx context.Context, req *pluginhost.CallRequest) (json.RawMessage, error) {
	w := waiters.Get().(*waiter)
	call := c.start(ctx, req, w.done, false)
	var r callAnswer
	select {
	case r = <-w.answer:
	case <-ctx.Done():
		call.abandon()
		r = <-w.answer
	}
	waiters.Put(w)
	return r.res, r.err
}

// waiter is what CallTool waits on: done hands StartCall's answer over.
// Recycled through waiters, so that a call allocates no closure.
type waiter struct {
	answer chan callAnswer // capacity 1
	done   func(json.RawMessage, error)
}

type callAnswer struct {
	res json.RawMessage
	err error
}

var waiters = sync.Pool{New: func() any {
	w := &waiter{answer: make(chan callAnswer, 1)}
	w.done = func(res json.RawMessage, err error) { w.answer <- callAnswer{res, err} }
	return w
}}

// StartCall is the call of CallTool without waiting: it sends the call and
// returns, and done gets what CallTool returns, exactly once. Progress,
// Log and Detach run in order as the plugin's frames arrive, on a
// goroutine of the call's own (with a plugin of contract 2, while they
// are busy, the call's progress and log frames beyond 1000 queued, or
// 4 MiB, are dropped); an answer that finds no callback running reaches
// done on the plugin's stream reader goroutine, so done must not block
// for long: every call of the plugin waits behind it. When ctx ends
// first, done comes at once on the goroutine that ended it, or after the
// callback running then; nothing of the call runs after done. With a
// plugin of contract 1, a goroutine runs the call. done may run before
// StartCall returns. req must stay untouched until done.
func (c *Client) StartCall(ctx context.Context, req *pluginhost.CallRequest, done func(json.RawMessage, error)) {
	c.start(ctx, req, done, true)
}

// start is StartCall. With watch, the end of ctx gives the call up;
// without, that is the caller's to do, with the pending call's abandon.
func (c *Client) start(ctx context.Context, req *pluginhost.CallRequest, done func(json.RawMessage, error), watch bool) pendingCall {
	if err := ctx.Err(); err != nil {
		done(nil, fmt.Errorf("call %q: %w", req.Tool, err))
		return pendingCall{}
	}
	in, err := callInput(req)
	if err != nil {
		done(nil, err)
		return pendingCall{}
	}
	return c.calls.start(ctx, req, arguments(req), in, done, watch)
}

// callInput is req's Input for the wire, checked; and the check that its
// Start, which carries the Input, the client's capabilities and at most
// 64 KiB of arguments, stays within what a plugin accepts in one message.
func callInput(req *pluginhost.CallRequest) (*pluginpb.Input, error) {
	if req.Input == nil && len(req.ClientCapabilities) < pluginwire.MaxPluginMessage/2 {
		return nil, nil // the common case: nothing to check
	}
	in, err := inputPB(req.Input)
	if err != nil {
		return nil, fmt.Errorf("call %q: %w", req.Tool, err)
	}
	return in, pluginwire.CheckSize(fmt.Sprintf("call %q", req.Tool), &pluginpb.HostFrame{CallId: 1 << 63, Msg: &pluginpb.HostFrame_Start{Start: &pluginpb.CallStart{
		Tool: req.Tool, Arguments: make([]byte, min(len(req.Arguments), argsChunk)), Progress: true, MoreArguments: true,
		ClientCapabilities: req.ClientCapabilities, Input: in,
	}}})
}

// callError turns a call's failure into one of the documented errors.
func callError(ctx, exited context.Context, tool string, err error) error {
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("call %q: %w", tool, ctx.Err())
	case err == io.EOF:
		return fmt.Errorf("call %q: %w", tool, ErrNoResult)
	case status.Code(err) == codes.NotFound:
		return fmt.Errorf("call %q: %w: %s", tool, ErrUnknownTool, status.Convert(err).Message())
	}
	if e := tooLarge(fmt.Sprintf("call %q", tool), "MaxResultSize", err); e != nil {
		return e
	}
	return pluginwire.RPCError(ctx, exited, fmt.Sprintf("call %q", tool), err)
}

// Change is one burst of changes a plugin reported: which of its lists
// changed (the host then lists them again), and which subscribed resources
// have new contents.
type Change struct {
	// Tools, Resources (resources or templates) and Prompts: the list
	// changed.
	Tools, Resources, Prompts bool
	// Updated are the URIs of subscribed resources whose contents changed.
	Updated []string
}

// Watch calls changed each time the plugin reports a change. It blocks
// until ctx ends, returning ctx's error, or until the stream breaks,
// returning an error wrapping ErrPluginClosed. changed runs on Watch's
// goroutine; one call may stand for several changes. A plugin of contract
// 1 can only say that its tools changed. Watch passes on only what the
// plugin offered in Describe (a change of resources from a plugin that
// offered none is dropped), so call Describe first.
func (c *Client) Watch(ctx context.Context, changed func(Change)) error {
	stream, err := c.rpc.WatchTools(ctx, &pluginpb.WatchToolsRequest{})
	if err != nil {
		return pluginwire.RPCError(ctx, c.exited, "watch", err)
	}
	for {
		msg, err := stream.Recv()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("watch: %w: the plugin ended the watch", ErrPluginClosed)
			}
			return pluginwire.RPCError(ctx, c.exited, "watch", err)
		}
		if ch, ok := c.change(msg); ok {
			changed(ch)
		}
	}
}

// change is what msg says, reduced to what the plugin offered: a message
// with nothing set means its tools changed (all contract 1 can say).
func (c *Client) change(msg *pluginpb.ToolsChanged) (Change, bool) {
	if !msg.GetTools() && !msg.GetResources() && !msg.GetPrompts() && len(msg.GetUpdated()) == 0 {
		return Change{Tools: true}, true
	}
	o := c.offered()
	ch := Change{Tools: msg.GetTools(), Resources: msg.GetResources() && o.Resources, Prompts: msg.GetPrompts() && o.Prompts}
	if o.ResourceSubscriptions {
		for _, uri := range msg.GetUpdated() {
			if uri != "" {
				ch.Updated = append(ch.Updated, uri)
			}
		}
	}
	return ch, ch.Tools || ch.Resources || ch.Prompts || len(ch.Updated) > 0
}

// offered is what the plugin offered in Describe (zero before).
func (c *Client) offered() pluginproto.Offers {
	if o := c.offers.Load(); o != nil {
		return *o
	}
	return pluginproto.Offers{}
}

// Equal reports whether d and o say the same. (Description holds
// Requests' lists, so == does not compare it.)
func (d Description) Equal(o Description) bool {
	return d.Name == o.Name && d.Version == o.Version && d.ContractVersion == o.ContractVersion && d.Offers.Equal(o.Offers) &&
		d.About == o.About && d.Cut == o.Cut && d.Requests.Equal(o.Requests)
}

// The host keeps at most MaxRequests entries of each kind of a plugin's
// Requests, each of at most MaxRequestSize bytes.
const (
	MaxRequests    = 64
	MaxRequestSize = 1024
)

// bounded is what the host keeps of one list of a plugin's requests.
func bounded(list []string) []string {
	var out []string
	for _, s := range list[:min(len(list), MaxRequests)] {
		if len(s) <= MaxRequestSize && s != "" {
			out = append(out, s)
		}
	}
	return out
}
