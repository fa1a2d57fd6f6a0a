package pluginproto

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// A Proxy serves the contract on behalf of another MCP server: an adapter
// (plughost's own wrapper of stdio and remote MCP servers is one) whose
// definitions and answers are that server's MCP JSON, passed through.
// A plugin with a Proxy (Plugin.SetProxy) serves the lists given to
// Plugin.SetProxyLists and hands every call, read, prompt, completion and
// subscription to the Proxy; nothing added with AddTool, AddResource, ...
// is served. The SDK's own checks of arguments and results do not apply:
// the host's do.
//
// Requests to the client are the Proxy's to manage, in the contract's
// rounds: a method may return an *InputRequiredError (its requests, and a
// state of the Proxy's own), and the host retries the same request with
// the client's answers and that state (ProxyCall.Input, the in argument).
type Proxy interface {
	// CallTool runs one tools/call and returns the MCP CallToolResult. An
	// error other than an *InputRequiredError is answered as an isError
	// result carrying its text.
	CallTool(ctx context.Context, call *ProxyCall) (json.RawMessage, error)
	// ReadResource returns the MCP ReadResourceResult of uri, an error
	// wrapping ErrUnknownResource, an *InputRequiredError, or another
	// error (its text reaches the client).
	ReadResource(ctx context.Context, uri string, caps json.RawMessage, in *Input) (json.RawMessage, error)
	// GetPrompt returns the MCP GetPromptResult, or an error as
	// ReadResource does (ErrUnknownPrompt, ErrInvalidArguments, ...).
	GetPrompt(ctx context.Context, name string, args, caps json.RawMessage, in *Input) (json.RawMessage, error)
	// Complete answers completion/complete: params are the MCP
	// CompleteRequest params, the result the CompleteResult.
	Complete(ctx context.Context, params json.RawMessage) (json.RawMessage, error)
	// SubscribeResource starts (subscribe) or ends the server's reports of
	// changes to uri; they reach the host through Plugin.ResourceUpdated.
	// An unknown uri is an error wrapping ErrUnknownResource.
	SubscribeResource(ctx context.Context, uri string, subscribe bool) error
}

// ProxyCall is one tools/call handed to a Proxy.
type ProxyCall struct {
	Tool      string
	Arguments json.RawMessage
	// ClientCapabilities is the client's capabilities object (nil: none).
	ClientCapabilities json.RawMessage
	// Input is set on the retry of a call that answered an
	// *InputRequiredError.
	Input *Input
	// TraceParent and TraceState are the call's W3C trace context (see
	// Request.TraceParent); "" for none. A proxy hands them on to the
	// server it proxies (in the _meta of its request).
	TraceParent, TraceState string
	// Progress reports progress to the client; nil when the client did not
	// ask for progress. Log sends a log message (an MCP level and any JSON
	// value) to the client. Both do nothing once CallTool has returned.
	Progress func(progress, total float64, message string)
	Log      func(level string, data json.RawMessage)
}

// SetProxy makes px serve the plugin's requests; offers is what it offers
// besides tools (Describe's answer, fixed once the host has started the
// plugin). Call it before Serve.
func (p *Plugin) SetProxy(px Proxy, offers Offers) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.proxy = px
	p.offers = offers
}

// ProxyLists is what a proxied server offers: its MCP Tool, Resource,
// ResourceTemplate and Prompt objects.
type ProxyLists struct {
	Tools, Resources, Templates, Prompts [][]byte
}

