// Package wrapped serves a declared MCP server (package declared) to the
// host as a plugin. It runs in the plugin process plughost starts for a
// declaration, inside that plugin's sandbox: plughost itself, re-executed
// (the hidden "wrapped" command). It connects to the server with the
// official go-sdk client — starting a stdio server as its child, so the
// server inherits the sandbox, or reaching a remote one over HTTP — and
// serves it through the contract with a pluginhost.Proxy: the server's
// tools, resources, templates, prompts and completions pass as the server
// wrote them, and its title and description become the plugin's
// (about.go); calls, reads, gets, completions, subscriptions, progress,
// logs and cancellation pass through; the server's list_changed and
// resources/updated notifications reach the host; its questions to the
// client (sampling, elicitation, roots) become the contract's input rounds
// (exchange.go).
//
// Why the go-sdk client and not one of our own: it is the official SDK,
// kept up with the specification, and covers stdio, Streamable HTTP, the
// old SSE transport, keep-alive and pagination. Measured (bench_test.go):
// it costs about 0.5 ms and 130 KB of garbage per call against a Node
// server that answers a raw client in about 0.1 ms; the bridge adds
// nothing measurable to it. For a model's tool calls that is noise; a
// stdio client of our own is the step to take if a wrapped server ever
// needs it. The wrapped connection is pinned to MCP 2025-11-25, the
// revision every server speaks today, whose server→client requests arrive
// as requests the go-sdk client hands us.
package wrapped

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plughost/plughost/host/declared"
	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/pluginproto"
)

// ProtocolVersion is the MCP revision spoken to a wrapped server.
const ProtocolVersion = "2025-11-25"

// Options says which server to wrap.
type Options struct {
	Server *declared.Server
	// Token is a remote server's bearer token ("" for none).
	Token string
	// OAuth authorizes the requests to a remote server instead (package
	// oauthclient); nil for none.
	OAuth auth.OAuthHandler
	// Name and Version name plughost to the server (clientInfo).
	Name, Version string
	// Logger gets what cannot reach a client: the server's log messages
	// that belong to no single request, and the bridge's own trouble.
	Logger hclog.Logger
	// ConnectTimeout bounds the connection and the first lists (default
	// 30 s). The host bounds the whole start of the plugin too; plughost
	// sets this a little past the host's limit, so that the host's, which
	// names its setting, is the one that fires.
	ConnectTimeout time.Duration
	// Expect, when not nil, is what the server says it offers (a
	// bundle's manifest): each listing is compared with it.
	Expect *Expected
}

// bridge is one connection to a wrapped server, and the Proxy serving it.
type bridge struct {
	log    hclog.Logger
	plugin *pluginproto.Plugin
	// made is plugin, once made: the server's notifications may come
	// while the wrapper connects, before it is.
	made   atomic.Pointer[pluginproto.Plugin]
	cs     *mcp.ClientSession
	xs     exchanges
	relist chan struct{} // a list_changed came: list again
	expect *Expected
}

// Start connects to the server, lists what it offers and returns the
// plugin to serve (with pluginproto.Serve) and a channel that receives the
// reason once the server is gone (its process exited, its connection
// failed): the plugin process should then exit, so that the host restarts
// it as it would a crashed plugin.
func Start(ctx context.Context, o *Options) (*pluginproto.Plugin, <-chan error, error) {
	return start(ctx, o, transport(o.Server, o.Token, o.OAuth))
}

