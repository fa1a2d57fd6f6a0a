package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/plughost/plughost/host/argcheck"
	"github.com/plughost/plughost/host/naming"
	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/host/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// toolSet is the snapshot's view of the exposed tools.
type toolSet struct {
	list    list              // by exposed name
	routes  map[string]*route // by exposed name
	entries []Entry           // sorted by exposed name
	names   names
	// byProvider holds each provider's items of list, sorted by exposed
	// name; a provider that exposes no tool is absent (FollowTools).
	byProvider map[string][]json.RawMessage
}

// route is where a call to one exposed name goes.
type route struct {
	p        tool.Provider
	provider string
	tool     string
	check    *argcheck.Tool  // the tool's arguments and results
	item     *tool.Item      // as guards and hooks see it
	def      json.RawMessage // the definition as listed, for hooks
}

// acceptTools checks p's tool definitions, reusing the compiled schema of
// a tool old offered with the same JSON.
func (p *provider) acceptTools(defs []tool.Def, old *provider) {
	known := map[string]*def{}
	if old != nil {
		for _, d := range old.defs {
			known[d.name] = d
		}
	}
	a := p.accepting(KindTool, "name")
	for _, d := range defs {
		var err error
		pd := known[d.Name]
		if pd == nil || !bytes.Equal(pd.orig, d.JSON) {
			pd, err = parseDef(d.Name, d.JSON)
		}
		if a.take(d.Name, err) {
			p.defs = append(p.defs, pd)
		}
	}
}

// buildTools names every provider's tools (nameAll), keeping the names
// prev gave.
func buildTools(providers map[string]*provider, prev []*naming.Name) toolSet {
	items, ns := nameAll(providers, prev, func(p *provider) []*def { return p.defs }, func(d *def) string { return d.name })
	s := toolSet{
		list:    newList(len(items)),
		routes:  make(map[string]*route, len(items)),
		entries: make([]Entry, 0, len(items)),
		names:   ns,

		byProvider: map[string][]json.RawMessage{},
	}
	for _, it := range items {
		n := it.n
		b := it.v.encode(n.Exposed)
		item := &tool.Item{Kind: tool.ItemTool, Name: n.Own, Exposed: n.Exposed, Provider: n.Provider, Annotations: it.v.annotations}
		s.list.add(n.Exposed, b, item)
		s.byProvider[n.Provider] = append(s.byProvider[n.Provider], b)
		s.routes[n.Exposed] = &route{p: it.p.p, provider: n.Provider, tool: n.Own, check: it.v.check, item: item, def: b}
		s.entries = append(s.entries, Entry{Provider: n.Provider, Tool: n.Own, ExposedName: n.Exposed, Description: it.v.desc})
	}
	return s
}

// ListTools returns one page of the exposed tools, sorted by exposed name:
// the MCP Tool objects as their providers wrote them, with "name" rewritten
// to the exposed name. The slice is shared and must not be modified; it is
// never nil. nextCursor is empty on the last page.
//
// A cursor is the last name of the previous page, so it stays valid when
// tools come and go between pages: the next page starts after that name.
// A cursor this catalog did not issue for tools/list gives an error
// wrapping tool.ErrInvalidCursor.
func (c *Catalog) ListTools(cursor string) (tools []json.RawMessage, nextCursor string, err error) {
	s := c.snap.Load()
	return s.tools.list.page(toolsList, cursor, c.pageSize)
}

