package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
)

// compare prints every figure two runs share (the JSON files bench wrote),
// section by section, with after ÷ before: the "before and after in one
// table" an issue that changes a path asks for. Only numbers are compared;
// a figure one run lacks shows as "-". Rows of a section are matched by
// their identifying fields (server, transport, mode, row, plugins, name),
// so runs of different sections or versions still line up.
func compare(w io.Writer, beforePath, afterPath string) error {
	before, err := flattenReport(beforePath)
	if err != nil {
		return err
	}
	after, err := flattenReport(afterPath)
	if err != nil {
		return err
	}
	var keys []string
	seen := map[string]bool{}
	for _, f := range [][]figure{before, after} {
		for _, x := range f {
			if !seen[x.key] {
				seen[x.key] = true
				keys = append(keys, x.key)
			}
		}
	}
	b, a := index(before), index(after)
	fmt.Fprintf(w, "before: %s\nafter:  %s\n\n", beforePath, afterPath)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "figure\tbefore\tafter\tafter ÷ before\t")
	for _, k := range keys {
		bv, bok := b[k]
		av, aok := a[k]
		r := "-"
		if bok && aok && bv != 0 {
			r = fmt.Sprintf("%.2f", av/bv)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", k, number(bv, bok), number(av, aok), r)
	}
	return tw.Flush()
}

// figure is one number of a report, named by its path.
type figure struct {
	key   string
	value float64
}

func index(fs []figure) map[string]float64 {
	m := make(map[string]float64, len(fs))
	for _, f := range fs {
		m[f.key] = f.value
	}
	return m
}

func number(v float64, ok bool) string {
	switch {
	case !ok:
		return "-"
	case v == math.Trunc(v) && math.Abs(v) < 1e9:
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// skipped are the parts of a report that are not figures of the run: the
// machine, the settings, and lists of every sample (their summaries are
// figures of their own).
var skipped = []string{"machine", "settings", "sandbox", "all_ms", "cold_start_all_ms", "runs", "cold_runs", "processes"}

// rowKeys identify a row of a section, in the order they name it.
var rowKeys = []string{"name", "server", "transport", "mode", "row", "plugins"}

func flattenReport(path string) ([]figure, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []figure
	// Sections in a fixed order: the report's own (encoding/json loses it).
	for _, s := range []string{"calls", "grpc_floor", "cold_start", "scale", "on_demand", "wrapped", "install", "tool_search", "hooks", "targets"} {
		flatten(s, doc[s], &out)
	}
	return out, nil
}

func flatten(prefix string, v any, out *[]figure) {
	switch v := v.(type) {
	case float64:
		*out = append(*out, figure{prefix, v})
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			if !slices.Contains(skipped, k) {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			flatten(prefix+"."+k, v[k], out)
		}
	case []any:
		for i, e := range v {
			row, ok := e.(map[string]any)
			if !ok {
				continue
			}
			if prefix == "targets" { // a target's figure is its value
				if name, ok := row["name"].(string); ok {
					flatten("target: "+name, row["value"], out)
				}
				continue
			}
			flatten(prefix+"["+rowName(row, i)+"]", without(row, rowKeys), out)
		}
	}
}

// rowName names a row by its identifying fields.
func rowName(row map[string]any, i int) string {
	var parts []string
	for _, k := range rowKeys {
		switch x := row[k].(type) {
		case string:
			parts = append(parts, x)
		case float64:
			parts = append(parts, fmt.Sprintf("%s=%g", k, x))
		}
	}
	if len(parts) == 0 {
		return fmt.Sprint(i)
	}
	return strings.Join(parts, " ")
}

func without(row map[string]any, keys []string) map[string]any {
	out := make(map[string]any, len(row))
	for k, v := range row {
		if !slices.Contains(keys, k) {
			out[k] = v
		}
	}
	return out
}
