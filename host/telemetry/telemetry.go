// Package telemetry sets up OpenTelemetry for plughost serve: a tracer
// provider whose spans go over OTLP (gRPC or HTTP) to the operator's
// collector, and a meter provider for mcp.server.operation.duration, from
// the configuration's observability block or the standard OTEL_*
// variables. The spans themselves are started by the layers that know
// what they mean (host/mcp's server span, host/trace.Start's children).
//
// The OpenTelemetry SDK does the work, so that plughost's traces mean what
// every collector expects: the W3C propagation, the parent-based sampler,
// and a batch processor whose queue is bounded (2048 spans by default,
// OTEL_BSP_MAX_QUEUE_SIZE), dropping what a dead or slow collector cannot
// take: exporting never blocks a call, nor grows the host.
package telemetry

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	oteltrace "go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/trace"
)

// Telemetry is the running tracer and meter providers.
type Telemetry struct {
	tp *sdktrace.TracerProvider
	mp *sdkmetric.MeterProvider
	// Where names the exporter's target for the log: "grpc
	// http://collector:4317", or "from OTEL_EXPORTER_OTLP_*".
	Where string
}

// Settings are what Start needs besides the configuration.
type Settings struct {
	// Version is service.version.
	Version string
	// Getenv reads the environment (os.Getenv in serve).
	Getenv func(string) string
	// Log receives the exporters' failures, at most one a minute.
	Log hclog.Logger
}

// maxHeadersFile bounds headers_file: a few headers, not a data file.
const maxHeadersFile = 64 << 10

// Start starts the providers cfg (the observability block, nil when
// absent) or the OTEL_EXPORTER_OTLP_* variables ask for. It returns nil,
// nil when neither asks for any: tracing off (and so when OTEL_SDK_DISABLED
// is true). An unreadable headers_file or an unknown protocol is an error
// naming it.
func Start(ctx context.Context, cfg *config.Observability, s Settings) (*Telemetry, error) {
	getenv := s.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return nil, nil
	}
	var otlpCfg *config.OTLP
	if cfg != nil {
		otlpCfg = cfg.OTLP
	}
	fromEnv := cmp.Or(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), getenv("OTEL_EXPORTER_OTLP_ENDPOINT")) != ""
	if otlpCfg == nil && !fromEnv {
		return nil, nil
	}
	exp, err := newExporters(ctx, otlpCfg, getenv)
	if err != nil {
		return nil, err
	}
	res, err := newResource(ctx, cfg, s.Version)
	if err != nil {
		return nil, err
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithBatcher(exp.traces), sdktrace.WithResource(res)}
	if cfg != nil && cfg.SampleRatio != nil {
		// Parent-based: a client that sampled its trace (or did not)
		// decides for its requests; the ratio decides for the traces
		// that start here. Without sample_ratio the SDK reads
		// OTEL_TRACES_SAMPLER(_ARG), and defaults to parent-based always.
		opts = append(opts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(*cfg.SampleRatio))))
	}
	t := &Telemetry{
		tp:    sdktrace.NewTracerProvider(opts...),
		mp:    sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp.metrics)), sdkmetric.WithResource(res)),
		Where: exp.where,
	}
	if s.Log != nil {
		otel.SetErrorHandler(logErrors(s.Log))
	}
	return t, nil
}

// Tracer is the tracer of plughost's server spans; nil for a nil t.
func (t *Telemetry) Tracer() oteltrace.Tracer {
	if t == nil {
		return nil
	}
	return t.tp.Tracer(trace.Scope)
}

// Meter is the meter of plughost's metrics; nil for a nil t.
func (t *Telemetry) Meter() metric.Meter {
	if t == nil {
		return nil
	}
	return t.mp.Meter(trace.Scope)
}

// Shutdown flushes what is queued to the collector, until ctx ends, and
// stops the providers. A nil t has nothing to do.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return errors.Join(t.tp.Shutdown(ctx), t.mp.Shutdown(ctx))
}

// exporters are the span and metric exporters to one collector.
type exporters struct {
	traces  sdktrace.SpanExporter
	metrics sdkmetric.Exporter
	where   string
}

