package streamable

import (
	"slices"
	"testing"

	"github.com/plughost/plughost/host/mcp/internal/mcptest"
	"github.com/plughost/plughost/host/oauth"
	"github.com/plughost/plughost/host/oauth/oauthtest"
)

// BenchmarkHTTPAuth is BenchmarkHTTPCall's stateless tools/call (one
// request, one call) with authorization off, with the static token
// (--token: a constant-time compare), and with OAuth (a JWT access token
// of host/oauth/oauthtest, ES256, checked at every request: signature
// against the issuer's cached JWKS, iss, aud, exp, scope). The three run
// in the same process, one server each, and each with authorization
// reports its ns/op over off's as "vs-off" (over the median of off's runs
// with -count): the cost of checking a caller:
//
//	go test -run '^$' -bench HTTPAuth -benchmem ./host/mcp/streamable
func BenchmarkHTTPAuth(b *testing.B) {
	as := oauthtest.New(b)
	const resource = "https://mcp.example.com/mcp"
	v, err := oauth.New(&oauth.Options{Issuers: []string{as.URL}, Resource: resource, Scopes: []string{"mcp:tools"}})
	if err != nil {
		b.Fatal(err)
	}
	if err := v.Prefetch(b.Context()); err != nil {
		b.Fatal(err)
	}
	jwt := as.Mint(b, oauthtest.Token{Audience: resource, Scope: "mcp:tools", Subject: "alice", ID: "bench"})
	const static = "bench-static-token"

	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	var offs []float64 // off's ns/op, each run's, which the others are measured against
	for _, c := range []struct {
		name  string
		opts  *Options
		token string
	}{
		{"off", &Options{RateLimit: -1}, ""},
		{"token", &Options{RateLimit: -1, Token: static}, static},
		{"oauth", &Options{RateLimit: -1, OAuth: v}, jwt},
	} {
		b.Run(c.name, func(b *testing.B) {
			_, post := benchServerWith(b, mcptest.Echo{}, nil, c.opts)
			h := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}
			if c.token != "" {
				h["Authorization"] = "Bearer " + c.token
			}
			b.ReportAllocs()
			for b.Loop() {
				post(b, h, body)
			}
			ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			if c.token == "" {
				offs = append(offs, ns)
			} else if len(offs) > 0 {
				b.ReportMetric(ns/median(offs), "vs-off")
			}
		})
	}
}

// median is the middle of xs (the mean of the two middle ones for an even
// count); xs is sorted in place.
func median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	return (xs[(n-1)/2] + xs[n/2]) / 2
}
