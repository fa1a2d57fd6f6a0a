package pluginproto

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/plughost/plughost/internal/plugincontract"
	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/internal/pluginwire"
)

// Plugin is a named set of tools, resources, resource templates and
// prompts, and their handlers. It is safe for concurrent use: they may be
// added and removed while it serves, and the host is told each time.
type Plugin struct {
	name, version string
	logger        hclog.Logger

	mu        sync.RWMutex
	tools     registry[*entry]
	resources registry[*resourceEntry]
	templates registry[*templateEntry]
	prompts   registry[*promptEntry]
	offers    Offers                 // declared with Offer
	about     About                  // set with SetAbout
	requests  Requests               // set with Request
	gen       [numKinds]uint64       // bumped on every change of a list
	listed    [numKinds]uint64       // gen when the host last listed it
	changed   chan struct{}          // closed and replaced on every change and update
	subs      map[string]uint64      // URIs the host subscribed to → the number of their last update (0: none)
	updates   uint64                 // updates of subscribed resources so far
	sent      uint64                 // the last update a watch sent
	proxy     pluginhost.Proxy       // serves every request when set (pluginhost.Plugin.SetProxy)
	hooks     map[HookPoint]HookFunc // AddHook's, by point
	// hostMaxMessage is the largest call message the host receives
	// (DescribeRequest.max_message_size; 0: not said).
	hostMaxMessage atomic.Int64
	lane           laneState
	host           hostInfo // what the host said in Describe (Plugin.Host)
}

// kind is one of the lists a plugin reports changes of.
type kind int

const (
	kindTools kind = iota
	kindResources
	kindPrompts
	numKinds
)

// registry is a list of things named by a key (a tool's name, a
// resource's URI, ...), in the order their keys were first added.
type registry[T any] struct {
	byKey map[string]T
	order []string
}

// put adds or replaces the thing named key, which keeps its place.
func (r *registry[T]) put(key string, v T) {
	if r.byKey == nil {
		r.byKey = make(map[string]T)
	}
	if _, ok := r.byKey[key]; !ok {
		r.order = append(r.order, key)
	}
	r.byKey[key] = v
}

// remove removes the thing named key and reports whether there was one.
func (r *registry[T]) remove(key string) bool {
	if _, ok := r.byKey[key]; !ok {
		return false
	}
	delete(r.byKey, key)
	r.order = slices.DeleteFunc(r.order, func(k string) bool { return k == key })
	return true
}

func (r *registry[T]) get(key string) (T, bool) {
	v, ok := r.byKey[key]
	return v, ok
}

// all returns the things in order.
func (r *registry[T]) all() []T {
	out := make([]T, len(r.order))
	for i, k := range r.order {
		out[i] = r.byKey[k]
	}
	return out
}

type entry struct {
	json    []byte // the MCP Tool object
	handler Handler
	tasks   bool // the tool declares TaskSupport: its calls may go on as tasks
}

// New returns an empty plugin. name and version identify it in the host's
// logs (Describe); the host names the plugin's tools after its file, not name.
func New(name, version string) *Plugin {
	return &Plugin{
		name:    name,
		version: version,
		logger: hclog.New(&hclog.LoggerOptions{
			Name:       name,
			Level:      hclog.Debug,
			Output:     os.Stderr,
			JSONFormat: true, // the host's go-plugin client parses JSON lines into its own log
		}),
		changed: make(chan struct{}),
		subs:    make(map[string]uint64),
	}
}

// AddTool adds t, served by h, or replaces the tool of the same name (keeping
// its place in the list). If the plugin is serving, the host is told that the
// tool list changed. AddTool panics when t is invalid (a programming error):
// a name that does not match ^[a-zA-Z0-9_.-]{1,128}$, a schema that is not a
// JSON object of "type" "object", a TaskSupport that is none of the
// TaskSupport constants, or a nil handler.
func (p *Plugin) AddTool(t Tool, h Handler) {
	b, err := t.encode()
	if err != nil {
		panic("pluginproto: AddTool: " + err.Error())
	}
	if h == nil {
		panic(fmt.Sprintf("pluginproto: AddTool: tool %q has a nil handler", t.Name))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tools.put(t.Name, &entry{json: b, handler: h, tasks: t.TaskSupport != TaskForbidden})
	p.changedLocked(kindTools)
}

// RemoveTool removes the named tool, if present, and tells the host. Calls
// already running finish normally.
func (p *Plugin) RemoveTool(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tools.remove(name) {
		p.changedLocked(kindTools)
	}
}

// changedLocked records a change of list k, for the host's watch.
func (p *Plugin) changedLocked(k kind) {
	p.gen[k]++
	p.signalLocked()
}

// signalLocked wakes the watches.
func (p *Plugin) signalLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// Tools returns the MCP Tool objects the plugin offers, in the order they
// were added: what the host receives from ListTools.
func (p *Plugin) Tools() []json.RawMessage {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return jsonOf(p.tools.all(), func(e *entry) json.RawMessage { return e.json })
}

// jsonOf returns the JSON of each of things.
func jsonOf[T any](things []T, of func(T) json.RawMessage) []json.RawMessage {
	out := make([]json.RawMessage, len(things))
	for i, t := range things {
		out[i] = of(t)
	}
	return out
}

// Offer declares what the plugin offers besides tools, in addition to what
// it has registered when the host asks (when it starts the plugin): a
// plugin with a resource or template offers resources (and subscriptions
// to them), one with a prompt offers prompts, one with a completer
// (Prompt.Complete, ResourceTemplate.Complete) offers completions. The
// host calls nothing the plugin did not offer then, so a plugin that adds
// its first resource, prompt or completer only later, while it serves,
// must declare it with Offer before Serve. Offer adds to what was
// declared before; ResourceSubscriptions implies Resources.
func (p *Plugin) Offer(o Offers) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.offers.Resources = p.offers.Resources || o.Resources || o.ResourceSubscriptions
	p.offers.ResourceSubscriptions = p.offers.ResourceSubscriptions || o.ResourceSubscriptions
	p.offers.Prompts = p.offers.Prompts || o.Prompts
	p.offers.Completions = p.offers.Completions || o.Completions
}

