package main

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/pluginproto/plugintest"
)

func TestGetCurrentTime(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, time.November, 22, 14, 3, 5, 0, time.FixedZone("CET", 3600))
	structured := func(text string) map[string]any {
		return map[string]any{
			"text": text, "iso8601": "2026-11-22T14:03:05+01:00", "weekday": "Sunday",
			"timezone": "CET", "utcOffset": "+01:00", "unix": float64(at.Unix()),
		}
	}
	detailed := "Sunday, 2026-11-22 14:03:05 CET (UTC+01:00), Unix time 1795352585"
	type result struct {
		Content           []map[string]any `json:"content"`
		StructuredContent map[string]any   `json:"structuredContent"`
		IsError           bool             `json:"isError"`
	}
	text := func(s string) []map[string]any { return []map[string]any{{"type": "text", "text": s}} }
	tests := map[string]struct {
		args string
		want result
	}{
		"default is simple": {`{}`, result{Content: text("2026-11-22 14:03:05"), StructuredContent: structured("2026-11-22 14:03:05")}},
		"simple":            {`{"format":"simple"}`, result{Content: text("2026-11-22 14:03:05"), StructuredContent: structured("2026-11-22 14:03:05")}},
		"detailed":          {`{"format":"detailed"}`, result{Content: text(detailed), StructuredContent: structured(detailed)}},
		"unknown format":    {`{"format":"roman"}`, result{Content: text(`argument "format" is "roman"; want "simple" or "detailed"`), IsError: true}},
		"format not string": {`{"format":1}`, result{Content: text(`invalid arguments for tool "get_current_time": json: cannot unmarshal number into Go struct field .format of type string`), IsError: true}},
	}
	p := newPlugin(func() time.Time { return at })
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			raw, err := pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{Tool: "get_current_time", Arguments: json.RawMessage(tc.args)})
			if err != nil {
				t.Fatal(err)
			}
			var got result
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

// TestThroughTheHostsChecks calls the tool through plugintest, which
// applies the host's checks: the definition is listed, the result's
// structuredContent conforms to the outputSchema the tool advertises (as
// a strict client requires), and arguments the inputSchema forbids never
// reach the handler (its own checks, tested above, are a second line).
func TestThroughTheHostsChecks(t *testing.T) {
	t.Parallel()
	p := newPlugin(time.Now)
	if err := plugintest.CheckTools(p); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"simple", "detailed"} {
		req := &pluginhost.CallRequest{Tool: "get_current_time", Arguments: json.RawMessage(`{"format":"` + format + `"}`)}
		if _, err := plugintest.CallTool(t.Context(), p, req); err != nil {
			t.Errorf("%s: %v", format, err)
		}
	}
	req := &pluginhost.CallRequest{Tool: "get_current_time", Arguments: json.RawMessage(`{"format":"roman"}`)}
	_, err := plugintest.CallTool(t.Context(), p, req)
	if want := `invalid arguments for tool "get_current_time": /format: value must be one of "simple", "detailed"`; !errors.Is(err, plugintest.ErrBadArguments) || err.Error() != want {
		t.Errorf("roman: %v, want the host's refusal %q", err, want)
	}
}