// start is Start over the transport t.
func start(ctx context.Context, o *Options, t mcp.Transport) (*pluginproto.Plugin, <-chan error, error) {
	timeout := o.ConnectTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	b := &bridge{log: o.Logger, relist: make(chan struct{}, 1), expect: o.Expect}
	copts := &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{
			Sampling:    &mcp.SamplingCapabilities{},
			Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
			RootsV2:     &mcp.RootCapabilities{},
		},
		ToolListChangedHandler:      func(context.Context, *mcp.ToolListChangedRequest) { b.changed() },
		PromptListChangedHandler:    func(context.Context, *mcp.PromptListChangedRequest) { b.changed() },
		ResourceListChangedHandler:  func(context.Context, *mcp.ResourceListChangedRequest) { b.changed() },
		ResourceUpdatedHandler:      b.updated,
		LoggingMessageHandler:       b.logMessage,
		ProgressNotificationHandler: b.progress,
	}
	if o.Server.Remote() {
		copts.KeepAlive = 30 * time.Second // a remote server that goes away is noticed, and the plugin restarted
	}
	client := mcp.NewClient(&mcp.Implementation{Name: o.Name, Version: o.Version}, copts)
	client.AddReceivingMiddleware(b.intercept)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cs, err := client.Connect(cctx, t, &mcp.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
	if err != nil {
		return nil, nil, connectError(t, cctx, timeout, err)
	}
	b.cs = cs
	caps := cs.InitializeResult().Capabilities
	info := cs.InitializeResult().ServerInfo
	name, version := "server", ""
	if info != nil {
		name, version = info.Name, info.Version
	}
	b.plugin = pluginproto.New(name, version)
	pluginhost.Of(b.plugin).SetProxy(b)
	b.plugin.Offer(offers(caps))
	b.plugin.SetAbout(about(cs.InitializeResult()))
	b.made.Store(b.plugin)
	if err := b.list(cctx); err != nil {
		_ = cs.Close()
		return nil, nil, err
	}
	if caps != nil && caps.Logging != nil {
		// The host filters by each client's level: the server sends what
		// any client might want.
		if err := cs.SetLoggingLevel(cctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
			b.log.Debug("the server refused logging/setLevel", "error", err)
		}
	}
	gone := make(chan error, 1)
	go func() {
		err := cs.Wait()
		if err == nil {
			err = errors.New("the server closed the connection")
		}
		gone <- err
	}()
	go b.relistLoop()
	return b.plugin, gone, nil
}

// offers is what the server's capabilities say it offers besides tools.
func offers(c *mcp.ServerCapabilities) pluginproto.Offers {
	if c == nil {
		return pluginproto.Offers{}
	}
	o := pluginproto.Offers{Prompts: c.Prompts != nil, Completions: c.Completions != nil}
	if c.Resources != nil {
		o.Resources, o.ResourceSubscriptions = true, c.Resources.Subscribe
	}
	return o
}

// list lists everything the server offers and hands it to the plugin.
func (b *bridge) list(ctx context.Context) (err error) {
	b.xs.outside(func() { err = b.lists(ctx) })
	return err
}

func (b *bridge) lists(ctx context.Context) error {
	var l pluginhost.ProxyLists
	var err error
	caps := b.cs.InitializeResult().Capabilities
	if caps == nil || caps.Tools != nil {
		if l.Tools, err = all(b.cs.Tools(ctx, nil)); err != nil {
			return fmt.Errorf("list tools: %w", err)
		}
	}
	if caps != nil && caps.Resources != nil {
		if l.Resources, err = all(b.cs.Resources(ctx, nil)); err != nil {
			return fmt.Errorf("list resources: %w", err)
		}
		if l.Templates, err = all(b.cs.ResourceTemplates(ctx, nil)); err != nil {
			return fmt.Errorf("list resource templates: %w", err)
		}
	}
	if caps != nil && caps.Prompts != nil {
		if l.Prompts, err = all(b.cs.Prompts(ctx, nil)); err != nil {
			return fmt.Errorf("list prompts: %w", err)
		}
	}
	if b.expect != nil {
		if diff := b.expect.compare(l); diff != "" && b.expect.Hold {
			b.log.Error("the server lists other tools or prompts than its manifest declares: held (trust mode pinned or signed)", "difference", diff)
			return fmt.Errorf("the server lists other tools or prompts than its manifest declares (%s): held in this trust mode", diff)
		} else if diff != "" {
			b.log.Warn("the server lists other tools or prompts than its manifest declares", "difference", diff)
		}
	}
	if err := pluginhost.Of(b.plugin).SetProxyLists(l); err != nil {
		b.log.Warn("the server listed definitions the host cannot serve", "error", err)
	}
	return nil
}

// maxListed bounds each list a wrapped server may give (tools, resources,
// templates, prompts): a server that pages forever fails its listing
// instead of growing the wrapper without end.
const maxListed = 10000

