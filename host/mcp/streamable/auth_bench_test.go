package streamable

import (
	"testing"
	"time"

	"github.com/plughost/plughost/host/mcp/internal/mcptest"
	"github.com/plughost/plughost/host/oauth"
	"github.com/plughost/plughost/host/oauth/oauthtest"
)

// BenchmarkHTTPAuth is BenchmarkHTTPCall's stateless tools/call (one
// request, one call) with authorization on against it off: with the
// static token (--token: a constant-time compare), and with OAuth (a JWT
// access token of host/oauth/oauthtest, ES256: its signature, iss, aud
// and exp checked once, then the verified token reused, its scopes
// checked at every request: host/oauth's VerifiedTTL). Each
// iteration makes one call to a server without authorization and one to a
// server with it, alternately, so that both see the same load on a shared
// machine; ns/op and allocs/op are the pair's, "ns/call" and
// "off-ns/call" each call's, and "vs-off" their ratio, the cost of
// checking a caller:
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
	for _, c := range []struct {
		name  string
		opts  *Options
		token string
	}{
		{"token", &Options{RateLimit: -1, Token: static}, static},
		{"oauth", &Options{RateLimit: -1, OAuth: v}, jwt},
	} {
		b.Run(c.name, func(b *testing.B) {
			_, off := benchServerWith(b, mcptest.Echo{}, nil, &Options{RateLimit: -1})
			_, on := benchServerWith(b, mcptest.Echo{}, nil, c.opts)
			h := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}
			auth := map[string]string{"Authorization": "Bearer " + c.token}
			for k, v := range h {
				auth[k] = v
			}
			var offTime, onTime time.Duration
			b.ReportAllocs()
			for b.Loop() {
				t0 := time.Now()
				off(b, h, body)
				t1 := time.Now()
				on(b, auth, body)
				offTime, onTime = offTime+t1.Sub(t0), onTime+time.Since(t1)
			}
			n := float64(b.N)
			b.ReportMetric(float64(onTime.Nanoseconds())/n, "ns/call")
			b.ReportMetric(float64(offTime.Nanoseconds())/n, "off-ns/call")
			b.ReportMetric(float64(onTime)/float64(offTime), "vs-off")
		})
	}
}
