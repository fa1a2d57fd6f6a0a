package pluginproto

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime/debug"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
)

// Plugin is a named set of tools and their handlers. It is safe for
// concurrent use: tools may be added and removed while it serves, and the
// host is told each time.
type Plugin struct {
	name, version string
	logger        hclog.Logger

	mu      sync.RWMutex
	tools   map[string]*entry
	order   []string      // tool names in the order they were first added
	gen     uint64        // bumped on every change of the tool list
	listed  uint64        // gen when the host last listed the tools
	changed chan struct{} // closed and replaced on every change
}

type entry struct {
	json    []byte // the MCP Tool object
	handler Handler
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
		tools:   make(map[string]*entry),
		changed: make(chan struct{}),
	}
}

// AddTool adds t, served by h, or replaces the tool of the same name (keeping
// its place in the list). If the plugin is serving, the host is told that the
// tool list changed. AddTool panics when t is invalid (a programming error):
// a name that does not match ^[a-zA-Z0-9_.-]{1,128}$, a schema that is not a
// JSON object of "type" "object", or a nil handler.
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
	if _, ok := p.tools[t.Name]; !ok {
		p.order = append(p.order, t.Name)
	}
	p.tools[t.Name] = &entry{json: b, handler: h}
	p.changedLocked()
}

// RemoveTool removes the named tool, if present, and tells the host. Calls
// already running finish normally.
func (p *Plugin) RemoveTool(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.tools[name]; !ok {
		return
	}
	delete(p.tools, name)
	for i, n := range p.order {
		if n == name {
			p.order = append(p.order[:i], p.order[i+1:]...)
			break
		}
	}
	p.changedLocked()
}

func (p *Plugin) changedLocked() {
	p.gen++
	close(p.changed)
	p.changed = make(chan struct{})
}

// Tools returns the MCP Tool objects the plugin offers, in the order they
// were added: what the host receives from ListTools.
func (p *Plugin) Tools() []json.RawMessage {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.toolsLocked()
}

func (p *Plugin) toolsLocked() []json.RawMessage {
	out := make([]json.RawMessage, len(p.order))
	for i, n := range p.order {
		out[i] = p.tools[n].json
	}
	return out
}

// Logger returns the plugin's logger. It writes JSON lines to stderr, which
// the host reads into its own log (the operator's, not the client's: use
// Request.Log for the client).
func (p *Plugin) Logger() hclog.Logger { return p.logger }

// CallTool runs a tool in-process exactly as a call from the host would run
// it (argument passing, panics, notifications, result encoding) and returns
// its MCP CallToolResult JSON. It is meant for tool authors' tests. The only
// error is ErrUnknownTool (wrapped).
func (p *Plugin) CallTool(ctx context.Context, req *CallRequest) (json.RawMessage, error) {
	return p.call(ctx, req.Tool, req.Arguments, req.Progress != nil, callbacks{req})
}

// callbacks delivers an in-process call's notifications to its CallRequest.
type callbacks struct{ req *CallRequest }

func (c callbacks) progress(progress, total float64, message string) error {
	c.req.Progress(progress, total, message)
	return nil
}

func (c callbacks) log(level string, data json.RawMessage) error {
	if c.req.Log != nil {
		c.req.Log(level, "", data)
	}
	return nil
}

// call runs the named tool and returns its result as JSON. Notifications go
// to e until the handler returns.
func (p *Plugin) call(ctx context.Context, name string, args json.RawMessage, wantProgress bool, e emitter) (json.RawMessage, error) {
	p.mu.RLock()
	ent := p.tools[name]
	p.mu.RUnlock()
	if ent == nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownTool, name)
	}
	s := &sink{progress: wantProgress, emit: e}
	res := p.invoke(ctx, ent.handler, &Request{Tool: name, Arguments: args, sink: s})
	s.close()
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

// invoke runs h, turning an error, a panic or a nil result into an isError
// result.
func (p *Plugin) invoke(ctx context.Context, h Handler, req *Request) (res *Result) {
	defer func() {
		if v := recover(); v != nil {
			p.logger.Error("tool panicked", "tool", req.Tool, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			res = ErrorResult("tool %q panicked: %v", req.Tool, v)
		}
	}()
	res, err := h(ctx, req)
	switch {
	case err != nil:
		return ErrorResult("%s", err.Error())
	case res == nil:
		return ErrorResult("tool %q returned neither a result nor an error", req.Tool)
	}
	return res
}

// PluginSet returns the go-plugin plugin set that serves p under PluginName.
// Serve uses it; tests can pass it to go-plugin's test helpers.
func (p *Plugin) PluginSet() plugin.PluginSet {
	return plugin.PluginSet{PluginName: &grpcPlugin{p: p}}
}

// Serve serves p to the host over gRPC and returns when the host stops the
// plugin. Call it from main, after adding the tools, and print nothing to
// stdout before it: stdout carries the go-plugin handshake. Once serving,
// stray writes to os.Stdout and os.Stderr are captured by go-plugin and never
// reach the protocol. Run by hand (without a host), it explains that the
// binary is a plugin and exits with status 1.
func Serve(p *Plugin) {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         p.PluginSet(),
		GRPCServer:      plugin.DefaultGRPCServer,
		Logger:          p.logger,
	})
}
