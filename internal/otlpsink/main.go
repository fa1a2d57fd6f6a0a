// Command otlpsink runs the OpenTelemetry Collector's OTLP receiver on
// the addresses it is given, and writes each span and metric it receives
// as one JSON line to stdout, for tests and the bench to read:
//
//	otlpsink -grpc 127.0.0.1:4317 -http 127.0.0.1:4318
//
// An empty address turns that protocol off (a test that exports over one
// protocol so proves it was that one). It prints "ready" to stderr once
// it listens, and stops on SIGTERM or
// SIGINT, or when stdin closes (so that it never outlives a test that
// died).
//
// A span's line: {"span":NAME,"kind":"Server","trace_id":…,"span_id":…,
// "parent_span_id":…,"service":…,"status":"Error"|"Unset"|"Ok",
// "attributes":{…}}. A metric's:
// {"metric":NAME,"points":[{attributes} per data point]}.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
)

func main() {
	grpcAddr := flag.String("grpc", "127.0.0.1:4317", "the OTLP/gRPC address")
	httpAddr := flag.String("http", "127.0.0.1:4318", "the OTLP/HTTP address")
	count := flag.Bool("count", false, "print no spans, only their number when stopped (for the bench)")
	flag.Parse()
	if err := run(*grpcAddr, *httpAddr, *count); err != nil {
		fmt.Fprintln(os.Stderr, "otlpsink:", err)
		os.Exit(1)
	}
}

func run(grpcAddr, httpAddr string, count bool) error {
	f := otlpreceiver.NewFactory()
	cfg := f.CreateDefaultConfig().(*otlpreceiver.Config)
	if grpcAddr != "" {
		cfg.Protocols.GRPC.GetOrInsertDefault().NetAddr.Endpoint = grpcAddr
	} else {
		cfg.Protocols.GRPC = configoptional.None[configgrpc.ServerConfig]()
	}
	if httpAddr != "" {
		cfg.Protocols.HTTP.GetOrInsertDefault().ServerConfig.NetAddr.Endpoint = httpAddr
	} else {
		cfg.Protocols.HTTP = configoptional.None[otlpreceiver.HTTPConfig]()
	}
	w := &writer{enc: json.NewEncoder(os.Stdout), count: count}
	traces, err := consumer.NewTraces(w.traces)
	if err != nil {
		return err
	}
	metrics, err := consumer.NewMetrics(w.metrics)
	if err != nil {
		return err
	}
	ctx := context.Background()
	set := receivertest.NewNopSettings(f.Type())
	tr, err := f.CreateTraces(ctx, set, cfg, traces)
	if err != nil {
		return err
	}
	if _, err := f.CreateMetrics(ctx, set, cfg, metrics); err != nil { // the same receiver (the factory shares it per config)
		return err
	}
	if err := tr.Start(ctx, nopHost{}); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "ready")
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop <- syscall.SIGTERM
	}()
	<-stop
	err = tr.Shutdown(ctx)
	if count {
		fmt.Printf("{\"spans\":%d}\n", w.n)
	}
	return err
}

type nopHost struct{}

func (nopHost) GetExtensions() map[component.ID]component.Component { return nil }

// writer writes what the receiver hands on, one line at a time.
type writer struct {
	mu    sync.Mutex
	enc   *json.Encoder
	count bool
	n     int
}

type spanLine struct {
	Span         string         `json:"span"`
	Kind         string         `json:"kind"`
	TraceID      string         `json:"trace_id"`
	SpanID       string         `json:"span_id"`
	ParentSpanID string         `json:"parent_span_id"`
	Service      string         `json:"service"`
	Status       string         `json:"status"`
	Attributes   map[string]any `json:"attributes"`
}

func (w *writer) traces(_ context.Context, td ptrace.Traces) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, rs := range td.ResourceSpans().All() {
		service := ""
		if v, ok := rs.Resource().Attributes().Get("service.name"); ok {
			service = v.AsString()
		}
		for _, ss := range rs.ScopeSpans().All() {
			for _, s := range ss.Spans().All() {
				w.n++
				if w.count {
					continue
				}
				parent := ""
				if !s.ParentSpanID().IsEmpty() {
					parent = s.ParentSpanID().String()
				}
				if err := w.enc.Encode(spanLine{Span: s.Name(), Kind: s.Kind().String(), TraceID: s.TraceID().String(),
					SpanID: s.SpanID().String(), ParentSpanID: parent, Service: service, Status: s.Status().Code().String(),
					Attributes: s.Attributes().AsRaw()}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

type metricLine struct {
	Metric string           `json:"metric"`
	Points []map[string]any `json:"points"` // each data point's attributes
}

func (w *writer) metrics(_ context.Context, md pmetric.Metrics) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.count {
		return nil
	}
	for _, rm := range md.ResourceMetrics().All() {
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				line := metricLine{Metric: m.Name()}
				if m.Type() == pmetric.MetricTypeHistogram {
					for _, dp := range m.Histogram().DataPoints().All() {
						line.Points = append(line.Points, raw(dp.Attributes()))
					}
				}
				if err := w.enc.Encode(line); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func raw(m pcommon.Map) map[string]any { return m.AsRaw() }
