package catalog

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/access"
	"github.com/plughost/plughost/host/tool"
)

// benchRules are the two rules: only the writers group calls
// files_write, and never with a path outside /srv.
var benchRules = []access.Source{
	{Name: "only writers write", Deny: true, Expr: `item.name == 'files_write' && !(has(caller.claims.groups) && 'writers' in caller.claims.groups)`},
	{Name: "writes stay in /srv", Deny: true, Expr: `item.name == 'files_write' && !arguments.path.startsWith('/srv/')`},
}

func benchGuard(b *testing.B) tool.Guard {
	rs, err := access.Compile(benchRules)
	if err != nil {
		b.Fatal(err)
	}
	return rs.For(&tool.Caller{Subject: "alice", Claims: map[string]any{"groups": []any{"writers"}}})
}

// BenchmarkCallWithRules is one call through the catalog without access
// rules against one with the two rules above (the arguments decided by CEL
// at each call, the tool's visibility read from the snapshot's view).
// Each iteration makes one call of each, alternately, so that both see
// the same load on a shared machine; "ns/call" and "off-ns/call" are each
// call's, and "vs-off" their ratio, what the rules cost a call:
//
//	go test -run '^$' -bench 'CallWithRules|ListWithRules' -benchmem ./host/catalog
func BenchmarkCallWithRules(b *testing.B) {
	c := New(&Options{Logger: hclog.NewNullLogger()})
	defer c.Close()
	c.Set(newProvider("files", "files_write", "files_read"))
	args := json.RawMessage(`{"path":"/srv/data/report.txt","content":"hello"}`)
	g := benchGuard(b)
	call := func(g tool.Guard) {
		if _, err := c.CallTool(b.Context(), &tool.Call{Name: "files_write", Arguments: args, Guard: g}); err != nil {
			b.Fatal(err)
		}
	}
	alternate(b, func() { call(nil) }, func() { call(g) })
}

// alternate runs off and on by turns, b.N times each, and reports each
// one's time, their ratio (vs-off) and what on adds (added-ns).
func alternate(b *testing.B, off, on func()) {
	var offTime, onTime time.Duration
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		off()
		t1 := time.Now()
		on()
		offTime, onTime = offTime+t1.Sub(t0), onTime+time.Since(t1)
	}
	n := float64(b.N)
	b.ReportMetric(float64(onTime.Nanoseconds())/n, "ns/call")
	b.ReportMetric(float64(offTime.Nanoseconds())/n, "off-ns/call")
	b.ReportMetric(float64(onTime)/float64(offTime), "vs-off")
	b.ReportMetric(float64((onTime-offTime).Nanoseconds())/n, "added-ns")
}

// BenchmarkListWithRules lists 1000 tools (10 pages of 100) without rules,
// alternately with the two rules: with the caller's view kept (every list
// but the first after a change), and with the view computed afresh (the
// first list of a caller after a change: 1000 evaluations).
func BenchmarkListWithRules(b *testing.B) {
	c := catalogOf1000(b)
	g := benchGuard(b)
	b.Run("view kept", func(b *testing.B) {
		alternate(b, func() { listAll(b, c, nil) }, func() { listAll(b, c, g) })
	})
	b.Run("view computed", func(b *testing.B) {
		alternate(b, func() { listAll(b, c, nil) }, func() {
			c.snap.Load().views = views{} // as after a change
			listAll(b, c, g)
		})
	})
}
