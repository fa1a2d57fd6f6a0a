package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// onDemandFigures: the figures of the instant-catalog issue (11) with n
// plugins of ten tools each, sandboxed when the sandbox is present. A
// client initializes and lists tools at once; the host answers the first
// tools/list only when the catalog is complete.
type onDemandFigures struct {
	Plugins int `json:"plugins"`
	// ColdReadyMS: exec of plughost → the first tools/list, complete, with
	// an empty catalog cache (every plugin starts; plugins eager).
	ColdReadyMS float64 `json:"cold_cache_ready_ms"`
	// WarmReadyMS: the same with the cache the cold run left (eager).
	WarmReadyMS float64 `json:"warm_cache_ready_ms"`
	// LazyReadyMS: the same with the cache and every plugin lazy.
	LazyReadyMS float64 `json:"lazy_warm_ready_ms"`
	// LazyIdleMiB: the resident memory of plughost and every process under
	// it, lazy with a warm cache, once the list is complete (no plugin has
	// been called).
	LazyIdleMiB float64 `json:"lazy_idle_rss_mib"`
	// FirstCall*: a call to each of FirstCalls stopped lazy plugins, one
	// after the other (each starts its plugin).
	FirstCalls     int     `json:"first_calls"`
	FirstCallP50ms float64 `json:"first_call_p50_ms"`
	FirstCallMaxMS float64 `json:"first_call_max_ms"`
}

// benchOnDemand runs plughost three times on n links of tenplugin, with
// one catalog cache: cold, warm, then lazy and warm.
func benchOnDemand(ctx context.Context, cfg *config, v variant, n, firstCalls int) (onDemandFigures, error) {
	f := onDemandFigures{Plugins: n}
	dir, err := os.MkdirTemp(cfg.work, fmt.Sprintf("ondemand%d-", n))
	if err != nil {
		return f, err
	}
	defer os.RemoveAll(dir)
	plugins := filepath.Join(dir, "plugins")
	if err := os.Mkdir(plugins, 0o755); err != nil {
		return f, err
	}
	for i := range n {
		if err := linkOrCopy(filepath.Join(cfg.binDir, "tenplugin"), filepath.Join(plugins, fmt.Sprintf("p%03d", i))); err != nil {
			return f, err
		}
	}
	lazy := filepath.Join(dir, "lazy.hcl")
	if err := os.WriteFile(lazy, []byte("plugins {\n  start = \"lazy\"\n}\n"), 0o644); err != nil {
		return f, err
	}
	env := []string{"XDG_CACHE_HOME=" + filepath.Join(dir, "cache")}
	run := func(extra []string, then func(s *server) error) (float64, error) {
		spec := cfg.plughost(v.name, append(append([]string(nil), v.args...), extra...), plugins)
		spec.Env = env
		s, err := startServer(ctx, spec, stdio, cfg.work)
		if err != nil {
			return 0, err
		}
		defer s.stop()
		if _, err := initialize(ctx, s.conn); err != nil {
			return 0, err
		}
		names, _, err := listToolsPages(ctx, s.conn)
		if err != nil {
			return 0, err
		}
		ready := float64(time.Since(s.start)) / 1e6
		if len(names) != 10*n {
			return 0, fmt.Errorf("the first tools/list holds %d tools, want %d (stderr: %s)", len(names), 10*n, s.stderrTail())
		}
		if then != nil {
			if err := then(s); err != nil {
				return 0, err
			}
		}
		return ready, s.stop()
	}
	if f.ColdReadyMS, err = run(nil, nil); err != nil {
		return f, fmt.Errorf("cold cache: %w", err)
	}
	if f.WarmReadyMS, err = run(nil, nil); err != nil {
		return f, fmt.Errorf("warm cache: %w", err)
	}
	f.FirstCalls = min(firstCalls, n)
	f.LazyReadyMS, err = run([]string{"--config", lazy}, func(s *server) error {
		f.LazyIdleMiB = mib(treeRSS(s.pid()))
		lat := make(latencies, f.FirstCalls)
		for i := range lat {
			call := newEchoCall(fmt.Sprintf("p%03d_t0", i), 8)
			t := time.Now()
			resp, err := s.conn.call(ctx, "tools/call", call.params)
			if err != nil {
				return err
			}
			lat[i] = time.Since(t)
			if err := call.check(resp); err != nil {
				return err
			}
		}
		f.FirstCallP50ms = float64(lat.quantile(0.5)) / 1e6
		f.FirstCallMaxMS = float64(lat.quantile(1)) / 1e6
		return nil
	})
	if err != nil {
		return f, fmt.Errorf("lazy: %w", err)
	}
	return f, nil
}

// treeRSS is the resident memory of pid and every process under it, in bytes.
func treeRSS(pid int) int64 {
	total, _ := statusKB(pid, "VmRSS")
	for _, d := range descendants(pid) {
		if v, err := statusKB(d, "VmRSS"); err == nil {
			total += v
		}
	}
	return total
}
