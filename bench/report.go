package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// report is everything one run measured; it is also the JSON written to
// bench/out.
type report struct {
	Date     string            `json:"date"`
	Quick    bool              `json:"quick"`
	Seconds  float64           `json:"seconds"`
	Machine  machine           `json:"machine"`
	Settings settings          `json:"settings"`
	Sandbox  bool              `json:"sandbox_present"`
	HTTP     bool              `json:"http_present"`
	Calls    []callFigures     `json:"calls"`
	GRPC     []grpcFigures     `json:"grpc_floor"`
	Cold     []coldFigures     `json:"cold_start"`
	Scale    []scaleFigures    `json:"scale"`
	OnDemand []onDemandFigures `json:"on_demand"`
	Wrapped  []wrappedFigures  `json:"wrapped"`
	// Install is nil when the section did not run.
	Install *installFigures `json:"install,omitempty"`
	// ToolSearch is nil when the section did not run.
	ToolSearch *toolSearchFigures `json:"tool_search,omitempty"`
	// Hooks are the hooks section's rows; nil when it did not run.
	Hooks []hookFigures `json:"hooks,omitempty"`
	// Rolling is the rolling section's figures; nil when it did not run.
	Rolling *rollingFigures `json:"rolling,omitempty"`
	// OTLP are the otlp section's rows (otlp.go); nil when it did not run.
	OTLP    []otlpFigures `json:"otlp,omitempty"`
	Targets []target      `json:"targets"`
}

type machine struct {
	CPU        string `json:"cpu"`
	Cores      int    `json:"cores"`
	OS         string `json:"os"`
	Go         string `json:"go"`
	LoadBefore string `json:"loadavg_before"`
	LoadAfter  string `json:"loadavg_after"`
}

type settings struct {
	TextBytes         int     `json:"text_bytes"`
	InFlight          int     `json:"in_flight"`
	SequentialCalls   int     `json:"sequential_calls"`
	Warmup            int     `json:"warmup_calls"`
	ThroughputSeconds float64 `json:"throughput_seconds"`
	ColdRuns          int     `json:"cold_runs"`
	ListRuns          int     `json:"list_runs"`
}

// target is one target of an issue (6: the first round; 16: one path for
// every request) and how this run fared.
type target struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"` // the measured ratio or figure
	Limit string  `json:"limit"`
	Met   *bool   `json:"met"` // nil: could not be evaluated in this run
	Note  string  `json:"note,omitempty"`
}

func (r *report) call(server string, tr transport) *callFigures {
	for i := range r.Calls {
		if r.Calls[i].Server == server && r.Calls[i].Transport == string(tr) {
			return &r.Calls[i]
		}
	}
	return nil
}

// host returns the figures of the first plughost row (the sandboxed one
// when there is a sandbox).
func (r *report) host(tr transport) *callFigures {
	for i := range r.Calls {
		if strings.HasPrefix(r.Calls[i].Server, "plughost") && r.Calls[i].Transport == string(tr) {
			return &r.Calls[i]
		}
	}
	return nil
}