// all collects a paginated list as JSON objects, at most maxListed.
func all[T any](seq func(func(T, error) bool)) ([][]byte, error) {
	var out [][]byte
	for item, err := range seq {
		if err != nil {
			return nil, err
		}
		if len(out) == maxListed {
			return nil, fmt.Errorf("the server lists over %d items", maxListed)
		}
		b, err := json.Marshal(item)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// changed notes a list_changed; relistLoop lists again, one burst of
// changes at a time.
func (b *bridge) changed() {
	select {
	case b.relist <- struct{}{}:
	default:
	}
}

func (b *bridge) relistLoop() {
	for range b.relist {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := b.list(ctx); err != nil {
			b.log.Warn("listing again after the server's list_changed failed; the lists stay as they were", "error", err)
		}
		cancel()
	}
}

// updated passes a resources/updated on. Before the plugin is made, the
// host cannot have subscribed to anything: it is dropped.
func (b *bridge) updated(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	if p := b.made.Load(); p != nil && req.Params != nil {
		p.ResourceUpdated(req.Params.URI)
	}
}

// logMessage passes the server's log message to the client of the one
// request in flight; with none or several, it cannot tell whose it is,
// and logs it for the operator.
func (b *bridge) logMessage(_ context.Context, req *mcp.LoggingMessageRequest) {
	p := req.Params
	data, err := json.Marshal(p.Data)
	if err != nil {
		data, _ = json.Marshal(fmt.Sprint(p.Data))
	}
	if emit, ok := b.xs.emitters(""); ok && emit.log != nil {
		emit.log(string(p.Level), data)
		return
	}
	b.log.Info("server log message", "level", string(p.Level), "logger", p.Logger, "data", string(data))
}

// progress passes a progress notification to the request whose token it
// names (the exchange's id).
func (b *bridge) progress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	p := req.Params
	id, _ := p.ProgressToken.(string)
	if emit, ok := b.xs.emitters(id); ok && id != "" && emit.progress != nil {
		emit.progress(p.Progress, p.Total, p.Message)
	}
}

// intercept answers the server's questions to the client (sampling,
// elicitation, roots) through the request they belong to, instead of the
// go-sdk client's own handlers.
func (b *bridge) intercept(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		var res mcp.Result
		switch method {
		case "sampling/createMessage":
			res = new(mcp.CreateMessageWithToolsResult)
		case "elicitation/create":
			res = new(mcp.ElicitResult)
		case "roots/list":
			res = new(mcp.ListRootsResult)
		default:
			return next(ctx, method, req)
		}
		params, err := requestParams(method, req)
		if err != nil {
			return nil, err
		}
		answer, err := b.xs.ask(ctx, method, params)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(answer, res); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("the client's answer to %s: %v", method, err)}
		}
		return res, nil
	}
}

// requestParams is the JSON of a question's params. The go-sdk client
// decodes them into its own types; encoded again, an elicitation without a
// mode (form, before 2025-11-25) gets an empty one, which is dropped.
func requestParams(method string, req mcp.Request) (json.RawMessage, error) {
	params, err := json.Marshal(req.GetParams())
	if err != nil || string(params) == "null" {
		return nil, err // roots/list has none
	}
	if method != "elicitation/create" {
		return params, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(params, &m); err != nil {
		return nil, err
	}
	if string(m["mode"]) == `""` {
		delete(m, "mode")
	}
	return json.Marshal(m)
}

// run starts (first round) or resumes (a retry) an exchange and awaits it.
func (b *bridge) run(ctx context.Context, in *pluginhost.Input, emit emitters, do func(context.Context, *exchange) (json.RawMessage, error)) (json.RawMessage, error) {
	var x *exchange
	var err error
	if in != nil && in.State != "" {
		x, err = b.xs.resume(in)
	} else {
		x, err = b.xs.start(do)
	}
	if err != nil {
		return nil, err
	}
	return b.xs.await(ctx, x, emit)
}

// CallTool implements pluginhost.Proxy.
func (b *bridge) CallTool(ctx context.Context, call *pluginhost.ProxyCall) (json.RawMessage, error) {
	return b.run(ctx, call.Input, emitters{progress: call.Progress, log: call.Log}, func(ctx context.Context, x *exchange) (json.RawMessage, error) {
		params := &mcp.CallToolParams{Name: call.Tool, Arguments: call.Arguments, Meta: traceMeta(call)}
		if call.Progress != nil {
			params.SetProgressToken(x.id)
		}
		res, err := b.cs.CallTool(ctx, params)
		if err != nil {
			return nil, serverError(err)
		}
		return json.Marshal(res)
	})
}

// traceMeta is the _meta that carries call's W3C trace context on to the
// wrapped server (traceparent and tracestate, the keys MCP clients put
// them under), so that the server's spans join the client's trace; nil
// when the call has none.
func traceMeta(call *pluginhost.ProxyCall) mcp.Meta {
	if call.TraceParent == "" {
		return nil
	}
	m := mcp.Meta{"traceparent": call.TraceParent}
	if call.TraceState != "" {
		m["tracestate"] = call.TraceState
	}
	return m
}

// ReadResource implements pluginhost.Proxy.
func (b *bridge) ReadResource(ctx context.Context, uri string, _ json.RawMessage, in *pluginhost.Input) (json.RawMessage, error) {
	return b.run(ctx, in, emitters{}, func(ctx context.Context, _ *exchange) (json.RawMessage, error) {
		res, err := b.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			return nil, serverError(err)
		}
		return json.Marshal(res)
	})
}