// CallTool validates call.Arguments against the tool's inputSchema, hands
// the call to the tool's provider under the provider's own tool name, and
// checks the result against the tool's outputSchema. call.Name is the
// exposed name. It is the one place, after the protocol layer, where
// absent arguments get their default: nil, empty or JSON null arguments
// are {}, so the provider always gets a JSON object. Arguments and results
// are checked by package argcheck, as the SDK's test helper (plugintest)
// checks them.
//
// A result of a tool with an outputSchema must carry structuredContent
// that conforms to it, unless it is an error (isError: true, exempt: a
// failure has no structured output). One that does not (none, or one
// that breaks the schema) never reaches the client: CallTool returns in
// its place an isError result whose text names each violation
// ("structuredContent/count: must be integer, got string"), and logs it at
// WARN for the tool's author, naming provider and tool.
//
// Errors, for tool.Outcome to map:
//   - an unknown name wraps tool.ErrUnknownTool;
//   - a call without call.Tasks of a tool whose definition declares
//     execution.taskSupport "required" is a *tool.CapabilityRequired
//     naming the tasks extension (argcheck.TasksCapability); the
//     provider is not called. For a tool that declares no task support
//     (or "forbidden"), call.Tasks is cleared: the provider gets Tasks
//     only when the call may go on as a task;
//   - arguments that are not a JSON object or break the schema wrap
//     tool.ErrBadArguments, and the text is argcheck's message naming
//     every violation; the provider is not called;
//   - a retry (call.Input not nil) whose tool another provider than the
//     one that asked for the input (call.Input.Provider) serves now, or
//     none does, wraps tool.ErrGone, naming both; no provider is called
//     (the client's answers and the state are the asking provider's
//     alone);
//   - a provider's *tool.InputRequired is returned as a copy naming the
//     provider (its Provider field), for the retry to carry back;
//   - the operator's hooks (Options.Hooks, hooked.go) refusing, or
//     rewriting the arguments or the result so that they break the
//     tool's schemas, wrap tool.ErrRefused, naming the hook; the
//     provider is not called (before_call), or its result is dropped
//     (after_call);
//   - a provider's other error that wraps one of tool's sentinels
//     (tool.Typed) names its cause and is returned as it is; any other
//     is wrapped naming tool and provider ("tool "x" of provider "p":
//     …"). A cancelled ctx shows as the provider's error wrapping ctx's.
//
// No lock is held while the provider runs. CallTool is StartCall waited
// for (tool.Await), for the callers that need to wait (`plughost call`).
func (c *Catalog) CallTool(ctx context.Context, call *tool.Call) (json.RawMessage, error) {
	return tool.Await(ctx, c.StartCall, call)
}

// StartCall is the catalog's one call path: it routes call, starts it on
// its provider and returns; done gets what CallTool returns. A
// tool.Starter's answer comes from the provider's goroutine (see
// tool.Starter), a call refused here at once; for any other provider a
// goroutine runs its CallTool.
func (c *Catalog) StartCall(ctx context.Context, call *tool.Call, done func(json.RawMessage, error)) {
	if call == nil {
		done(nil, errors.New("catalog: nil call"))
		return
	}
	ctx, span := trace.Start(ctx, "route", call.Name, oteltrace.SpanKindInternal, semconv.GenAIToolName(call.Name))
	done = trace.Ending(span, done)
	r, fwd, err := c.route(call)
	if err != nil {
		done(nil, err)
		return
	}
	span.SetAttributes(trace.ProviderKey.String(r.provider))
	exposed := call.Name
	before := c.hooks.question(tool.BeforeCall, call.Caller, r.item, r.def)
	if before != nil {
		if before.Arguments = fwd.Arguments; !c.hooks.selects(before) {
			before = nil
		}
	}
	// ask runs the before_call hooks, if any select the call, on the
	// goroutine that calls it; false when they refused (done has the
	// refusal).
	ask := func() bool {
		if before == nil {
			return true
		}
		args, err := c.hooks.beforeCall(ctx, before, r, exposed)
		if err != nil {
			done(nil, err)
			return false
		}
		fwd.Arguments = args
		return true
	}
	st, ok := r.p.(tool.Starter)
	if !ok {
		go func() {
			if ask() {
				res, err := r.p.CallTool(ctx, &fwd)
				done(c.finish(ctx, r, call.Caller, exposed, fwd.Arguments, res, err))
			}
		}()
		return
	}
	start := func() {
		st.StartCall(ctx, &fwd, func(res json.RawMessage, err error) {
			if err != nil || !c.hooks.afterSelects(call.Caller, r, fwd.Arguments) {
				done(c.answer(r, exposed, res, err))
				return
			}
			go func() { // off the provider's goroutine (a plugin's stream reader), which must not wait for a hook
				done(c.finish(ctx, r, call.Caller, exposed, fwd.Arguments, res, nil))
			}()
		})
	}
	if before == nil {
		start()
		return
	}
	go func() { // off the starting goroutine (a session's read loop), which must not wait for a hook
		if ask() {
			start()
		}
	}()
}

// finish is what a call of r, exposed under that name, with args,
// returns for its provider's answer: answer's, and a result as the
// after_call hooks leave it.
func (c *Catalog) finish(ctx context.Context, r *route, caller *tool.Caller, exposed string, args, res json.RawMessage, err error) (json.RawMessage, error) {
	res, err = c.answer(r, exposed, res, err)
	if err != nil {
		return res, err
	}
	q := c.hooks.question(tool.AfterCall, caller, r.item, r.def)
	if q == nil {
		return res, nil
	}
	q.Arguments, q.Result = args, res
	return c.hooks.afterCall(ctx, q, r, exposed)
}