// Offers returns what the plugin offers now besides tools: what Describe
// tells the host.
func (p *Plugin) Offers() Offers {
	p.mu.RLock()
	defer p.mu.RUnlock()
	o := p.offers
	if p.proxy != nil {
		return o // what the proxy declared with Offer
	}
	if len(p.resources.order) > 0 || len(p.templates.order) > 0 {
		// The SDK serves subscriptions to every resource: one whose
		// contents never change is simply never reported.
		o.Resources, o.ResourceSubscriptions = true, true
	}
	o.Prompts = o.Prompts || len(p.prompts.order) > 0
	for _, t := range p.templates.all() {
		o.Completions = o.Completions || t.complete != nil
	}
	for _, pr := range p.prompts.all() {
		o.Completions = o.Completions || pr.complete != nil
	}
	o.Hooks = p.hookPointsLocked()
	return o
}

// Logger returns the plugin's logger. It writes JSON lines to stderr, which
// the host reads into its own log (the operator's, not the client's: use
// Request.Log for the client).
func (p *Plugin) Logger() hclog.Logger { return p.logger }

// CallTool runs a tool in-process exactly as a call from the host would run
// it in the plugin (argument passing, panics, notifications, result
// encoding, requests to the client, tasks) and returns its MCP
// CallToolResult JSON. It is the plugin's view: it does not apply the
// checks the host makes around the call (the definition's schemas compile,
// the arguments conform to the inputSchema, the result to the
// outputSchema), so a call it runs may be one no client can make, and a
// result it returns one the host refuses. Tool authors' tests should call
// tools through plugintest.CallTool (package pluginproto/plugintest),
// which applies them. The handler sees req.ClientCapabilities (nil: none)
// and req.Input. When it asks the client for something and
// req.AnswerInput is set, CallTool answers with it and runs the handler
// again, round after round, as a host does; without AnswerInput, the error
// is the *InputRequiredError. With req.Tasks, a tool that declares
// TaskSupport may go on as a task: its RunAsTask calls req.Detach, once
// over all the rounds, as a host learns of it once. When the handler
// returns the error of a request the client did not declare the
// capability for, the error is the *CapabilityRequiredError a host would
// get. Other errors wrap (package internal/pluginwire) ErrUnknownTool,
// ErrPluginFailed when the handler panicked (its text ends with the panic,
// as a host's Client reports it), or ErrInvalidResult when the
// handler's requests break the contract's rules.
func (h *hostPlugin) CallTool(ctx context.Context, req *pluginhost.CallRequest) (json.RawMessage, error) {
	p := (*Plugin)(h)
	cb := &callbacks{req: req}
	return rounds(fmt.Sprintf("call %q", req.Tool), req.AnswerInput, req.Input, func(in *pluginhost.Input) (json.RawMessage, error) {
		res, err := p.call(ctx, req.Tool, req.Arguments, req.Progress != nil, cb, invocation{caps: req.ClientCapabilities, input: in, tasks: req.Tasks,
			traceParent: req.TraceParent, traceState: req.TraceState, caller: req.Caller})
		if pe, ok := err.(*panicError); ok {
			return nil, pluginwire.PluginFailed(req.Tool, pe.msg)
		}
		return res, err
	})
}

// invocation is what a handler may ask of the client: its capabilities,
// on a retry its answers, and whether it accepts a task.
type invocation struct {
	caps  json.RawMessage
	input *pluginhost.Input
	tasks bool
	// traceParent and traceState are the call's trace context (Request's).
	traceParent, traceState string
	caller                  *Caller // Request's
}

// asker returns the handler's asker; nil (a client that declared nothing)
// when there is nothing to ask with.
func (inv invocation) asker() *asker {
	if inv.input == nil && len(inv.caps) <= len("{}") {
		return nil
	}
	return &asker{caps: inv.caps, input: inv.input}
}

