package pluginproto_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/pluginproto"
)

// Every level has MCP's name, in MCP's order, and reads back as itself.
func TestLevelNames(t *testing.T) {
	t.Parallel()
	levels := []pluginproto.Level{
		pluginproto.LevelDebug, pluginproto.LevelInfo, pluginproto.LevelNotice, pluginproto.LevelWarning,
		pluginproto.LevelError, pluginproto.LevelCritical, pluginproto.LevelAlert, pluginproto.LevelEmergency,
	}
	var names []string
	for i, l := range levels {
		names = append(names, l.String())
		if i > 0 && l <= levels[i-1] {
			t.Errorf("%v is not above %v", l, levels[i-1])
		}
		back, err := pluginproto.ParseLevel(l.String())
		if err != nil || back != l {
			t.Errorf("ParseLevel(%q) = %v, %v; want %v", l.String(), back, err, l)
		}
	}
	want := []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
}

// A name MCP does not know is an error, never a panic; a name of another
// logging system gets the MCP name in the error, and no guess.
func TestParseLevelRefusesOtherNames(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"warn":    `pluginproto: unknown log level "warn": MCP calls it "warning"`,
		"fatal":   `pluginproto: unknown log level "fatal": MCP calls it "critical"`,
		"verbose": `pluginproto: unknown log level "verbose"; want one of debug, info, notice, warning, error, critical, alert, emergency`,
		"":        `pluginproto: unknown log level ""; want one of debug, info, notice, warning, error, critical, alert, emergency`,
	}
	for in, want := range tests {
		l, err := pluginproto.ParseLevel(in)
		if err == nil || err.Error() != want || l != pluginproto.LevelDebug {
			t.Errorf("ParseLevel(%q) = %v, %v; want the error %q", in, l, err, want)
		}
	}
	if l, err := pluginproto.ParseLevel(" Warning "); err != nil || l != pluginproto.LevelWarning {
		t.Errorf("ParseLevel(\" Warning \") = %v, %v; want warning (case and spaces do not matter)", l, err)
	}
}

// A Level reads and writes as its MCP name, in JSON say; an unknown name
// fails the decoding and leaves the level as it was.
func TestLevelAsText(t *testing.T) {
	t.Parallel()
	var cfg struct{ Level pluginproto.Level }
	if err := json.Unmarshal([]byte(`{"Level":"notice"}`), &cfg); err != nil || cfg.Level != pluginproto.LevelNotice {
		t.Fatalf("decoding notice: %v, %v", cfg.Level, err)
	}
	if b, err := json.Marshal(cfg); err != nil || string(b) != `{"Level":"notice"}` {
		t.Errorf("encoding: %s, %v", b, err)
	}
	err := json.Unmarshal([]byte(`{"Level":"warn"}`), &cfg)
	if err == nil || !strings.Contains(err.Error(), `MCP calls it "warning"`) || cfg.Level != pluginproto.LevelNotice {
		t.Errorf("decoding warn: %v, level %v; want an error and notice kept", err, cfg.Level)
	}
}

// A Level made by conversion beyond the constants is sent as emergency,
// without a panic.
func TestLevelOutOfRange(t *testing.T) {
	t.Parallel()
	p := pluginproto.New("test", "0")
	p.AddTool(pluginproto.Tool{Name: "t"}, func(_ context.Context, r *pluginproto.Request) (*pluginproto.Result, error) {
		r.Log(pluginproto.Level(200), "odd")
		r.Log(pluginproto.LevelEmergency+1, "odd")
		return pluginproto.TextResult("ok"), nil
	})
	var got []string
	_, err := pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{Tool: "t", Log: func(level, _ string, data json.RawMessage) {
		got = append(got, level+" "+string(data))
	}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{`emergency "odd"`, `emergency "odd"`}, got); diff != "" {
		t.Errorf("logs (-want +got):\n%s", diff)
	}
	if s := fmt.Sprint(pluginproto.Level(9)); s != "emergency" {
		t.Errorf("Level(9) prints %q", s)
	}
}
