package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/host/trace"
	"github.com/plughost/plughost/internal/jsonrpc"
)

// Outcome is how a tools/call ended, in a fixed set of values: metrics
// label calls with it, and the audit log writes it, so its values are few
// and stable.
type Outcome string

// The outcomes of a tools/call.
const (
	// OutcomeOK: the tool answered with a result.
	OutcomeOK Outcome = "ok"
	// OutcomeToolError: the tool answered with an isError result (its own
	// failure, or a result that broke its outputSchema).
	OutcomeToolError Outcome = "tool_error"
	// OutcomeInvalidArguments: the arguments broke the tool's inputSchema
	// (tool.ErrBadArguments); the provider was not called.
	OutcomeInvalidArguments Outcome = "invalid_arguments"
	// OutcomeUnknownTool: no provider offers the name (-32602).
	OutcomeUnknownTool Outcome = "unknown_tool"
	// OutcomeTimeout: the call exceeded its time limit (tool.ErrTimedOut).
	OutcomeTimeout Outcome = "timeout"
	// OutcomeCancelled: the client cancelled the request, or its session
	// or the server closed; no response was sent.
	OutcomeCancelled Outcome = "cancelled"
	// OutcomeProviderGone: the provider went away during the call
	// (tool.ErrGone: the plugin died, the device disconnected).
	OutcomeProviderGone Outcome = "provider_gone"
	// OutcomeRefused: the provider refused the call (tool.ErrRefused: it
	// is stopping, or a limit of its own).
	OutcomeRefused Outcome = "refused"
	// OutcomeTooLarge: the arguments or the result were over a size limit
	// (tool.ErrTooLarge).
	OutcomeTooLarge Outcome = "too_large"
	// OutcomeProviderFailed: the provider failed running the call (a
	// plugin's handler panicked, tool.ErrInternal, or any other error).
	OutcomeProviderFailed Outcome = "provider_failed"
	// OutcomeInputRequired: a stateless request answered with an
	// InputRequiredResult (the client retries with its answers).
	OutcomeInputRequired Outcome = "input_required"
	// OutcomeCapabilityRequired: the call needs a client capability the
	// client did not declare (tool.CapabilityRequired).
	OutcomeCapabilityRequired Outcome = "capability_required"
)

// Outcomes lists every Outcome, for metrics that declare their labels'
// values up front.
var Outcomes = []Outcome{OutcomeOK, OutcomeToolError, OutcomeInvalidArguments, OutcomeUnknownTool, OutcomeTimeout,
	OutcomeCancelled, OutcomeProviderGone, OutcomeRefused, OutcomeTooLarge, OutcomeProviderFailed, OutcomeInputRequired,
	OutcomeCapabilityRequired}

// CallEnd describes a tools/call that has ended, for [Options.OnCallEnd].
type CallEnd struct {
	// Tool is the exposed name of the tool that ran: the name the client
	// called, but for tool search's call_tool the tool it named. Provider
	// is the provider that served it (HostProvider for search_tools). When
	// no provider did (an unknown tool), Provider is "" and Tool the name
	// the client called.
	Tool, Provider string
	// Outcome is how it ended.
	Outcome Outcome
	// Start is when the request arrived; Duration how long until its
	// response was written (or the call was cancelled). A call that went
	// on as a task ends when its task does.
	Start    time.Time
	Duration time.Duration
	// Arguments are the arguments as the client sent them (nil when
	// absent). They are the call's bytes: valid only during OnCallEnd.
	Arguments json.RawMessage
	// ResultSize is the size of the provider's result (or the host's
	// isError result) in bytes; 0 for an outcome without one.
	ResultSize int
	// Peer names the session's client on its transport: its session id
	// ("" on stdio and for a stateless request) and its address.
	Peer Peer
	// Client is the clientInfo the client sent, "name/version" (in
	// initialize, or in the _meta of a stateless request); "" when none.
	Client string
	// Stateless is set for a request of the stateless revision
	// (2026-07-28), which belongs to no session.
	Stateless bool
	// TraceID is the trace id of the request's W3C traceparent; "" when it
	// carried none, or an invalid one.
	TraceID string
	// Task is set when the call went on as a task.
	Task bool
	// DroppedNotifications counts the progress and log notifications the
	// call's provider sent beyond Options.NotificationRate, dropped.
	DroppedNotifications int
}

// Peer names a session's client, for the audit log: what the transport
// knows of it.
type Peer struct {
	// SessionID is the transport's id of the session (Streamable HTTP's
	// Mcp-Session-Id, HTTP+SSE's sessionId); "" when it has none.
	SessionID string
	// Remote is the client's network address ("host:port"); "" on stdio.
	Remote string
	// Transport names the transport: "stdio", "streamable-http" or "sse"
	// (HTTP+SSE); "" when the transport did not say (Server.Sessions).
	Transport string
	// Caller is who the client acts for: on HTTP the subject of its
	// verified OAuth access token (zero without OAuth), on stdio the local
	// user.
	Caller Caller
}

// Caller is who a client acts for, as far as the host could verify it
// (tool.Caller: the session's, handed to providers with each call).
type Caller = tool.Caller

