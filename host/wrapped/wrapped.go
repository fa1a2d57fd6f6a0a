// Package wrapped serves a declared MCP server (package declared) to the
// host as a plugin. It runs in the plugin process plughost starts for a
// declaration, inside that plugin's sandbox: plughost itself, re-executed
// (the hidden "wrapped" command). It connects to the server with a client
// of our own (package wire) — starting a stdio server as its child, so
// the server inherits the sandbox, or reaching a remote one over
// Streamable HTTP or the old SSE transport — and serves it through the
// contract with a pluginhost.Proxy: the server's tools, resources,
// templates, prompts and completions pass as the server wrote them, and
// its title and description become the plugin's (about.go); calls, reads,
// gets, completions, subscriptions, progress, logs and cancellation pass
// through; the server's list_changed and resources/updated notifications
// reach the host; its questions to the client (sampling, elicitation,
// roots) become the contract's input rounds (exchange.go).
//
// Why a client of our own and not the official go-sdk one (used here until
// issue 34): the wrapper forwards, and the go-sdk client decoded each
// result into its types and encoded it again — about 130 KB of garbage
// and 0.5 ms per call against a Node server that answers a raw client in
// 0.1 ms, so a wrapped server's call cost 18 times the server's own CPU.
// Package wire decodes only JSON-RPC's envelope and passes results on raw;
// bench_test.go measures both clients against the same server (figures in
// docs/operators.md, "Wrapped servers: what a call costs"). What MCP asks
// of a client beyond the wire is here: initialize (pinned to MCP
// 2025-11-25, the revision every server speaks today, whose server→client
// requests arrive as requests), the paginated lists, the notifications.
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

	"github.com/plughost/plughost/host/declared"
	"github.com/plughost/plughost/host/wrapped/wire"
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
	conn   *wire.Conn
	init   initializeResult
	xs     exchanges
	relist chan struct{} // a list_changed came: list again
	expect *Expected
}

// dialer connects to a server with the bridge's options.
type dialer func(ctx context.Context, o *wire.Options) (*wire.Conn, error)

// Start connects to the server, lists what it offers and returns the
// plugin to serve (with pluginproto.Serve) and a channel that receives the
// reason once the server is gone (its process exited, its connection
// failed): the plugin process should then exit, so that the host restarts
// it as it would a crashed plugin.
func Start(ctx context.Context, o *Options) (*pluginproto.Plugin, <-chan error, error) {
	return start(ctx, o, dial(o.Server, o.Token, o.OAuth))
}

// clientCapabilities are what the wrapper asks of its clients on the
// server's behalf: the host passes each question to the client of the
// request it belongs to.
const clientCapabilities = `{"sampling":{},"elicitation":{"form":{},"url":{}},"roots":{}}`

// start is Start over the connection dial makes.
func start(ctx context.Context, o *Options, dial dialer) (*pluginproto.Plugin, <-chan error, error) {
	timeout := o.ConnectTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	b := &bridge{log: o.Logger, relist: make(chan struct{}, 1), expect: o.Expect}
	wo := &wire.Options{Notify: b.notified, Request: b.asked}
	if o.Server.Remote() {
		wo.KeepAlive = 30 * time.Second // a remote server that goes away is noticed, and the plugin restarted
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := dial(cctx, wo)
	if err != nil {
		return nil, nil, connectError(cctx, timeout, err)
	}
	b.conn = conn
	if err := b.initialize(cctx, o); err != nil {
		_ = conn.Close()
		return nil, nil, connectError(cctx, timeout, err)
	}
	name, version := "server", ""
	if info := b.init.ServerInfo; info != nil {
		name, version = info.Name, info.Version
	}
	b.plugin = pluginproto.New(name, version)
	pluginhost.Of(b.plugin).SetProxy(b)
	b.plugin.Offer(offers(b.init.Capabilities))
	b.plugin.SetAbout(about(&b.init))
	b.made.Store(b.plugin)
	if err := b.list(cctx); err != nil {
		_ = conn.Close()
		return nil, nil, err
	}
	if caps := b.init.Capabilities; caps != nil && caps.Logging != nil {
		// The host filters by each client's level: the server sends what
		// any client might want.
		if _, err := conn.Call(cctx, "logging/setLevel", json.RawMessage(`{"level":"debug"}`)); err != nil {
			b.log.Debug("the server refused logging/setLevel", "error", err)
		}
	}
	gone := make(chan error, 1)
	go func() {
		<-conn.Done()
		gone <- conn.Err()
	}()
	go b.relistLoop()
	return b.plugin, gone, nil
}

// initializeResult is what the wrapper reads of the server's answer to
// initialize.
type initializeResult struct {
	ProtocolVersion string              `json:"protocolVersion"`
	Capabilities    *serverCapabilities `json:"capabilities"`
	ServerInfo      *implementation     `json:"serverInfo"`
	Instructions    string              `json:"instructions"`
}

// serverCapabilities are the capabilities the wrapper acts on (present or
// not; the contents matter only for resources).
type serverCapabilities struct {
	Tools       *struct{} `json:"tools"`
	Prompts     *struct{} `json:"prompts"`
	Completions *struct{} `json:"completions"`
	Logging     *struct{} `json:"logging"`
	Resources   *struct {
		Subscribe bool `json:"subscribe"`
	} `json:"resources"`
}

type implementation struct {
	Name        string `json:"name"`
	Title       string `json:"title"`
	Version     string `json:"version"`
	Description string `json:"description"`
}

// protocolVersions are the MCP revisions whose wire the wrapper speaks, a
// server's answer to initialize may name any.
var protocolVersions = map[string]bool{"2025-11-25": true, "2025-06-18": true, "2025-03-26": true, "2024-11-05": true}

// initialize is MCP's handshake: initialize, then notifications/initialized.
func (b *bridge) initialize(ctx context.Context, o *Options) error {
	info, _ := json.Marshal(implementation{Name: o.Name, Version: o.Version})
	params := json.RawMessage(`{"protocolVersion":"` + ProtocolVersion + `","capabilities":` + clientCapabilities + `,"clientInfo":` + string(info) + `}`)
	raw, err := b.conn.Call(ctx, "initialize", params)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, &b.init); err != nil {
		return fmt.Errorf("the server's answer to initialize: %w", err)
	}
	if !protocolVersions[b.init.ProtocolVersion] {
		return fmt.Errorf("the server speaks MCP %q, which plughost does not (it speaks %s)", b.init.ProtocolVersion, ProtocolVersion)
	}
	b.conn.Initialized(b.init.ProtocolVersion)
	return b.conn.Notify(ctx, "notifications/initialized", nil)
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

// call is a request to the server whose result passes on as it is.
func (b *bridge) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	res, err := b.conn.Call(ctx, method, params)
	if err != nil {
		return nil, serverError(err)
	}
	return res, nil
}