// SetProxyLists replaces what the plugin lists with l, and tells the host
// which lists changed (those that differ from what was set before). An
// object without its key (a tool's or a prompt's name, a resource's uri, a
// template's uriTemplate), or with one already listed, is skipped and
// returned in the error, which names each; the rest is set.
func (p *Plugin) SetProxyLists(l ProxyLists) error {
	var errs []error
	tools := proxyRegistry(l.Tools, "tool", "name", &errs, func(b []byte) *entry { return &entry{json: b} })
	resources := proxyRegistry(l.Resources, "resource", "uri", &errs, func(b []byte) *resourceEntry { return &resourceEntry{json: b} })
	templates := proxyRegistry(l.Templates, "resource template", "uriTemplate", &errs, func(b []byte) *templateEntry { return &templateEntry{json: b} })
	prompts := proxyRegistry(l.Prompts, "prompt", "name", &errs, func(b []byte) *promptEntry { return &promptEntry{json: b} })
	p.mu.Lock()
	defer p.mu.Unlock()
	if !sameJSON(p.tools, tools, func(e *entry) []byte { return e.json }) {
		p.tools = tools
		p.changedLocked(kindTools)
	}
	if !sameJSON(p.resources, resources, func(e *resourceEntry) []byte { return e.json }) ||
		!sameJSON(p.templates, templates, func(e *templateEntry) []byte { return e.json }) {
		p.resources, p.templates = resources, templates
		p.changedLocked(kindResources)
	}
	if !sameJSON(p.prompts, prompts, func(e *promptEntry) []byte { return e.json }) {
		p.prompts = prompts
		p.changedLocked(kindPrompts)
	}
	return errors.Join(errs...)
}

// proxyRegistry keys each object of items by its member key.
func proxyRegistry[T any](items [][]byte, what, key string, errs *[]error, mk func([]byte) T) registry[T] {
	var r registry[T]
	for _, b := range items {
		var obj map[string]json.RawMessage
		var k string
		if json.Unmarshal(b, &obj) != nil || json.Unmarshal(obj[key], &k) != nil || k == "" {
			*errs = append(*errs, fmt.Errorf("a %s without a %q: %.120s", what, key, b))
			continue
		}
		if _, dup := r.get(k); dup {
			*errs = append(*errs, fmt.Errorf("%s %q listed twice: the first is kept", what, k))
			continue
		}
		r.put(k, mk(b))
	}
	return r
}

func sameJSON[T any](a, b registry[T], of func(T) []byte) bool {
	if len(a.order) != len(b.order) {
		return false
	}
	for i, k := range a.order {
		if b.order[i] != k || string(of(a.byKey[k])) != string(of(b.byKey[k])) {
			return false
		}
	}
	return true
}

func (p *Plugin) getProxy() Proxy {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.proxy
}

// proxyCall hands a call to the proxy; see Plugin.call for what it returns.
func (p *Plugin) proxyCall(ctx context.Context, px Proxy, name string, args json.RawMessage, wantProgress bool, e emitter, inv invocation) (json.RawMessage, error) {
	s := &sink{progress: wantProgress, emit: e}
	defer s.close()
	req := &Request{Tool: name, sink: s}
	call := &ProxyCall{Tool: name, Arguments: args, ClientCapabilities: inv.caps, Input: inv.input,
		TraceParent: inv.traceParent, TraceState: inv.traceState,
		Log: func(level string, data json.RawMessage) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if !s.closed {
				_ = s.emit.log(level, data)
			}
		}}
	if wantProgress {
		call.Progress = req.Progress
	}
	var res json.RawMessage
	err := p.guard(fmt.Sprintf("tool %q", name), func() (err error) {
		res, err = px.CallTool(ctx, call)
		return err
	})
	if ir := (*InputRequiredError)(nil); errors.As(err, &ir) {
		return nil, ir
	}
	if err != nil {
		res, err = ErrorResult("%s", err.Error()).encode()
	}
	return res, err
}

// proxyStatus is the gRPC status of a proxy's error, an
// *InputRequiredError as it is.
func proxyStatus(err error) error {
	if ir := (*InputRequiredError)(nil); err == nil || errors.As(err, &ir) {
		return err
	}
	return handlerStatus(err)
}

func (p *Plugin) proxySubscribe(ctx context.Context, px Proxy, uri string, subscribe bool) error {
	err := p.guard("subscription to "+uri, func() error { return px.SubscribeResource(ctx, uri, subscribe) })
	if err != nil {
		return handlerStatus(err) // an unknown resource as such, as ReadResource's
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !subscribe {
		delete(p.subs, uri)
	} else if _, ok := p.subs[uri]; !ok {
		p.subs[uri] = 0
	}
	return nil
}