// localCaller is the stdio session's caller: the user running the host.
var localCaller = sync.OnceValue(func() Caller {
	if u, err := user.Current(); err == nil {
		return Caller{Subject: u.Username, Local: true}
	}
	return Caller{Subject: "uid:" + strconv.Itoa(os.Getuid()), Local: true}
})

// observe prepares what the call's end reports (ended): its start, when
// Options.OnCallEnd or the DEBUG log wants it, and its trace context.
func (c *call) observe(p callParams) {
	if srv := c.s.srv; srv.onCallEnd != nil || srv.log.IsDebug() {
		c.start = time.Now()
	}
	c.setTrace(p.traceParent, p.traceState)
}

// setTrace checks the traceparent and tracestate of the request's _meta
// and carries them in the call: an invalid traceparent is dropped with its
// tracestate, an invalid tracestate alone (logged at DEBUG).
func (c *call) setTrace(parent, state string) {
	if parent == "" {
		return
	}
	tc, stateErr, err := trace.Parse(parent, state)
	if err != nil {
		c.s.srv.log.Debug("dropped the request's trace context", "tool", c.tc.Name, "error", err)
		return
	}
	if stateErr != nil {
		c.s.srv.log.Debug("dropped the request's tracestate", "tool", c.tc.Name, "trace_id", tc.TraceID(), "error", stateErr)
	}
	c.tc.TraceParent, c.tc.TraceState = tc.Parent, tc.State
}

// traceID is the trace id of the call's traceparent ("" for none).
func (c *call) traceID() string { return trace.Context{Parent: c.tc.TraceParent}.TraceID() }

// ended reports a tools/call that ended with res or err (or was
// cancelled; or its task ended) to Options.OnCallEnd, and logs it at DEBUG with its trace id.
func (c *call) ended(res json.RawMessage, err error, cancelled, task bool) {
	srv := c.s.srv
	c.mu.Lock()
	dropped := c.dropped
	c.mu.Unlock()
	if dropped > 0 {
		srv.log.Warn("dropped notifications of a tool call beyond the rate limit", "tool", c.tc.Name, "provider", c.tc.Provider,
			"dropped", dropped, "limit_per_second", int(srv.tuned().notifyRate))
	}
	if c.start.IsZero() { // neither OnCallEnd nor the DEBUG log wants it (observe)
		return
	}
	e := CallEnd{Tool: c.tc.Name, Provider: c.tc.Provider, Outcome: outcome(res, err, cancelled, c.own),
		Start: c.start, Duration: time.Since(c.start), Arguments: c.tc.Arguments, Peer: c.s.conn.Peer,
		Client: c.s.life.client, Stateless: c.st != nil, TraceID: c.traceID(), Task: task, DroppedNotifications: dropped}
	if err == nil {
		e.ResultSize = len(res)
	} else if !cancelled {
		e.ResultSize = len(err.Error()) // the isError text (or the -32602 message)
	}
	if c.tc.Routed != "" {
		e.Tool = c.tc.Routed
	}
	if c.st != nil {
		e.Client = c.st.client
	}
	if srv.onCallEnd != nil { // before the log line: whoever reads it finds the call counted
		srv.onCallEnd(&e)
	}
	if srv.log.IsDebug() {
		srv.log.Debug("tool call", "tool", e.Tool, "provider", e.Provider, "outcome", e.Outcome, "duration", e.Duration,
			"trace_id", e.TraceID)
	}
}

// outcome classifies how a call ended. own: res is the host's
// InputRequiredResult.
func outcome(res json.RawMessage, err error, cancelled, own bool) Outcome {
	var cr *tool.CapabilityRequired
	switch {
	case cancelled:
		return OutcomeCancelled
	case err == nil && own:
		return OutcomeInputRequired
	case err == nil && string(jsonrpc.Member(res, "isError")) == "true":
		return OutcomeToolError
	case err == nil:
		return OutcomeOK
	case errors.Is(err, tool.ErrUnknownTool):
		return OutcomeUnknownTool
	case errors.Is(err, tool.ErrBadArguments):
		return OutcomeInvalidArguments
	case errors.Is(err, tool.ErrTimedOut):
		return OutcomeTimeout
	case errors.Is(err, context.Canceled):
		return OutcomeCancelled
	case errors.Is(err, tool.ErrGone):
		return OutcomeProviderGone
	case errors.Is(err, tool.ErrRefused):
		return OutcomeRefused
	case errors.Is(err, tool.ErrTooLarge):
		return OutcomeTooLarge
	case errors.As(err, &cr):
		return OutcomeCapabilityRequired
	}
	return OutcomeProviderFailed
}

// maxClientName bounds a client's "name/version": the client chooses it,
// and it goes into every line of the audit log.
const maxClientName = 128

// clientName is clientInfo's name and version as "name/version", at most
// maxClientName bytes (cut, with "…"); "" when both are empty.
func clientName(name, version string) string {
	s := name
	if version != "" {
		s += "/" + version
	}
	if len(s) > maxClientName {
		s = strings.ToValidUTF8(s[:maxClientName], "") + "…"
	}
	return s
}
