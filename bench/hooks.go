package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The hooks section (issue 33): what the operator's guardrails add to a
// call. plughost serves echo with a pass-through hook plugin (passhook)
// beside it in every row, so the rows differ only in the hooks block:
// none; one hook at before_call; three at before_call; one at
// before_call and after_call; three whose match selects nothing. Each
// row is the calls section's load over stdio; the table gives each row's
// p50 and CPU per call minus the no-hooks row's, which is run first and
// again last (the machine's drift shows between the two).

// hookRow is one hooks block to measure.
type hookRow struct {
	name  string
	hooks []string // one hook block each: on = [...], match
	match string
}

var hookRows = []hookRow{
	{name: "no hooks"},
	{name: "1 hook, before_call", hooks: []string{`["before_call"]`}},
	{name: "3 hooks, before_call", hooks: []string{`["before_call"]`, `["before_call"]`, `["before_call"]`}},
	{name: "1 hook, before+after", hooks: []string{`["before_call", "after_call"]`}},
	{name: "3 hooks, match nothing", hooks: []string{`["before_call", "after_call"]`, `["before_call", "after_call"]`, `["before_call", "after_call"]`},
		match: `item.name == "nothing"`},
	{name: "no hooks (again)"},
}

// hookFigures is one row's call figures and what it adds to the first row.
type hookFigures struct {
	Row       string      `json:"row"`
	Calls     callFigures `json:"calls"`
	AddedP50  float64     `json:"added_p50_us"`
	AddedCPU  float64     `json:"added_cpu_per_call_us"`
	AddedHost float64     `json:"added_host_cpu_per_call_us"`
}

// hooksConfig is the configuration file of one row.
func hooksConfig(row hookRow) string {
	if len(row.hooks) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("hooks {\n")
	for i, on := range row.hooks {
		fmt.Fprintf(&b, "  hook \"pass%d\" {\n    plugin = \"passhook\"\n    on = %s\n", i+1, on)
		if row.match != "" {
			fmt.Fprintf(&b, "    match = %q\n", row.match)
		}
		b.WriteString("  }\n")
	}
	b.WriteString("}\n")
	return b.String()
}

func benchHooks(ctx context.Context, cfg *config) ([]hookFigures, error) {
	dir := filepath.Join(cfg.work, "hooks-plugins")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for _, f := range []struct{ from, to string }{
		{filepath.Join(cfg.pluginsDir, "echo"), "echo"},
		{filepath.Join(cfg.binDir, "passhook"), "passhook"},
	} {
		if err := linkOrCopy(f.from, filepath.Join(dir, f.to)); err != nil {
			return nil, err
		}
	}
	var out []hookFigures
	for i, row := range hookRows {
		args := []string{}
		if c := hooksConfig(row); c != "" {
			path := filepath.Join(cfg.work, fmt.Sprintf("hooks-%d.hcl", i))
			if err := os.WriteFile(path, []byte(c), 0o644); err != nil {
				return nil, err
			}
			args = append(args, "--config", path)
		}
		fmt.Fprintf(os.Stderr, "bench: hooks: %s\n", row.name)
		sp := cfg.plughost("plughost "+row.name, args, dir)
		f, err := benchCalls(ctx, cfg, sp, stdio)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", row.name, err)
		}
		h := hookFigures{Row: row.name, Calls: f}
		if len(out) > 0 {
			h.AddedP50 = f.P50us - out[0].Calls.P50us
			h.AddedCPU = f.CPUus - out[0].Calls.CPUus
			h.AddedHost = f.HostCPUus - out[0].Calls.HostCPUus
		}
		out = append(out, h)
	}
	return out, nil
}