// GetPrompt implements pluginhost.Proxy.
func (b *bridge) GetPrompt(ctx context.Context, name string, args, _ json.RawMessage, in *pluginhost.Input) (json.RawMessage, error) {
	var arguments map[string]string
	if len(args) > 0 {
		if err := json.Unmarshal(args, &arguments); err != nil {
			return nil, fmt.Errorf("%w: the arguments are not an object of strings: %v", pluginproto.ErrInvalidArguments, err)
		}
	}
	return b.run(ctx, in, emitters{}, func(ctx context.Context, _ *exchange) (json.RawMessage, error) {
		res, err := b.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: arguments})
		if err != nil {
			return nil, serverError(err)
		}
		return json.Marshal(res)
	})
}

// Complete implements pluginhost.Proxy.
func (b *bridge) Complete(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	var params mcp.CompleteParams
	if err := json.Unmarshal(raw, &params); err != nil {
		return nil, fmt.Errorf("%w: not a CompleteRequest's params: %v", pluginproto.ErrInvalidArguments, err)
	}
	var res *mcp.CompleteResult
	var err error
	b.xs.outside(func() { res, err = b.cs.Complete(ctx, &params) })
	if err != nil {
		return nil, serverError(err)
	}
	return json.Marshal(res)
}

// SubscribeResource implements pluginhost.Proxy.
func (b *bridge) SubscribeResource(ctx context.Context, uri string, subscribe bool) error {
	var err error
	b.xs.outside(func() {
		if subscribe {
			err = b.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
		} else {
			err = b.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
		}
	})
	if err != nil {
		return serverError(err)
	}
	return nil
}

// codeResourceNotFound is MCP's error code for an unknown resource.
const codeResourceNotFound = -32002

// codeRejected is the go-sdk's code for a request its transport could not
// deliver (jsonrpc2.ErrRejected, internal to the SDK): the server never
// answered, and the cause is the HTTP request's error, such as an OAuth
// handler's (a refused grant, a login needed).
const codeRejected = -32005

// serverError is what the host makes of the server's error: its unknown
// resource as such, invalid params as invalid arguments, anything else
// with the server's message.
func serverError(err error) error {
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		return err
	}
	switch we.Code {
	case codeRejected:
		var ue *url.Error
		if errors.As(err, &ue) {
			return fmt.Errorf("the request to the server failed: %w", ue.Err)
		}
		return err
	case codeResourceNotFound:
		return fmt.Errorf("%w: %s", pluginproto.ErrUnknownResource, we.Message)
	case jsonrpc.CodeInvalidParams:
		return fmt.Errorf("%w: %s", pluginproto.ErrInvalidArguments, we.Message)
	}
	return fmt.Errorf("the server answered with error %d: %s", we.Code, we.Message)
}

var _ pluginhost.Proxy = (*bridge)(nil)
