package manager

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/host/trust"
)

// passHooks passes every definition, as an in-process hook that answers
// at once: what screening itself costs.
type passHooks struct{}

func (passHooks) Has(p tool.HookPoint) bool { return p == tool.OnDefinitions }
func (passHooks) Apply(_ context.Context, q *tool.HookCall) (json.RawMessage, error) {
	return q.Definition, nil
}

// BenchmarkScreenDefs: screening a listing of 100 tools with one hook
// that passes everything at once (the hook's own round trip is
// host/pluginclient's benchmark).
func BenchmarkScreenDefs(b *testing.B) {
	s := &supervisor{name: "tp", m: &Manager{opts: Options{Hooks: passHooks{}}}}
	defs := make([]trust.Definition, 100)
	served := map[string]json.RawMessage{}
	for i := range defs {
		name := fmt.Sprintf("tool_%d", i)
		raw := json.RawMessage(fmt.Sprintf(`{"name":%q,"description":"Does thing %d.","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}`, name, i))
		defs[i] = trust.Definition{Kind: trust.KindTool, Name: name, JSON: raw}
		served[defs[i].Key()] = raw
	}
	b.ReportAllocs()
	for b.Loop() {
		if got := s.screenDefs(context.Background(), defs, served); len(got) != len(defs) {
			b.Fatalf("screened %d of %d", len(got), len(defs))
		}
	}
}
