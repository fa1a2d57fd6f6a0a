package secrets

import (
	"context"
	"strings"
	"testing"

	"github.com/plughost/plughost/pluginproto"
)

// typicalArguments and typicalResult are a call's arguments and result
// of the size most tool calls have: a few fields, and a text of about
// 1 KB (a search's hits).
const typicalArguments = `{"query":"weather in Paris tomorrow","limit":10,"units":"metric","include_hourly":false}`

var typicalResult = `{"content":[{"type":"text","text":` +
	`"1. Paris forecast: light rain in the morning, 14 °C, wind 12 km/h from the south-west.\n` +
	strings.Repeat(`2. Météo-France bulletin for Île-de-France: showers easing by afternoon; see the access guide for the API.\n`, 8) +
	`"}],"structuredContent":{"hits":10,"source":"open-meteo","cached":true},"isError":false}`

func benchmarkHook(b *testing.B, q *pluginproto.HookRequest) {
	g := guard(b, Settings{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		a, err := g.Hook(ctx, q)
		if err != nil || a.Decision != pluginproto.HookPass {
			b.Fatalf("%+v %v", a, err)
		}
	}
}

func BenchmarkBeforeCallTypical(b *testing.B) {
	benchmarkHook(b, call(pluginproto.BeforeCall, typicalArguments, ""))
}

func BenchmarkAfterCallTypical(b *testing.B) {
	b.SetBytes(int64(len(typicalResult)))
	benchmarkHook(b, call(pluginproto.AfterCall, typicalArguments, typicalResult))
}

// BenchmarkLoadRules is the plugin's start: gitleaks' TOML read, 217
// rules compiled, gates derived.
func BenchmarkLoadRules(b *testing.B) {
	for b.Loop() {
		if _, err := Default(); err != nil {
			b.Fatal(err)
		}
	}
}
