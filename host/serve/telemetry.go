package serve

import (
	"context"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/telemetry"
)

// Traces over OTLP: the observability block (or the OTEL_EXPORTER_OTLP_*
// variables) turns on the tracer and meter the MCP server gets
// (mcpOptions); Stop flushes them.

// telemetryFlush bounds the flush at Stop: a collector that is down must
// not hold the host's exit for the exporter's whole retry schedule.
const telemetryFlush = 5 * time.Second

// startTelemetry starts the exporters cfg's observability block (or the
// environment) asks for; nil when tracing is off.
func startTelemetry(o *Options, cfg *config.Config, log hclog.Logger) (*telemetry.Telemetry, error) {
	t, err := telemetry.Start(context.Background(), cfg.Observability, telemetry.Settings{Version: o.Version, Getenv: os.Getenv, Log: log})
	if err != nil || t == nil {
		return nil, err
	}
	log.Info("exporting traces over OTLP", "to", t.Where)
	return t, nil
}

// stopTelemetry flushes the spans still queued (for at most
// telemetryFlush) and stops the exporters; nothing for a nil t.
func stopTelemetry(t *telemetry.Telemetry, log hclog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), telemetryFlush)
	defer cancel()
	if err := t.Shutdown(ctx); err != nil {
		log.Warn("flushing the traces to the OTLP collector", "error", err)
	}
}
