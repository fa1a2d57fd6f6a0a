package metrics

import (
	"cmp"
	"math"
	"slices"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/plughost/plughost/host/mcp"
)

// The calls per tool as the console's page shows them, read back from the
// registry's own series (what a scrape would see), so the page and the
// Prometheus graphs never disagree.

// ToolCalls is one (tool, provider)'s calls since the host started.
type ToolCalls struct {
	Tool, Provider string
	Calls          uint64
	// Errors counts the calls that failed: every outcome but ok,
	// cancelled (the client's choice) and input_required (a step of a
	// stateless call).
	Errors uint64
	// P50 and P95 are estimated from the duration histogram as
	// Prometheus's histogram_quantile does (linear within a bucket);
	// zero without calls.
	P50, P95 time.Duration
}

// notErrors are the outcomes Errors leaves out.
var notErrors = map[string]bool{string(mcp.OutcomeOK): true, string(mcp.OutcomeCancelled): true, string(mcp.OutcomeInputRequired): true}

// Calls returns every (tool, provider) that was called, sorted by tool
// then provider. A call no provider served counts under tool "".
func (m *Metrics) Calls() []ToolCalls {
	byKey := map[[2]string]*ToolCalls{}
	get := func(labels []*dto.LabelPair) *ToolCalls {
		var k [2]string
		for _, l := range labels {
			switch l.GetName() {
			case "tool":
				k[0] = l.GetValue()
			case "provider":
				k[1] = l.GetValue()
			}
		}
		if byKey[k] == nil {
			byKey[k] = &ToolCalls{Tool: k[0], Provider: k[1]}
		}
		return byKey[k]
	}
	families, _ := m.reg.Gather() // an error names a collector that failed; ours are the counters above
	for _, f := range families {
		switch f.GetName() {
		case "plughost_tool_calls_total":
			for _, s := range f.GetMetric() {
				n := uint64(s.GetCounter().GetValue())
				if n == 0 {
					continue
				}
				tc := get(s.GetLabel())
				tc.Calls += n
				if !notErrors[outcomeOf(s.GetLabel())] {
					tc.Errors += n
				}
			}
		case "plughost_tool_call_duration_seconds":
			for _, s := range f.GetMetric() {
				if h := s.GetHistogram(); h.GetSampleCount() > 0 {
					tc := get(s.GetLabel())
					tc.P50, tc.P95 = quantile(h, 0.50), quantile(h, 0.95)
				}
			}
		}
	}
	out := make([]ToolCalls, 0, len(byKey))
	for _, tc := range byKey {
		out = append(out, *tc)
	}
	slices.SortFunc(out, func(a, b ToolCalls) int {
		return cmp.Or(cmp.Compare(a.Tool, b.Tool), cmp.Compare(a.Provider, b.Provider))
	})
	return out
}

func outcomeOf(labels []*dto.LabelPair) string {
	for _, l := range labels {
		if l.GetName() == "outcome" {
			return l.GetValue()
		}
	}
	return ""
}

// quantile estimates the q-quantile of h as histogram_quantile does: the
// bucket holding the rank, interpolated linearly between its bounds (the
// first bucket from 0; past the last finite bound, that bound).
func quantile(h *dto.Histogram, q float64) time.Duration {
	total := float64(h.GetSampleCount())
	rank := q * total
	lower, below := 0.0, 0.0
	for _, b := range h.GetBucket() {
		upper, count := b.GetUpperBound(), float64(b.GetCumulativeCount())
		if count >= rank {
			if math.IsInf(upper, 1) {
				return seconds(lower)
			}
			in := count - below
			if in == 0 {
				return seconds(upper)
			}
			return seconds(lower + (upper-lower)*(rank-below)/in)
		}
		lower, below = upper, count
	}
	return seconds(lower) // past every bucket: the last bound
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
