package trace

import (
	"context"
	"encoding/json"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// Spans. The protocol layer starts a server span for each MCP request
// with the tracer serve set up from the configuration (host/telemetry),
// and hands it down in the request's context; the layers below (the
// catalog's routing, each hook, the plugin call) start their spans as its
// children with Start, which takes the tracer from the span it finds in
// the context. So no layer below the protocol knows whether tracing is
// on: without a span in the context (tracing off), Start costs a type
// check and returns a span that records nothing.

// Start starts a span named "op target" (the conventions' form: "route
// echo", "hook pii"), of kind, as a child of ctx's span, in the tracer
// provider that made it. Without a live span in ctx it returns ctx and a
// span that does nothing, without allocating: the name is joined, and
// attrs copied, only for a live span, so that the caller's variadic array
// stays on its stack (every call passes here, traced or not).
func Start(ctx context.Context, op, target string, kind oteltrace.SpanKind, attrs ...attribute.KeyValue) (context.Context, oteltrace.Span) {
	parent := oteltrace.SpanFromContext(ctx)
	if !parent.SpanContext().IsValid() {
		return ctx, parent
	}
	return parent.TracerProvider().Tracer(Scope).Start(ctx, op+" "+target, oteltrace.WithSpanKind(kind),
		oteltrace.WithAttributes(slices.Clone(attrs)...))
}

// Scope is the instrumentation scope of plughost's spans.
const Scope = "github.com/plughost/plughost"

// End ends span, with an error status naming err when err is not nil.
func End(span oteltrace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// Outgoing is the trace context a provider hands on (to a plugin, in its
// CallStart; to a wrapped server, in _meta) for a call in ctx: the
// traceparent and tracestate of ctx's span when there is one (the plugin
// call's span, so that the plugin's own spans are its children), else
// parent and state as the client sent them (tracing off: the client's
// context passes through unchanged).
func Outgoing(ctx context.Context, parent, state string) (string, string) {
	if !oteltrace.SpanContextFromContext(ctx).IsValid() {
		return parent, state
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"], c["tracestate"]
}

// Remote is the span context of c (a Context Parse checked), to start the
// host's server span under the client's; the zero SpanContext for the
// zero Context.
func Remote(c Context) oteltrace.SpanContext {
	if c.Parent == "" {
		return oteltrace.SpanContext{}
	}
	carrier := propagation.MapCarrier{"traceparent": c.Parent}
	if c.State != "" {
		carrier["tracestate"] = c.State
	}
	return oteltrace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), carrier))
}

// plughost's own span attributes, beside the conventions' (which name no
// provider or hook): the provider that served a call, and each hook's
// name, point and decision.
const (
	ProviderKey     = attribute.Key("plughost.provider")
	HookKey         = attribute.Key("plughost.hook.name")
	HookPointKey    = attribute.Key("plughost.hook.point")
	HookDecisionKey = attribute.Key("plughost.hook.decision")
)

// Ending returns done, which ends span first (with err's status) when
// span records; done itself when it does not, so that a call without
// tracing costs no closure.
func Ending(span oteltrace.Span, done func(json.RawMessage, error)) func(json.RawMessage, error) {
	if !span.IsRecording() {
		return done
	}
	return func(res json.RawMessage, err error) {
		End(span, err)
		done(res, err)
	}
}
