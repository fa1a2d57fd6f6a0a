package manager

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/plughost/plughost/host/pluginclient"
	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/host/trace"
	"github.com/plughost/plughost/host/trust"
	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/pluginproto"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// A plugin as the catalog sees it: the provider of one set of lists, and
// how its calls reach the plugin's process.

// provider is the tool.Server of a plugin with one set of lists. A new
// provider is published whenever a list changes. Its requests go through
// the supervisor's gate to the plugin's running process (started for them
// when the plugin is lazy and stopped).
type provider struct {
	name string
	g    *gate
	desc pluginclient.Description
	lists
	// epoch is the supervisor's count of the times the process behind the
	// plugin's publications changed under the catalog's feet (a reload, a
	// withdrawal): see Instance.
	epoch int
	// held refuses the requests for the definitions held back, by
	// trust.Definition.Key (vet): those served in their approved form
	// while the plugin lists them changed, and those withheld (new, or
	// changed with no approved form to serve).
	held map[string]string
	// passClaims are the claims of a caller's token its plugin is told
	// (Options.PassClaims).
	passClaims []string
}

var (
	_ tool.Provider   = (*provider)(nil)
	_ tool.Withholder = (*provider)(nil)
	_ tool.Instance   = (*provider)(nil)
	_ tool.Describer  = (*provider)(nil)
)

// instanceID is what Instance returns: comparable, equal for the
// publications that reach one process through the gate.
type instanceID struct {
	g     *gate
	epoch int
}

func (p *provider) Name() string { return p.name }

// Instance says which plugin process the provider's requests reach
// (tool.Instance). Requests go through the plugin's gate to whichever
// process runs, so publications differ only when the process changed
// while the catalog may have told the old one of resource subscriptions:
// after a reload, and after the plugin was withdrawn (a death). A lazy
// plugin is stopped when idle only while it holds no subscription, and a
// list change republishes the same instance.
func (p *provider) Instance() any { return instanceID{p.g, p.epoch} }

func (p *provider) Tools() []tool.Def { return slices.Clone(p.tools) }

// About is the plugin's title and description, from Describe
// (tool.Describer).
func (p *provider) About() tool.About {
	return tool.About{Title: p.desc.About.Title, Description: p.desc.About.Description}
}

// CallTool runs the call on the plugin under its time limit (the sandbox
// policy's timeout, Launch.CallTimeout) and waits for it: StartCall
// waited for (tool.Await). call.Arguments is the catalog's: never empty.
// Errors are tool.ErrRefused once the plugin is stopping,
// tool.ErrTimedOut past the time limit, those of callError, or ctx's.
func (p *provider) CallTool(ctx context.Context, call *tool.Call) (json.RawMessage, error) {
	return tool.Await(ctx, p.StartCall, call)
}

// StartCall is the provider's one call path (tool.Starter): the plugin's
// stream reader delivers the call's notifications and answer. A failure is
// explained on a goroutine of its own, since callError may wait a moment
// for the plugin's exit.
func (p *provider) StartCall(ctx context.Context, call *tool.Call, done func(json.RawMessage, error)) {
	// The plugin call's span: the plugin gets its trace context (request),
	// so that the plugin's own spans are its children.
	ctx, span := trace.Start(ctx, "tools/call", call.Name, oteltrace.SpanKindClient, semconv.McpMethodNameKey.String("tools/call"),
		semconv.GenAIToolName(call.Name), semconv.GenAIOperationNameExecuteTool, trace.ProviderKey.String(p.name))
	done = trace.Ending(span, done)
	if err := p.heldError(trust.KindTool, call.Name); err != nil {
		done(nil, err)
		return
	}
	in := p.g.ready()
	if in == nil {
		// No process runs: wait for one on a goroutine of our own.
		go func() {
			in, err := p.g.acquire(ctx, fmt.Sprintf("tool %q", call.Name))
			if err != nil {
				done(nil, err)
				return
			}
			p.startCall(ctx, in, call, done)
		}()
		return
	}
	p.startCall(ctx, in, call, done)
}

// startCall starts call on in, entered.
func (p *provider) startCall(ctx context.Context, in *instance, call *tool.Call, done func(json.RawMessage, error)) {
	ctx, lim, release := in.limit(ctx)
	untimeWhenTask(call, lim)
	in.pp.StartCall(ctx, p.request(ctx, call), func(res json.RawMessage, err error) {
		if err == nil {
			release()
			in.leave()
			done(res, nil)
			go in.adviseCall(call.Name, res) // not on the plugin's stream reader
			return
		}
		go func() {
			err := in.failure(ctx, call.Name, lim.d, err)
			release()
			in.leave()
			done(nil, err)
		}()
	})
}

var _ tool.Starter = (*provider)(nil)

// untimeWhenTask lifts the call's time limit once it has become a task
// (whoever decided it): the task's own lifetime bounds it then.
func untimeWhenTask(call *tool.Call, lim limit) {
	if call.Tasks && call.BecameTask != nil {
		call.BecameTask(lim.lift)
	}
}

// request is the plugin's view of call. Tasks and Detach pass as they
// are: the catalog has kept Tasks only for a tool that declares task
// support, and the Client calls Detach only for a call with Tasks. The
// trace context is that of ctx's span (the plugin call's) when tracing is
// on, the client's as it came when off.
func (p *provider) request(ctx context.Context, call *tool.Call) *pluginhost.CallRequest {
	traceParent, traceState := trace.Outgoing(ctx, call.TraceParent, call.TraceState)
	req := &pluginhost.CallRequest{
		Tool: call.Name, Arguments: call.Arguments,
		ClientCapabilities: call.ClientCapabilities, Input: input(call.Input),
		Tasks: call.Tasks, Detach: call.Detach,
		TraceParent: traceParent, TraceState: traceState,
		Caller: callerFor(call.Caller, p.passClaims),
	}
	if call.Progress != nil {
		req.Progress = func(progress, total float64, message string) {
			call.Progress(tool.Progress{Progress: progress, Total: total, Message: message})
		}
	}
	if call.Log != nil {
		req.Log = func(level, logger string, data json.RawMessage) {
			call.Log(tool.Log{Level: level, Logger: logger, Data: data})
		}
	}
	return req
}

// callerFor is what a plugin is told of c: all but the claims, and of
// those the ones named in pass.
func callerFor(c *tool.Caller, pass []string) *pluginproto.Caller {
	if c == nil || (c.Subject == "" && c.ClientID == "" && !c.Local) {
		return nil
	}
	out := &pluginproto.Caller{Subject: c.Subject, ClientID: c.ClientID, Issuer: c.Issuer, Scopes: c.Scopes, Local: c.Local}
	claims := map[string]any{}
	for _, name := range pass {
		if v, ok := c.Claims[name]; ok {
			claims[name] = v
		}
	}
	if len(claims) > 0 {
		out.Claims, _ = json.Marshal(claims) // JSON values, decoded from the token: they encode
	}
	return out
}