// callbacks delivers an in-process call's notifications and its Detach to
// its CallRequest, over all the call's rounds.
type callbacks struct {
	req      *pluginhost.CallRequest
	detached bool // Detach was delivered, in this round or an earlier one
}

func (c *callbacks) progress(progress, total float64, message string) error {
	c.req.Progress(progress, total, message)
	return nil
}

func (c *callbacks) log(level string, data json.RawMessage) error {
	if c.req.Log != nil {
		c.req.Log(level, "", data)
	}
	return nil
}

func (c *callbacks) detach() error {
	if c.req.Detach != nil && !c.detached {
		c.detached = true
		c.req.Detach()
	}
	return nil
}

// call runs the named tool and returns its result as JSON, a *panicError
// when the handler panicked (which wins over everything else: the plugin
// failed), an *InputRequiredError when the handler asked the client for
// something it has no answer to yet, or a *CapabilityRequiredError when
// the handler returned the error of a request the client did not declare
// the capability for (which wins over input required: the call cannot end
// well for this client). Notifications and Detach go to e until the
// handler returns.
func (p *Plugin) call(ctx context.Context, name string, args json.RawMessage, wantProgress bool, e emitter, inv invocation) (json.RawMessage, error) {
	p.mu.RLock()
	ent, ok := p.tools.get(name)
	px := p.proxy
	p.mu.RUnlock()
	if px != nil {
		return p.proxyCall(ctx, px, name, args, wantProgress, e, inv)
	}
	if !ok {
		return nil, fmt.Errorf("%w %q", pluginwire.ErrUnknownTool, name)
	}
	s := &sink{progress: wantProgress, emit: e}
	req := &Request{Tool: name, Arguments: args, TraceParent: inv.traceParent, TraceState: inv.traceState, Caller: inv.caller,
		sink: s, ask: inv.asker(), tasks: inv.tasks && ent.tasks}
	res, failed := p.invoke(ctx, ent.handler, req)
	s.close()
	if err := req.ask.finish(); err != nil {
		ir := (*InputRequiredError)(nil)
		switch {
		case isPanic(failed): // the plugin failed: that wins
		case !errors.As(err, &ir):
			res, failed = ErrorResult("tool %q: %v", name, err), nil // a misused key
		case failed == nil:
			return nil, ir // whatever the handler returned
		}
	}
	if failed != nil {
		return nil, failed
	}
	b, err := res.encode()
	if err != nil {
		p.logger.Error("tool returned an invalid result", "tool", name, "error", err)
		b, err = ErrorResult("tool %q returned an invalid result: %v", name, err).encode()
		if err != nil {
			panic(err) // cannot happen: a text result always encodes
		}
	}
	return b, nil
}

// invoke runs h, turning an error or a nil result into an isError result;
// but an error that wraps the error of a request the client did not
// declare the capability for is returned as a *CapabilityRequiredError,
// and a panic as a *panicError (logged with its stack), with a nil result.
func (p *Plugin) invoke(ctx context.Context, h Handler, req *Request) (res *Result, failed error) {
	defer func() {
		if v := recover(); v != nil {
			p.logger.Error("tool panicked", "tool", req.Tool, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			res, failed = nil, &panicError{msg: fmt.Sprintf("tool %q panicked: %v", req.Tool, v)}
		}
	}()
	res, err := h(ctx, req)
	switch {
	case err != nil:
		if cr := capabilityRequired(err); cr != nil {
			return nil, cr
		}
		return ErrorResult("%s", err.Error()), nil
	case res == nil:
		return ErrorResult("tool %q returned neither a result nor an error", req.Tool), nil
	}
	return res, nil
}

// panicError is a handler's panic: the plugin failed running the call. The
// plugin answers the host a CallError INTERNAL carrying msg.
type panicError struct{ msg string }

func (e *panicError) Error() string { return e.msg }

// isPanic reports whether invoke's failure is a panic.
func isPanic(failed error) bool {
	_, ok := failed.(*panicError)
	return ok
}

// PluginSet returns the go-plugin plugin set that serves p, speaking the
// newest contract version. Serve uses it; tests can pass it to go-plugin's
// test helpers.
func (h *hostPlugin) PluginSet() plugin.PluginSet {
	p := (*Plugin)(h)
	return plugin.PluginSet{plugincontract.PluginName: &grpcPlugin{p: p}}
}

// Serve serves p to the host over gRPC and returns when the host stops the
// plugin. Call it from main, after adding the tools, and print nothing to
// stdout before it: stdout carries the go-plugin handshake. Once serving,
// stray writes to os.Stdout and os.Stderr are captured by go-plugin and never
// reach the protocol. Run by hand (without a host), it explains that the
// binary is a plugin and exits with status 1.
func Serve(p *Plugin) {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  plugincontract.Handshake,
		VersionedPlugins: map[int]plugin.PluginSet{plugincontract.Version: (*hostPlugin)(p).PluginSet()},
		GRPCServer:       plugin.DefaultGRPCServer,
		Logger:           p.logger,
	})
}
