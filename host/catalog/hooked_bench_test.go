package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/config"
	hookchain "github.com/plughost/plughost/host/hooks"
	"github.com/plughost/plughost/host/tool"
)

// passAsker answers every question pass at once, in process: what a
// chain costs the catalog, without a plugin's round trip (the contract's
// own benchmark, in host/pluginclient, measures that).
type passAsker struct{}

var passAnswer = &tool.HookAnswer{Decision: tool.HookPass}

func (passAsker) AskHook(context.Context, string, *tool.HookCall) (*tool.HookAnswer, error) {
	return passAnswer, nil
}

// BenchmarkCallWithHooks is one call through the catalog without hooks
// against one through hooks at before_call and after_call, each iteration
// one of each, alternately (as BenchmarkCallWithRules): one pass-through
// hook, three, and three whose match selects nothing. "ns/call" and
// "off-ns/call" are each call's time; "added-ns" what the hooks add:
//
//	go test -run '^$' -bench CallWithHooks -benchmem ./host/catalog
func BenchmarkCallWithHooks(b *testing.B) {
	for _, tc := range []struct {
		name  string
		n     int
		match string
	}{
		{"one pass", 1, ""},
		{"three pass", 3, ""},
		{"three matching nothing", 3, "item.plugin == 'vault'"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var blocks []config.Hook
			for i := range tc.n {
				blocks = append(blocks, config.Hook{Name: fmt.Sprintf("h%d", i), Plugin: "guards", On: []string{"before_call", "after_call"},
					Match: tc.match, Mode: "enforce", OnError: "refuse"})
			}
			chain, err := hookchain.New(blocks, passAsker{}, &hookchain.Options{Logger: hclog.NewNullLogger()})
			if err != nil {
				b.Fatal(err)
			}
			off, on := benchCatalog(b, nil), benchCatalog(b, chain)
			call := &tool.Call{Name: "read_file", Arguments: json.RawMessage(`{"path":"notes/today.txt","limit":20}`)}
			ctx := context.Background()
			once := func(c *Catalog) func() {
				return func() {
					if _, err := c.CallTool(ctx, call); err != nil {
						b.Fatal(err)
					}
				}
			}
			alternate(b, once(off), once(on))
		})
	}
}

// benchCatalog is a catalog of BenchmarkCallToolRoute's tool, served by
// a tool.Starter, with hooks h.
func benchCatalog(b *testing.B, h tool.Hooks) *Catalog {
	c := New(&Options{Logger: hclog.NewNullLogger(), Hooks: h})
	b.Cleanup(c.Close)
	result := tool.TextResult("ok")
	p := &fakeProvider{name: "files", tools: []tool.Def{toolDef("read_file",
		`{"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"integer","minimum":1}},"required":["path"]}`)},
		call: func(context.Context, *tool.Call) (json.RawMessage, error) { return result, nil }}
	c.Set(&inlineStarter{p})
	return c
}

// inlineStarter answers a call as it starts it, as a plugin's provider
// (a tool.Starter) does from its stream reader: so the calls without
// hooks take no goroutine, and the figures show the hand-offs hooks add.
type inlineStarter struct{ *fakeProvider }

func (s *inlineStarter) StartCall(ctx context.Context, c *tool.Call, done func(json.RawMessage, error)) {
	done(s.call(ctx, c))
}
