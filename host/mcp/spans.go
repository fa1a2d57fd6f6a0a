package mcp

import (
	"context"
	"strconv"
	"time"

	"github.com/plughost/plughost/host/trace"
	"github.com/plughost/plughost/internal/jsonrpc"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/mcpconv"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// Telemetry of requests (Options.Tracer, Options.Meter): each request
// gets a server span, named and described as OpenTelemetry's semantic
// conventions for MCP say (semconv's mcpconv), under the client's span
// when its _meta carries a valid traceparent (checked by package trace, as
// the call's trace context always was), and its duration is recorded in
// mcp.server.operation.duration. The span travels down in the request's
// context, so that the catalog's routing, the hooks and the plugin call
// become its children; it ends when the response is written (reply.end),
// or when the request is cancelled (no response). Without a tracer and a
// meter none of this runs: the request's reply carries no telemetry.

// requestObs is one request's telemetry, carried by its reply.
type requestObs struct {
	span   oteltrace.Span
	start  time.Time
	method string
	attrs  []attribute.KeyValue // the metric's (but the method, which mcpconv adds): tool or prompt, version
	failed string               // error.type, "" while it has not failed
}

// observeRequest starts m's telemetry, returning the request's context
// carrying its span and the reply carrying both; ctx and rp as they are
// when telemetry is off.
func (s *Session) observeRequest(ctx context.Context, m jsonrpc.Message, rp reply, stateless bool) (context.Context, reply) {
	srv := s.srv
	if srv.tracer == nil && !srv.opDuration.Enabled(ctx) {
		return ctx, rp
	}
	method := string(m.Method)
	version := StatelessVersion
	if !stateless {
		version = s.Version()
	}
	o := &requestObs{start: time.Now(), method: method}
	if version != "" {
		o.attrs = append(o.attrs, semconv.McpProtocolVersionKey.String(version))
	}
	name := method
	var spanAttrs []attribute.KeyValue
	switch method {
	case "tools/call":
		if tool, ok := jsonrpc.Unquote(jsonrpc.Member(m.Params, "name")); ok {
			name += " " + tool
			o.attrs = append(o.attrs, semconv.GenAIToolName(tool), semconv.GenAIOperationNameExecuteTool)
		}
	case "prompts/get":
		if prompt, ok := jsonrpc.Unquote(jsonrpc.Member(m.Params, "name")); ok {
			name += " " + prompt
			o.attrs = append(o.attrs, semconv.GenAIPromptName(prompt))
		}
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		// The URI is an attribute, not part of the name: the conventions
		// keep a span name's cardinality low.
		if uri, ok := jsonrpc.Unquote(jsonrpc.Member(m.Params, "uri")); ok {
			spanAttrs = append(spanAttrs, semconv.McpResourceURI(uri))
		}
	}
	if srv.tracer != nil {
		spanAttrs = append(spanAttrs, semconv.McpMethodNameKey.String(method))
		spanAttrs = append(spanAttrs, o.attrs...)
		if id := s.conn.Peer.SessionID; id != "" {
			spanAttrs = append(spanAttrs, semconv.McpSessionID(id))
		}
		spanAttrs = append(spanAttrs, semconv.JSONRPCRequestID(requestID(m.ID)), networkTransport(s.conn.Peer.Remote))
		if parent := s.clientTrace(m.Params); parent.IsValid() {
			ctx = oteltrace.ContextWithRemoteSpanContext(ctx, parent)
		}
		ctx, o.span = srv.tracer.Start(ctx, name, oteltrace.WithSpanKind(oteltrace.SpanKindServer), oteltrace.WithAttributes(spanAttrs...))
	}
	rp.obs = o
	return ctx, rp
}

// clientTrace is the span context of the trace context in params' _meta,
// checked (trace.Parse); invalid when absent or invalid.
func (s *Session) clientTrace(params []byte) oteltrace.SpanContext {
	meta := jsonrpc.Member(params, "_meta")
	parent, _ := jsonrpc.Unquote(jsonrpc.Member(meta, "traceparent"))
	if parent == "" {
		return oteltrace.SpanContext{}
	}
	state, _ := jsonrpc.Unquote(jsonrpc.Member(meta, "tracestate"))
	tc, _, err := trace.Parse(parent, state) // an invalid tracestate alone is dropped
	if err != nil {
		return oteltrace.SpanContext{}
	}
	return trace.Remote(tc)
}

// requestID is a JSON-RPC id as the conventions write it: a string's
// contents, a number's digits.
func requestID(raw []byte) string {
	if s, ok := jsonrpc.Unquote(raw); ok {
		return s
	}
	return string(raw)
}

// networkTransport is the conventions' network.transport: stdio is a
// pipe, the HTTP transports (which have a remote address) TCP.
func networkTransport(remote string) attribute.KeyValue {
	if remote == "" {
		return semconv.NetworkTransportPipe
	}
	return semconv.NetworkTransportTCP
}

// failedWith marks the request failed with a JSON-RPC error of code.
func (o *requestObs) failedWith(code int, message string) {
	o.failed = strconv.Itoa(code)
	if o.span != nil {
		o.span.SetAttributes(semconv.RPCResponseStatusCode(o.failed))
		o.span.SetStatus(codes.Error, message)
	}
}

// failed marks rp's request failed with e (when it has telemetry), and
// returns e: for the responses built without respondError.
func (rp reply) failed(e *jsonrpc.Error) *jsonrpc.Error {
	if rp.obs != nil {
		rp.obs.failedWith(e.Code, e.Message)
	}
	return e
}

// toolError marks a tools/call answered with an isError result: the
// conventions' error.type "tool_error".
func (o *requestObs) toolError() {
	o.failed = "tool_error"
	if o.span != nil {
		o.span.SetStatus(codes.Error, "tool_error")
	}
}

// endRequest ends the request's telemetry: its span, its duration recorded.
// cancelled: no response was sent.
func (s *Session) endRequest(o *requestObs, cancelled bool) {
	if cancelled && o.failed == "" {
		o.failed = "cancelled"
		if o.span != nil {
			o.span.SetStatus(codes.Error, "cancelled")
		}
	}
	attrs := o.attrs
	if o.failed != "" {
		attrs = append(attrs[:len(attrs):len(attrs)], semconv.ErrorTypeKey.String(o.failed))
	}
	s.srv.opDuration.Record(context.Background(), time.Since(o.start).Seconds(), mcpconv.MethodNameAttr(o.method), attrs...)
	if o.span != nil {
		if o.failed != "" {
			o.span.SetAttributes(semconv.ErrorTypeKey.String(o.failed))
		}
		o.span.End()
	}
}