// newExporters makes the exporters o says (nil: those the OTEL_EXPORTER_OTLP_*
// variables say, which the exporters read themselves).
func newExporters(ctx context.Context, o *config.OTLP, getenv func(string) string) (exporters, error) {
	protocol := config.ProtocolGRPC
	var headers map[string]string
	if o == nil {
		// The specification's default protocol for the variables is
		// http/protobuf.
		switch p := cmp.Or(getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), getenv("OTEL_EXPORTER_OTLP_PROTOCOL"), "http/protobuf"); p {
		case "grpc":
		case "http/protobuf":
			protocol = config.ProtocolHTTP
		default:
			return exporters{}, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL %q: plughost exports over grpc or http/protobuf", p)
		}
	} else {
		protocol = cmp.Or(o.Protocol, config.ProtocolGRPC)
		if o.HeadersFile != "" {
			var err error
			if headers, err = readHeaders(o.HeadersFile); err != nil {
				return exporters{}, err
			}
		}
	}
	var e exporters
	var terr, merr error
	switch protocol {
	case config.ProtocolGRPC:
		var topts []otlptracegrpc.Option
		var mopts []otlpmetricgrpc.Option
		if o != nil {
			topts = append(topts, otlptracegrpc.WithEndpointURL(o.Endpoint), otlptracegrpc.WithHeaders(headers))
			mopts = append(mopts, otlpmetricgrpc.WithEndpointURL(o.Endpoint), otlpmetricgrpc.WithHeaders(headers))
			if o.Timeout > 0 {
				topts = append(topts, otlptracegrpc.WithTimeout(o.Timeout))
				mopts = append(mopts, otlpmetricgrpc.WithTimeout(o.Timeout))
			}
		}
		e.traces, terr = otlptracegrpc.New(ctx, topts...)
		e.metrics, merr = otlpmetricgrpc.New(ctx, mopts...)
	case config.ProtocolHTTP:
		var topts []otlptracehttp.Option
		var mopts []otlpmetrichttp.Option
		if o != nil {
			// The endpoint is the collector's base URL, as
			// OTEL_EXPORTER_OTLP_ENDPOINT is: each signal has its path.
			base := strings.TrimSuffix(o.Endpoint, "/")
			topts = append(topts, otlptracehttp.WithEndpointURL(base+"/v1/traces"), otlptracehttp.WithHeaders(headers))
			mopts = append(mopts, otlpmetrichttp.WithEndpointURL(base+"/v1/metrics"), otlpmetrichttp.WithHeaders(headers))
			if o.Timeout > 0 {
				topts = append(topts, otlptracehttp.WithTimeout(o.Timeout))
				mopts = append(mopts, otlpmetrichttp.WithTimeout(o.Timeout))
			}
		}
		e.traces, terr = otlptracehttp.New(ctx, topts...)
		e.metrics, merr = otlpmetrichttp.New(ctx, mopts...)
	}
	if err := errors.Join(terr, merr); err != nil {
		return exporters{}, fmt.Errorf("the OTLP exporter: %w", err)
	}
	e.where = protocol + " (from OTEL_EXPORTER_OTLP_*)"
	if o != nil {
		e.where = protocol + " " + o.Endpoint
	}
	return e, nil
}

// readHeaders reads a headers file: "Name: value" lines; blank lines and
// lines starting with # are skipped.
func readHeaders(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("observability: headers_file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxHeadersFile+1))
	if err != nil {
		return nil, fmt.Errorf("observability: headers_file: %w", err)
	}
	if len(b) > maxHeadersFile {
		return nil, fmt.Errorf("observability: headers_file %s: larger than %d KiB", path, maxHeadersFile>>10)
	}
	headers := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			// The line may hold a secret: name the line, not its text.
			return nil, fmt.Errorf(`observability: headers_file %s:%d: want "Name: value"`, path, n)
		}
		headers[name] = value
	}
	return headers, nil
}

// newResource describes this process: service.name (service_name, else
// $OTEL_SERVICE_NAME, else "plughost"), service.version, and what
// OTEL_RESOURCE_ATTRIBUTES adds.
func newResource(ctx context.Context, cfg *config.Observability, version string) (*resource.Resource, error) {
	attrs := []resource.Option{resource.WithAttributes(semconv.ServiceName("plughost"), semconv.ServiceVersion(version)), resource.WithFromEnv()}
	if cfg != nil && cfg.ServiceName != "" {
		attrs = append(attrs, resource.WithAttributes(semconv.ServiceName(cfg.ServiceName)))
	}
	return resource.New(ctx, attrs...)
}

// logErrors is the SDK's error handler: an export that failed (a
// collector down, a queue full) is logged at WARN, at most once a minute,
// so that a dead collector is seen without flooding the log.
func logErrors(log hclog.Logger) otel.ErrorHandlerFunc {
	every := &rate.Sometimes{Interval: time.Minute}
	return func(err error) {
		every.Do(func() {
			log.Warn("exporting telemetry over OTLP failed (later failures within a minute are not logged)", "error", err)
		})
	}
}
