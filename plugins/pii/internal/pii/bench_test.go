package pii

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/plughost/plughost/pluginproto"
)

// typicalResult is a tool result of about 1 KB with no personal data
// but the digits, dots and @ of ordinary text (versions, dates, handles).
var typicalResult = `{"content":[{"type":"text","text":` +
	`"Release 1.22.3 was tagged on 2026-11-28 at 12:30 by @octo (build 4815162342).\n` +
	strings.Repeat(`The deploy of service api-gateway finished in 42.7 s with 3 warnings; see run 918273 for the log.\n`, 9) +
	`"}],"structuredContent":{"runs":10,"ok":true},"isError":false}`

func BenchmarkAfterCallTypical(b *testing.B) {
	g := NewGuard(Settings{Region: "US"})
	q := &pluginproto.HookRequest{Point: pluginproto.AfterCall, Result: json.RawMessage(typicalResult)}
	ctx := context.Background()
	b.SetBytes(int64(len(typicalResult)))
	b.ReportAllocs()
	for b.Loop() {
		if a, err := g.Hook(ctx, q); err != nil || a.Decision != pluginproto.HookPass {
			b.Fatalf("%+v %v", a, err)
		}
	}
}
