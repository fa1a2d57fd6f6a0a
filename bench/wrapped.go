package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// The wrapped section: an existing MCP server nobody here wrote
// (@modelcontextprotocol/server-everything, on the Node 22 that
// conformance/package.json pins) run directly by the load client, and
// served by plughost from a declaration (everything.mcp.json: plughost's
// __wrapped bridge, a plugin process that speaks to the server over stdio),
// sandboxed and not. Every row calls the server's own echo tool.

// wrappedFigures are one way of running the wrapped server: its cold start,
// then the call load of benchCalls.
type wrappedFigures struct {
	callFigures
	// Cold start: exec of the process → a tools/list holding echo (after
	// initialize), a fresh process (and an empty catalog cache) each run.
	ColdRuns  int       `json:"cold_runs"`
	ColdP50ms float64   `json:"cold_start_median_ms"`
	ColdMinMS float64   `json:"cold_start_min_ms"`
	ColdMaxMS float64   `json:"cold_start_max_ms"`
	ColdAllMS []float64 `json:"cold_start_all_ms"`
	Sandbox   bool      `json:"sandbox"`
	// VsDirect divides this row's figures by the direct row's (absent on
	// the direct row itself).
	VsDirect *wrappedRatios `json:"vs_direct,omitempty"`
}

// wrappedRatios are a wrapped row's figures ÷ the direct row's.
type wrappedRatios struct {
	ColdStart float64 `json:"cold_start_median"`
	P50       float64 `json:"p50"`
	P99       float64 `json:"p99"`
	CallsPerS float64 `json:"calls_per_s"`
	CPU       float64 `json:"cpu_per_call"`
	PeakRSS   float64 `json:"peak_rss"`
}

// directName labels the row of the server run directly by the load client.
const directName = "direct"

// wrappedSpecs returns the servers of the wrapped section: server-everything
// run directly, then plughost serving a directory that holds only its
// declaration, in each variant (sandboxed, and not).
func wrappedSpecs(cfg *config) ([]serverSpec, error) {
	dir := filepath.Join(cfg.work, "wrapped-plugins")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	decl, err := json.Marshal(map[string]any{"command": cfg.node, "args": []string{cfg.everything, "stdio"}})
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "everything.mcp.json"), decl, 0o644); err != nil {
		return nil, err
	}
	const arg, prefix = "message", "Echo: " // dist/tools/echo.js
	out := []serverSpec{{Name: directName, EchoArg: arg, EchoPrefix: prefix, Command: func(string) []string {
		return []string{cfg.node, cfg.everything, "stdio"}
	}}}
	for _, v := range cfg.variants {
		sp := cfg.plughost(v.name, v.args, dir)
		// The server's HOME (its data directory) and the host's state under
		// the scratch directory, not the user's.
		sp.Env = []string{"XDG_DATA_HOME=" + filepath.Join(cfg.work, "data"), "XDG_STATE_HOME=" + filepath.Join(cfg.work, "state")}
		sp.EchoArg, sp.EchoPrefix = arg, prefix
		out = append(out, sp)
	}
	return out, nil
}

// benchStartup starts sp's process runs times over stdio and measures exec →
// initialize → a tools/list holding echo, stopping the process after each.
func benchStartup(ctx context.Context, cfg *config, sp serverSpec, runs int) (latencies, error) {
	var lat latencies
	for range runs {
		d, err := startOnce(ctx, cfg, sp, "echo", 30*time.Second)
		if err != nil {
			return nil, err
		}
		lat = append(lat, d)
	}
	return lat, nil
}

// startOnce starts sp's process over stdio, measures exec → initialize → a
// tools/list holding tool (waiting at most limit for it), and stops the
// process.
func startOnce(ctx context.Context, cfg *config, sp serverSpec, tool string, limit time.Duration) (time.Duration, error) {
	s, err := startServer(ctx, sp, stdio, cfg.work)
	if err != nil {
		return 0, err
	}
	if _, err := initialize(ctx, s.conn); err != nil {
		s.stop()
		return 0, fmt.Errorf("%w (stderr: %s)", err, s.stderrTail())
	}
	if _, err := waitForTools(ctx, s.conn, limit, hasTool(tool)); err != nil {
		s.stop()
		return 0, fmt.Errorf("%w (stderr: %s)", err, s.stderrTail())
	}
	d := time.Since(s.start)
	return d, s.stop()
}

// benchWrapped measures each server of wrappedSpecs: cold start, then calls.
func benchWrapped(ctx context.Context, cfg *config) ([]wrappedFigures, error) {
	sps, err := wrappedSpecs(cfg)
	if err != nil {
		return nil, err
	}
	var out []wrappedFigures
	for i, sp := range sps {
		fmt.Fprintf(os.Stderr, "bench: wrapped server-everything: %s\n", sp.Name)
		w := wrappedFigures{ColdRuns: cfg.coldRuns, Sandbox: sp.Host && cfg.sandbox && len(cfg.variants[i-1].args) == 0}
		lat, err := benchStartup(ctx, cfg, sp, cfg.coldRuns)
		if err != nil {
			return nil, fmt.Errorf("%s, cold start: %w", sp.Name, err)
		}
		w.ColdP50ms = float64(lat.quantile(0.5)) / 1e6
		w.ColdMinMS = float64(lat.quantile(0)) / 1e6
		w.ColdMaxMS = float64(lat.quantile(1)) / 1e6
		for _, d := range lat {
			w.ColdAllMS = append(w.ColdAllMS, float64(d)/1e6)
		}
		if w.callFigures, err = benchCalls(ctx, cfg, sp, stdio); err != nil {
			return nil, fmt.Errorf("%s, calls: %w", sp.Name, err)
		}
		if i > 0 {
			d := &out[0]
			w.VsDirect = &wrappedRatios{
				ColdStart: ratio(w.ColdP50ms, d.ColdP50ms),
				P50:       ratio(w.P50us, d.P50us),
				P99:       ratio(w.P99us, d.P99us),
				CallsPerS: ratio(w.CallsPerS, d.CallsPerS),
				CPU:       ratio(w.CPUus, d.CPUus),
				PeakRSS:   ratio(w.PeakMiB, d.PeakMiB),
			}
		}
		out = append(out, w)
	}
	return out, nil
}
