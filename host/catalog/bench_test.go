package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/tool"
)

// BenchmarkListTools1000 lists 1000 tools from 10 providers, every page
// (10 pages of 100) per iteration.
func BenchmarkListTools1000(b *testing.B) {
	c := catalogOf1000(b)
	b.ReportAllocs()
	for b.Loop() {
		listAll(b, c, nil)
	}
}

// catalogOf1000 is a catalog of 1000 tools from 10 providers.
func catalogOf1000(b *testing.B) *Catalog {
	c := New(&Options{Logger: hclog.NewNullLogger()})
	b.Cleanup(c.Close)
	for p := range 10 {
		var names []string
		for t := range 100 {
			names = append(names, fmt.Sprintf("tool_%d_%03d", p, t))
		}
		c.Set(newProvider(fmt.Sprintf("p%d", p), names...))
	}
	return c
}

// listAll lists every page of c's tools as g sees them (nil: all), and
// fails unless they are 1000.
func listAll(b *testing.B, c *Catalog, g tool.Guard) {
	n, cursor := 0, ""
	for {
		page, next, err := c.ListToolsFor(g, cursor)
		if err != nil {
			b.Fatal(err)
		}
		n += len(page)
		if next == "" {
			break
		}
		cursor = next
	}
	if n != 1000 {
		b.Fatalf("listed %d tools", n)
	}
}

// BenchmarkCallToolRoute measures the catalog's share of a call: lookup,
// argument validation against a small schema, and hand-off to a provider
// that answers at once.
func BenchmarkCallToolRoute(b *testing.B) {
	c := New(&Options{Logger: hclog.NewNullLogger()})
	defer c.Close()
	result := tool.TextResult("ok")
	p := &fakeProvider{name: "files", tools: []tool.Def{toolDef("read_file",
		`{"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"integer","minimum":1}},"required":["path"]}`)},
		call: func(context.Context, *tool.Call) (json.RawMessage, error) { return result, nil }}
	for i := range 99 { // a catalog of 100 tools
		p.tools = append(p.tools, toolDef(fmt.Sprintf("other_%02d", i), objectSchema))
	}
	c.Set(&directProvider{p})
	call := &tool.Call{Name: "read_file", Arguments: json.RawMessage(`{"path":"notes/today.txt","limit":20}`)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := c.CallTool(ctx, call)
		if err != nil || len(res) != len(result) {
			b.Fatalf("%s %v", res, err)
		}
	}
}

// directProvider skips fakeProvider's call recording, which would
// dominate the benchmark.
type directProvider struct{ *fakeProvider }

func (d *directProvider) CallTool(ctx context.Context, c *tool.Call) (json.RawMessage, error) {
	return d.call(ctx, c)
}

// BenchmarkReadResourceTemplate measures the catalog's share of a read
// routed by template: 10 providers of 10 templates each, the URI matched
// by the last provider's last template, so every template is tried (and,
// with several providers, the overlap check runs too).
func BenchmarkReadResourceTemplate(b *testing.B) {
	c := New(&Options{Logger: hclog.NewNullLogger()})
	defer c.Close()
	result := json.RawMessage(`{"contents":[]}`)
	for p := range 10 {
		s := newServer(fmt.Sprintf("p%d", p))
		for t := range 10 {
			s.with(fmt.Sprintf("scheme%d-%d://{host}/{+path}", p, t))
		}
		s.read = func(context.Context, *tool.Read) (json.RawMessage, error) { return result, nil }
		c.Set(&directServer{s})
	}
	read := &tool.Read{URI: "scheme9-9://example/notes/today.txt"}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := c.ReadResource(ctx, read)
		if err != nil || len(res) != len(result) {
			b.Fatalf("%s %v", res, err)
		}
	}
}

// directServer skips fakeServer's recording of reads.
type directServer struct{ *fakeServer }

func (d *directServer) ReadResource(ctx context.Context, r *tool.Read) (json.RawMessage, error) {
	return d.read(ctx, r)
}

// BenchmarkSet100Providers measures publishing 100 providers of ten tools
// each, one Set after another, as a host publishing its catalog cache at
// start does.
func BenchmarkSet100Providers(b *testing.B) {
	providers := hundredProviders()
	b.ReportAllocs()
	for b.Loop() {
		c := New(&Options{Logger: hclog.NewNullLogger()})
		for _, p := range providers {
			c.Set(p)
		}
		c.Close()
	}
}

// BenchmarkSetAll100Providers is BenchmarkSet100Providers in one SetAll.
func BenchmarkSetAll100Providers(b *testing.B) {
	providers := hundredProviders()
	b.ReportAllocs()
	for b.Loop() {
		c := New(&Options{Logger: hclog.NewNullLogger()})
		c.SetAll(providers...)
		c.Close()
	}
}

// hundredProviders are 100 providers of ten tools each (p000_t0, ...).
func hundredProviders() []tool.Provider {
	providers := make([]tool.Provider, 100)
	for p := range providers {
		var names []string
		for t := range 10 {
			names = append(names, fmt.Sprintf("p%03d_t%d", p, t))
		}
		providers[p] = newProvider(fmt.Sprintf("p%03d", p), names...)
	}
	return providers
}
