package pluginproto

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
)

// Handler runs one call of a tool. The context is cancelled when the client
// cancels the call (or the task the call went on as) or the host goes
// away; a long-running handler should watch it. A returned error becomes
// an isError result carrying its text: the tool's own failure, which the
// model reads. A panic is a failure of the plugin instead: the plugin keeps
// running, and answers the host that it failed, naming the panic (the
// client gets an isError result saying so, or, for a call that went on as
// a task, a failed task). An error that wraps the ErrClientUnsupported of
// Elicit, Sample or Roots instead tells the client which capability the
// tool needs (see ErrClientUnsupported).
type Handler func(ctx context.Context, req *Request) (*Result, error)

// Request is one call of a tool, as its handler sees it. A Request built by
// hand (in a unit test, say) works: Progress and Log then do nothing,
// Elicit, Sample and Roots answer that the client supports none of them,
// and RunAsTask reports false.
type Request struct {
	// Tool is the name of the tool being called.
	Tool string
	// Arguments is the JSON object of arguments, as the client sent it.
	// The host has checked it against the tool's InputSchema.
	Arguments json.RawMessage
	// TraceParent is the call's W3C trace context
	// (https://www.w3.org/TR/trace-context/), as the client sent it in its
	// request's _meta and the host checked it: "00-<trace id>-<parent
	// id>-<flags>". A handler that traces (with OpenTelemetry, say) makes
	// its spans children of it, so that a collector stitches the client's
	// call, the host and the plugin together. "" when the client sent none.
	TraceParent string
	// TraceState is the W3C tracestate that goes with TraceParent (vendors'
	// key=value list); "" when none.
	TraceState string
	// Caller is who the call acts for, as the host verified it (see
	// Caller): a handler may decide by it, or record it. nil when the host
	// knows nobody.
	Caller *Caller

	sink  *sink  // nil for a hand-built Request
	ask   *asker // nil for a hand-built Request, or a client that declared nothing
	tasks bool   // the call may go on as a task (CallStart.tasks)
}

// RunAsTask makes the rest of the call a task (MCP 2026-07-28's tasks
// extension), when it can be one: the client accepts a task, and the tool
// declares Tool.TaskSupport. It then tells the host at once, and reports
// true: the client is answered with a task it polls, while the handler
// keeps running. The host takes the handler's Progress messages as the
// task's status message, and its result or error (an isError result)
// completes the task; a panic fails it. Elicit, Sample and Roots keep
// working: the task waits in input_required for the client's answers, and
// the handler runs again with them, as in any input round (RunAsTask,
// called again in that run, reports true too). Cancelling the task
// cancels the handler's context.
//
// It reports false, and does nothing, when the call cannot be a task (the
// client does not accept one, the tool does not declare TaskSupport, the
// Request was built by hand, or the handler has returned): the call goes on
// synchronously, as any call, and the handler need not care which. Only
// the first call sends anything; later ones report the same. Safe for
// concurrent use. See "Long calls as tasks" in the package doc.
func (r *Request) RunAsTask() bool {
	if r.sink == nil || !r.tasks {
		return false
	}
	r.sink.mu.Lock()
	defer r.sink.mu.Unlock()
	if !r.sink.detached && !r.sink.closed {
		r.sink.detached = true
		_ = r.sink.emit.detach() // a failed send ends the call's context
	}
	return r.sink.detached
}

// Elicit asks the user for input through the client (MCP
// elicitation/create) and returns the answer. The handler runs in rounds,
// and keeps nothing between them: when the client has not answered yet,
// Elicit returns an error wrapping ErrInputRequired at once, and the
// handler should return; the SDK then asks the client, and runs the handler
// again (possibly in another process) with the answer, which the same
// Elicit (the request under the same key: p.Key, or the next number when it
// is empty) now returns. So a handler must be deterministic up to its
// requests: make them in the same order each round, and do nothing before
// them that must not happen twice. Requests made without returning in
// between (in a loop, say) are asked together, in one round.
//
// When the client did not declare the capability (elicitation; for URL
// mode elicitation.url), Elicit returns an error wrapping
// ErrClientUnsupported at once, with nothing asked: returned from the
// handler, it tells the client the tool needs the capability. When the
// client refused to answer, the error is an *InputError.
func (r *Request) Elicit(ctx context.Context, p ElicitParams) (*ElicitResult, error) {
	return r.ask.elicit(ctx, p)
}

