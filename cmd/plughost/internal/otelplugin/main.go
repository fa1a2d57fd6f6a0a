// Command otelplugin is a plugin of the end-to-end tests that exports
// spans of its own, as a plugin author following docs/plugin-authors.md
// ("Your plugin's spans") would: its tool "work" continues the trace
// context the host hands it (the host's plugin-call span, when the host
// traces) with a span named "otelplugin work", exported over OTLP/HTTP to
// $OTELPLUGIN_ENDPOINT (a collector's base URL) before the tool answers,
// and returns the traceparent it got.
package main

import (
	"context"
	"os"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/plughost/plughost/pluginproto"
)

func main() {
	ctx := context.Background()
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(os.Getenv("OTELPLUGIN_ENDPOINT")+"/v1/traces"))
	if err != nil {
		panic(err)
	}
	// A syncer, not a batcher: the span is exported before the tool
	// answers, so that a test finds it once the call returned.
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
		sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName("otelplugin"))))
	tracer := tp.Tracer("otelplugin")
	p := pluginproto.New("otelplugin", "1")
	p.AddTool(pluginproto.Tool{Name: "work", Description: "Does some work in a span of its own."},
		func(_ context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
			carrier := propagation.MapCarrier{"traceparent": req.TraceParent, "tracestate": req.TraceState}
			ctx := propagation.TraceContext{}.Extract(context.Background(), carrier)
			_, span := tracer.Start(ctx, "otelplugin work")
			span.End()
			return pluginproto.TextResult("traceparent=" + req.TraceParent), nil
		})
	pluginproto.Serve(p)
}
