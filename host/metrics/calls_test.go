package metrics

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/host/mcp"
)

// Calls reads the calls per tool back from the registry: counts, the
// failed ones (not cancelled ones), and percentiles interpolated within
// the duration histogram's buckets as histogram_quantile does.
func TestCalls(t *testing.T) {
	t.Parallel()
	m := New(nil)
	if got := m.Calls(); len(got) != 0 {
		t.Fatalf("Calls before any call = %+v, want none", got)
	}
	for range 8 {
		m.CallEnd(&mcp.CallEnd{Tool: "echo", Provider: "echo", Outcome: mcp.OutcomeOK, Duration: 3 * time.Millisecond})
	}
	m.CallEnd(&mcp.CallEnd{Tool: "echo", Provider: "echo", Outcome: mcp.OutcomeCancelled, Duration: 3 * time.Millisecond})
	m.CallEnd(&mcp.CallEnd{Tool: "echo", Provider: "echo", Outcome: mcp.OutcomeToolError, Duration: 20 * time.Millisecond})
	m.CallEnd(&mcp.CallEnd{Tool: "made-up", Outcome: mcp.OutcomeUnknownTool, Duration: time.Microsecond})
	got := m.Calls()
	// echo: 9 calls in (2.5 ms, 5 ms], 1 in (10 ms, 25 ms]: the median's
	// rank 5 lies 5/9 into the first, the 95th's 9.5 half-way into the
	// second.
	want := []ToolCalls{
		{Tool: "", Provider: "", Calls: 1, Errors: 1, P50: 250 * time.Microsecond, P95: 475 * time.Microsecond},
		{Tool: "echo", Provider: "echo", Calls: 10, Errors: 1, P50: 2500*time.Microsecond + 2500*time.Microsecond*5/9, P95: 17500 * time.Microsecond},
	}
	round := cmp.Transformer("µs", func(d time.Duration) time.Duration { return d.Round(time.Microsecond) })
	if diff := cmp.Diff(want, got, round); diff != "" {
		t.Errorf("Calls (-want +got):\n%s", diff)
	}
}