// Sample asks the client's LLM for a message (MCP sampling/createMessage),
// in rounds as Elicit does. The client must declare sampling (and
// sampling.tools for a request with tools).
func (r *Request) Sample(ctx context.Context, p SampleParams) (*SampleResult, error) {
	return r.ask.sample(ctx, p)
}

// Roots asks the client for its roots (MCP roots/list), in rounds as
// Elicit does. The client must declare roots.
func (r *Request) Roots(ctx context.Context) ([]Root, error) {
	return r.ask.roots(ctx, "")
}

// RootsKeyed is Roots under a key of the handler's choosing, as
// ElicitParams.Key names an elicitation: empty means the next number; a
// named key may not be all digits, and keys must be unique within a round.
func (r *Request) RootsKeyed(ctx context.Context, key string) ([]Root, error) {
	return r.ask.roots(ctx, key)
}

// Bind decodes the arguments into v (with json.Unmarshal). Empty arguments
// decode as {}. Its error names the tool and the problem, fit to return from
// the handler as is.
func (r *Request) Bind(v any) error {
	args := r.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if err := json.Unmarshal(args, v); err != nil {
		return fmt.Errorf("invalid arguments for tool %q: %w", r.Tool, err)
	}
	return nil
}

// Progress reports how far the call has come: progress out of total (0 when
// the total is unknown), with an optional message. progress should increase
// with each report. It does nothing unless the client asked for progress, and
// nothing once the handler has returned. Safe for concurrent use.
func (r *Request) Progress(progress, total float64, message string) {
	if r.sink == nil || !r.sink.progress {
		return
	}
	r.sink.mu.Lock()
	defer r.sink.mu.Unlock()
	if !r.sink.closed {
		_ = r.sink.emit.progress(progress, total, message) // a failed send ends the call's context
	}
}

// Log sends a log message to the client (MCP notifications/message); the
// host drops it when the client's logging level is above level. level is
// one of the Level constants (LevelDebug … LevelEmergency):
//
//	req.Log(pluginproto.LevelWarning, map[string]any{"skipped": name, "reason": "too large"})
//
// data is anything json.Marshal accepts (data it cannot encode is sent as
// a string naming the error). It does nothing once the handler has
// returned, and nothing for a Request built by hand. Safe for concurrent
// use. (Log is for the client and the user; operator logs go to
// Plugin.Logger.)
func (r *Request) Log(level Level, data any) {
	if r.sink == nil {
		return
	}
	b, err := json.Marshal(data)
	if err != nil {
		b, _ = json.Marshal(fmt.Sprintf("pluginproto: cannot encode log data of type %T: %v", data, err))
	}
	r.sink.mu.Lock()
	defer r.sink.mu.Unlock()
	if !r.sink.closed {
		_ = r.sink.emit.log(level.String(), b)
	}
}

// emitter carries a call's notifications and its Detach to the host (a
// gRPC stream) or to the callbacks of an in-process CallTool.
type emitter interface {
	progress(progress, total float64, message string) error
	log(level string, data json.RawMessage) error
	detach() error
}

// sink serializes a call's notifications and its Detach, and stops them
// when the handler returns, so that the result is the call's last message.
type sink struct {
	mu       sync.Mutex
	closed   bool
	detached bool // RunAsTask sent Detach
	progress bool // the client asked for progress
	emit     emitter
}

func (s *sink) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}