// toolCall is a tools/call's params; Arguments pass as the client sent
// them.
type toolCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Meta      map[string]any  `json:"_meta,omitempty"`
}

// CallTool implements pluginhost.Proxy.
func (b *bridge) CallTool(ctx context.Context, call *pluginhost.ProxyCall) (json.RawMessage, error) {
	return b.run(ctx, call.Input, emitters{progress: call.Progress, log: call.Log}, func(ctx context.Context, x *exchange) (json.RawMessage, error) {
		params := toolCall{Name: call.Tool, Arguments: call.Arguments, Meta: traceMeta(call)}
		if call.Progress != nil {
			if params.Meta == nil {
				params.Meta = map[string]any{}
			}
			params.Meta["progressToken"] = x.id
		}
		return b.call(ctx, "tools/call", params)
	})
}

// traceMeta is the _meta that carries call's W3C trace context on to the
// wrapped server (traceparent and tracestate, the keys MCP clients put
// them under), so that the server's spans join the client's trace; nil
// when the call has none.
func traceMeta(call *pluginhost.ProxyCall) map[string]any {
	if call.TraceParent == "" {
		return nil
	}
	m := map[string]any{"traceparent": call.TraceParent}
	if call.TraceState != "" {
		m["tracestate"] = call.TraceState
	}
	return m
}

// ReadResource implements pluginhost.Proxy.
func (b *bridge) ReadResource(ctx context.Context, uri string, _ json.RawMessage, in *pluginhost.Input) (json.RawMessage, error) {
	return b.run(ctx, in, emitters{}, func(ctx context.Context, _ *exchange) (json.RawMessage, error) {
		return b.call(ctx, "resources/read", map[string]string{"uri": uri})
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
		return b.call(ctx, "prompts/get", struct {
			Name      string            `json:"name"`
			Arguments map[string]string `json:"arguments,omitempty"`
		}{name, arguments})
	})
}

// Complete implements pluginhost.Proxy.
func (b *bridge) Complete(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	var params struct {
		Ref      json.RawMessage `json:"ref"`
		Argument json.RawMessage `json:"argument"`
	}
	if err := json.Unmarshal(raw, &params); err != nil || params.Ref == nil || params.Argument == nil {
		return nil, fmt.Errorf("%w: not a CompleteRequest's params (an object with ref and argument): %v", pluginproto.ErrInvalidArguments, err)
	}
	var res json.RawMessage
	var err error
	b.xs.outside(func() { res, err = b.call(ctx, "completion/complete", raw) })
	return res, err
}

// SubscribeResource implements pluginhost.Proxy.
func (b *bridge) SubscribeResource(ctx context.Context, uri string, subscribe bool) error {
	method := "resources/subscribe"
	if !subscribe {
		method = "resources/unsubscribe"
	}
	var err error
	b.xs.outside(func() { _, err = b.call(ctx, method, map[string]string{"uri": uri}) })
	return err
}

// codeResourceNotFound is MCP's error code for an unknown resource.
const codeResourceNotFound = -32002

// serverError is what the host makes of the server's error: its unknown
// resource as such, invalid params as invalid arguments, anything else
// with the server's message; a request that never reached the server
// (HTTP's error, such as an OAuth handler's: a refused grant, a login
// needed) with its cause.
func serverError(err error) error {
	var we *wire.Error
	if !errors.As(err, &we) {
		var ue *url.Error
		if errors.As(err, &ue) {
			return fmt.Errorf("the request to the server failed: %w", ue.Err)
		}
		return err
	}
	switch we.Code {
	case codeResourceNotFound:
		return fmt.Errorf("%w: %s", pluginproto.ErrUnknownResource, we.Message)
	case wire.CodeInvalidParams:
		return fmt.Errorf("%w: %s", pluginproto.ErrInvalidArguments, we.Message)
	}
	return fmt.Errorf("the server answered with error %d: %s", we.Code, we.Message)
}

var _ pluginhost.Proxy = (*bridge)(nil)