func (r *report) grpc(mode string) *grpcFigures {
	for i := range r.GRPC {
		if r.GRPC[i].Mode == mode {
			return &r.GRPC[i]
		}
	}
	return nil
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// targets evaluates the issues' targets against a run's figures.
func targets(r *report) []target {
	var out []target
	add := func(name string, value float64, limit string, ok bool, evaluable bool, note string) {
		t := target{Name: name, Value: value, Limit: limit, Note: note}
		if evaluable {
			t.Met = &ok
		}
		out = append(out, t)
	}
	ph, gs, fl, mg := r.host(stdio), r.call("go-sdk", stdio), r.call("floor", stdio), r.call("mcp-go", stdio)
	if ph != nil && mg != nil {
		v := ratio(ph.CallsPerS, mg.CallsPerS)
		add("stdio calls/s at 16 in flight, plughost ÷ mcp-go (issues 16, 34)", v, "≥ 1.0", v >= 1.0, true, "")
	}
	hh, hg, hm := r.host(streamHTP), r.call("go-sdk", streamHTP), r.call("mcp-go", streamHTP)
	if hh != nil && hm != nil {
		v := ratio(hh.CallsPerS, hm.CallsPerS)
		add("HTTP calls/s at 16 in flight, plughost ÷ mcp-go (issues 16, 34)", v, "≥ 1.0", v >= 1.0, true, "")
	}
	if ph != nil && gs != nil {
		v := ratio(ph.P50us, gs.P50us)
		add("stdio sequential p50, plughost ÷ go-sdk (issues 6, 16)", v, "≤ 2.0", v <= 2.0, true, "")
		add("stdio sequential p50, plughost ÷ go-sdk (issue 34)", v, "≤ 1.5", v <= 1.5, true, "")
	}
	if ph != nil && fl != nil {
		v := ratio(ph.HostCPUus, fl.CPUus)
		add("host CPU per call (plugin excluded), plughost ÷ floor (issues 16, 34)", v, "≤ 3.0", v <= 3.0, true, "")
		if g := r.grpc("stream"); g != nil {
			v := ratio(ph.P50us, g.P50us+fl.P50us)
			add("stdio sequential p50, plughost ÷ (gRPC stream floor + stdio floor) (issue 6)", v, "≤ 1.5", v <= 1.5, true, "")
		}
	}
	if hh != nil && hg != nil {
		v := ratio(hh.CallsPerS, hg.CallsPerS)
		add("HTTP calls/s at 16 in flight, plughost ÷ go-sdk (issue 6)", v, "≥ 3.0", v >= 3.0, true, "")
	}
	for _, c := range r.Cold {
		if c.Sandbox {
			add("cold start with the sandbox, median ms (issue 6)", c.P50ms, "≤ 50", c.P50ms <= 50, true, "")
		} else if !r.Sandbox {
			add("cold start with the sandbox, median ms (issue 6)", c.P50ms, "≤ 50", c.P50ms <= 50, false, "no sandbox here: this is the figure without it")
		}
	}
	for _, s := range r.Scale {
		if s.Plugins != 100 {
			continue
		}
		add("100 plugins: host RSS MiB (host process alone) (issue 6)", s.HostRSSMiB, "≤ 150", s.HostRSSMiB <= 150, true, "")
		v := s.ListP50us / 1000
		add("100 plugins: full tools/list of 1000 tools, p50 ms (issue 6)", v, "≤ 2", v <= 2, true, "")
	}
	for _, f := range r.OnDemand {
		if f.Plugins != 100 {
			continue
		}
		add("100 plugins, warm catalog cache: start → complete first tools/list, ms (issues 11, 34)", f.WarmReadyMS, "≤ 50", f.WarmReadyMS <= 50, true, "")
		add("100 plugins, cold catalog cache: start → complete first tools/list, ms (issues 11, 34)", f.ColdReadyMS, "≤ 1500", f.ColdReadyMS <= 1500, true, "")
		add("100 lazy plugins idle: RSS of host and plugins, MiB (issue 11)", f.LazyIdleMiB, "≤ 100", f.LazyIdleMiB <= 100, true, "")
		note := ""
		if !r.Sandbox {
			note = "no sandbox here: this is the figure without it"
		}
		add("first call to a stopped sandboxed plugin, median ms (issue 11)", f.FirstCallP50ms, "≤ 60", f.FirstCallP50ms <= 60, r.Sandbox, note)
	}
	// Issue 34: a wrapped server's calls at near its own speed (the first
	// wrapped row: the sandboxed one when there is a sandbox).
	for _, w := range r.Wrapped {
		if w.VsDirect == nil {
			continue
		}
		add("wrapped server: calls/s at 16 in flight ÷ direct (issue 34)", w.VsDirect.CallsPerS, "≥ 0.5", w.VsDirect.CallsPerS >= 0.5, true, w.Server)
		add("wrapped server: sequential p50 ÷ direct (issue 34)", w.VsDirect.P50, "≤ 3.0", w.VsDirect.P50 <= 3, true, w.Server)
		add("wrapped server: CPU per call, all processes ÷ direct (issue 34)", w.VsDirect.CPU, "≤ 3.0", w.VsDirect.CPU <= 3, true, w.Server)
		break
	}
	if f := r.ToolSearch; f != nil {
		v := 100 * f.ListRatio
		add("tool search, 70 plugins: tools/list bytes in search mode, % of full mode (issue 19)", v, "≤ 5", v <= 5, true, "")
	}
	// Issue 33: a pass-through hook adds ≤ 50 µs to a call's p50 over
	// stdio, a chain of three ≤ 150 µs; hooks that match nothing, nothing
	// measurable (within the two no-hooks rows' drift).
	for _, h := range r.Hooks {
		switch h.Row {
		case "1 hook, before_call":
			add("stdio p50 added by one pass-through hook (issue 33)", h.AddedP50, "≤ 50 µs", h.AddedP50 <= 50, true, "")
		case "3 hooks, before_call":
			add("stdio p50 added by three pass-through hooks (issue 33)", h.AddedP50, "≤ 150 µs", h.AddedP50 <= 150, true, "")
		case "3 hooks, match nothing":
			drift := 0.0
			if n := len(r.Hooks); n > 1 {
				drift = r.Hooks[n-1].AddedP50
			}
			add("stdio p50 added by three hooks matching nothing (issue 33)", h.AddedP50, "≈ 0", true, false,
				fmt.Sprintf("the no-hooks rows differ by %+.1f µs", drift))
		}
	}
	return out
}

// printReport writes the human-readable table: the raw figures of every
// server, then one line per plughost figure with its ratio to each peer,
// then the targets.
func printReport(w io.Writer, r *report) {
	fmt.Fprintf(w, "plughost bench, %s, %s (%d cores), %s; load average before %s, after %s; quick=%v\n",
		r.Date, r.Machine.CPU, r.Machine.Cores, r.Machine.Go, r.Machine.LoadBefore, r.Machine.LoadAfter, r.Quick)
	fmt.Fprintf(w, "load: one client, %d-byte echo, %d sequential calls (after %d warm-up), then %d in flight for %.1fs; sandbox present: %v, HTTP present: %v\n\n",
		r.Settings.TextBytes, r.Settings.SequentialCalls, r.Settings.Warmup, r.Settings.InFlight, r.Settings.ThroughputSeconds, r.Sandbox, r.HTTP)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if len(r.Calls) > 0 {
		fmt.Fprintln(tw, "tools/call\tserver\tp50 µs\tp99 µs\tcalls/s\tCPU µs/call\thost CPU µs/call\tseq CPU µs/call\tpeak RSS MiB\thost peak MiB\tprocs\t")
		for _, c := range r.Calls {
			fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.1f\t%.0f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%d\t\n", c.Transport, c.Server, c.P50us, c.P99us, c.CallsPerS, c.CPUus, c.HostCPUus, c.SeqCPUus, c.PeakMiB, c.HostPeakMiB, c.Processes)
		}
		tw.Flush()
		fmt.Fprintln(w)
		// One line per plughost figure, with its ratio to each peer.
		for _, tr := range []transport{stdio, streamHTP} {
			for _, ph := range r.Calls {
				if !strings.HasPrefix(ph.Server, "plughost") || ph.Transport != string(tr) {
					continue
				}
				figs := []struct {
					name string
					get  func(*callFigures) float64
					unit string
				}{
					{"p50", func(c *callFigures) float64 { return c.P50us }, "µs"},
					{"p99", func(c *callFigures) float64 { return c.P99us }, "µs"},
					{"calls/s", func(c *callFigures) float64 { return c.CallsPerS }, ""},
					{"CPU/call", func(c *callFigures) float64 { return c.CPUus }, "µs"},
					{"host CPU/call", func(c *callFigures) float64 { return c.HostCPUus }, "µs"},
					{"peak RSS", func(c *callFigures) float64 { return c.PeakMiB }, "MiB"},
				}
				for _, f := range figs {
					line := fmt.Sprintf("%-5s %-16s %-13s %9.1f %-3s", tr, ph.Server, f.name, f.get(&ph), f.unit)
					for _, peer := range []string{"floor", "go-sdk", "mcp-go"} {
						if pc := r.call(peer, tr); pc != nil {
							line += fmt.Sprintf("  %s %.2f×", peer, ratio(f.get(&ph), f.get(pc)))
						}
					}
					fmt.Fprintln(w, line)
				}
			}
		}
		fmt.Fprintln(w)
	}
	if len(r.GRPC) > 0 {
		fmt.Fprintln(tw, "bare gRPC (unix socket)\tp50 µs\tp99 µs\tcalls/s\tclient CPU µs/call\t")
		for _, g := range r.GRPC {
			fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.0f\t%.1f\t\n", g.Mode, g.P50us, g.P99us, g.CallsPerS, g.ClientCPUus)
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	if len(r.Cold) > 0 {
		fmt.Fprintln(tw, "cold start (drop → list_changed)\tsandbox\truns\tmedian ms\tmin ms\tmax ms\t")
		for _, c := range r.Cold {
			fmt.Fprintf(tw, "%s\t%v\t%d\t%.1f\t%.1f\t%.1f\t\n", c.Server, c.Sandbox, c.Runs, c.P50ms, c.MinMS, c.MaxMS)
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	if len(r.Scale) > 0 {
		fmt.Fprintln(tw, "scale: plugins\ttools\tstart→ready ms\ttools/list p50 µs\tp99 µs\tpages\thost RSS MiB\thost peak MiB\tall peak MiB\t")
		for _, s := range r.Scale {
			fmt.Fprintf(tw, "%d\t%d\t%.0f\t%.0f\t%.0f\t%d\t%.1f\t%.1f\t%.1f\t\n", s.Plugins, s.Tools, s.ReadyMS, s.ListP50us, s.ListP99us, s.Pages, s.HostRSSMiB, s.HostPeakMiB, s.TreePeakMiB)
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	if len(r.OnDemand) > 0 {
		fmt.Fprintln(tw, "on demand: plugins\tcold cache → list ms\twarm cache → list ms\tlazy+warm → list ms\tlazy idle RSS MiB\tfirst calls\tfirst call p50 ms\tmax ms\t")
		for _, f := range r.OnDemand {
			fmt.Fprintf(tw, "%d\t%.0f\t%.0f\t%.0f\t%.1f\t%d\t%.1f\t%.1f\t\n", f.Plugins, f.ColdReadyMS, f.WarmReadyMS, f.LazyReadyMS, f.LazyIdleMiB, f.FirstCalls, f.FirstCallP50ms, f.FirstCallMaxMS)
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	if len(r.Wrapped) > 0 {
		fmt.Fprintln(tw, "wrapped: server-everything echo, stdio\tsandbox\tcold start median ms\tmin ms\tmax ms\tp50 µs\tp99 µs\tcalls/s\tCPU µs/call\thost CPU µs/call\tpeak RSS MiB\thost peak MiB\tprocs\t")
		for _, f := range r.Wrapped {
			fmt.Fprintf(tw, "%s\t%v\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.0f\t%.1f\t%.1f\t%.1f\t%.1f\t%d\t\n", f.Server, f.Sandbox, f.ColdP50ms, f.ColdMinMS, f.ColdMaxMS,
				f.P50us, f.P99us, f.CallsPerS, f.CPUus, f.HostCPUus, f.PeakMiB, f.HostPeakMiB, f.Processes)
		}
		tw.Flush()
		fmt.Fprintln(w)
		for _, f := range r.Wrapped {
			if f.VsDirect == nil {
				continue
			}
			v := f.VsDirect
			fmt.Fprintf(w, "wrapped %-16s ÷ %s:  cold start %.2f×  p50 %.2f×  p99 %.2f×  calls/s %.2f×  CPU/call %.2f×  peak RSS %.2f×\n",
				f.Server, directName, v.ColdStart, v.P50, v.P99, v.CallsPerS, v.CPU, v.PeakRSS)
		}
		fmt.Fprintln(w)
	}
	if r.Install != nil {
		printInstall(w, r.Install)
	}
	if r.ToolSearch != nil {
		printToolSearch(w, r.ToolSearch)
	}
	if len(r.Hooks) > 0 {
		fmt.Fprintln(tw, "hooks: echo over stdio, a pass-through hook plugin\tp50 µs\tp99 µs\tcalls/s\tCPU µs/call\thost CPU µs/call\tp50 added µs\tCPU added µs\thost CPU added µs\t")
		for _, f := range r.Hooks {
			c := f.Calls
			fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.0f\t%.1f\t%.1f\t%+.1f\t%+.1f\t%+.1f\t\n", f.Row, c.P50us, c.P99us, c.CallsPerS, c.CPUus, c.HostCPUus, f.AddedP50, f.AddedCPU, f.AddedHost)
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	if r.Rolling != nil {
		printRolling(w, r.Rolling)
	}
	if len(r.OTLP) > 0 {
		printOTLP(w, r.OTLP)
	}
	if len(r.Targets) > 0 {
		fmt.Fprintln(w, "targets:")
		for _, t := range r.Targets {
			verdict := "n/a"
			if t.Met != nil {
				verdict = map[bool]string{true: "met", false: "NOT MET"}[*t.Met]
			}
			line := fmt.Sprintf("  %-86s %8.2f  %-6s %s", t.Name, t.Value, t.Limit, verdict)
			if t.Note != "" {
				line += " (" + t.Note + ")"
			}
			fmt.Fprintln(w, line)
		}
	}
}