// answer is what a call of r, exposed under that name, returns for its
// provider's answer: a failure named (r.failure), or the result checked
// against the tool's outputSchema (argcheck.Tool.CheckResult), an isError
// result in its place when it breaks it.
func (c *Catalog) answer(r *route, exposed string, res json.RawMessage, err error) (json.RawMessage, error) {
	if err != nil {
		return res, r.failure(err)
	}
	if msg := r.check.CheckResult(exposed, res); msg != "" {
		c.log.Warn("tool result breaks the tool's outputSchema; the client gets an isError result instead",
			"provider", r.provider, "tool", r.tool, "error", msg)
		return tool.ErrorResult(msg), nil
	}
	return res, nil
}

// withheld asks the providers that withhold tools (tool.Withholder)
// whether name, which no provider lists, is one of theirs: as their own
// name, or as it would be exposed prefixed with theirs ("provider__tool").
// It returns the first reason given; "" when none withholds it.
func (c *Catalog) withheld(name string) string {
	for pname, p := range c.snap.Load().providers {
		w, ok := p.p.(tool.Withholder)
		if !ok {
			continue
		}
		if why := w.WithheldTool(name); why != "" {
			return why
		}
		if own, ok := strings.CutPrefix(name, pname+"__"); ok {
			if why := w.WithheldTool(own); why != "" {
				return why
			}
		}
	}
	return ""
}

// route finds the provider of call.Name and prepares the call it gets:
// the provider's own tool name, Tasks kept only for a tool that declares
// task support (a tool that runs only as a task refuses a call without
// it), arguments defaulted and checked.
func (c *Catalog) route(call *tool.Call) (*route, tool.Call, error) {
	s := c.snap.Load()
	r := s.tools.routes[call.Name]
	if r != nil && call.Guard != nil && !s.sees(call.Guard, toolsIdx, call.Name) {
		return nil, tool.Call{}, fmt.Errorf("%w: %q", tool.ErrUnknownTool, call.Name)
	}
	if call.Input != nil {
		serving := ""
		if r != nil {
			serving = r.provider
		}
		if err := retryTo(call.Input, fmt.Sprintf("tool %q", call.Name), serving, "call it again"); err != nil {
			return nil, tool.Call{}, err
		}
	}
	if r == nil {
		if why := c.withheld(call.Name); why != "" {
			return nil, tool.Call{}, tool.Errorf(tool.ErrRefused, "%s", why)
		}
		return nil, tool.Call{}, fmt.Errorf("%w: %q", tool.ErrUnknownTool, call.Name)
	}
	tasks, msg := r.check.CheckTasks(call.Name, call.Tasks)
	if msg != "" {
		return nil, tool.Call{}, &tool.CapabilityRequired{Capabilities: json.RawMessage(argcheck.TasksCapability), Message: msg}
	}
	call.Provider, call.Routed = r.provider, call.Name
	fwd := *call
	fwd.Name = r.tool
	fwd.Tasks = tasks
	args, msg := r.check.CheckArguments(call.Name, fwd.Arguments)
	if msg != "" {
		return nil, tool.Call{}, tool.Errorf(tool.ErrBadArguments, "%s", msg)
	}
	fwd.Arguments = args
	if call.Guard != nil {
		if err := call.Guard.Allow(r.item, args); err != nil {
			return nil, tool.Call{}, err
		}
	}
	return r, fwd, nil
}

// failure is the error a call of r returns for its provider's err: an
// *tool.InputRequired gets the provider's name (asked), other typed errors
// name their cause already, others are wrapped naming tool and provider.
func (r *route) failure(err error) error {
	if err == nil {
		return nil
	}
	if err = asked(err, r.provider); tool.Typed(err) {
		return err
	}
	return fmt.Errorf("tool %q of provider %q: %w", r.tool, r.provider, err)
}

// emptyObject is the arguments of a call that has none.
var emptyObject = json.RawMessage("{}")

// absent reports whether a call's arguments stand for none: nil, only
// white space, or JSON null (some clients send null for no arguments).
func absent(args json.RawMessage) bool {
	args = bytes.TrimSpace(args)
	return len(args) == 0 || string(args) == "null"
}

// Exposed returns every exposed tool, sorted by exposed name.
func (c *Catalog) Exposed() []Entry {
	return slices.Clone(c.snap.Load().tools.entries)
}
