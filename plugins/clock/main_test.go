package main

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/plughost/plughost/pluginproto"
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
			raw, err := p.CallTool(t.Context(), &pluginproto.CallRequest{Tool: "get_current_time", Arguments: json.RawMessage(tc.args)})
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

// TestStructuredContentMatchesOutputSchema validates a real result against
// the outputSchema the tool advertises, as a strict client would.
func TestStructuredContentMatchesOutputSchema(t *testing.T) {
	t.Parallel()
	p := newPlugin(time.Now)
	var tool struct {
		OutputSchema json.RawMessage `json:"outputSchema"`
	}
	if err := json.Unmarshal(p.Tools()[0], &tool); err != nil {
		t.Fatal(err)
	}
	schemaDoc, err := jsonschema.UnmarshalJSON(bytes.NewReader(tool.OutputSchema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("output.json", schemaDoc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("output.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"simple", "detailed"} {
		raw, err := p.CallTool(t.Context(), &pluginproto.CallRequest{Tool: "get_current_time", Arguments: json.RawMessage(`{"format":"` + format + `"}`)})
		if err != nil {
			t.Fatal(err)
		}
		var res struct {
			StructuredContent json.RawMessage `json:"structuredContent"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			t.Fatal(err)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(res.StructuredContent))
		if err != nil {
			t.Fatal(err)
		}
		if err := schema.Validate(inst); err != nil {
			t.Errorf("%s: structuredContent does not match outputSchema: %v", format, err)
		}
	}
}
