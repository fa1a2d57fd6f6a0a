package catalog

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/host/tool"
)

// A tool's results are checked against its outputSchema: a result that
// breaks it (or has no structuredContent) is answered as an isError
// result naming each violation, and logged at WARN for the author; an
// isError result is exempt; a tool without outputSchema is not checked.
func TestOutputSchema(t *testing.T) {
	t.Parallel()
	const withOutput = `{"name":"convert","inputSchema":{"type":"object"},"outputSchema":{"type":"object",` +
		`"properties":{"count":{"type":"integer"},"unit":{"enum":["m","ft"]}},"required":["count"]}}`
	const without = `{"name":"convert","inputSchema":{"type":"object"}}`
	const prefix = `tool "convert" returned a result that breaks its outputSchema: `
	tests := map[string]struct {
		def    string
		result string
		want   string // the isError text the client gets; "" means the result as it is
	}{
		"conforms": {
			def:    withOutput,
			result: `{"content":[{"type":"text","text":"3 m"}],"structuredContent":{"count":3,"unit":"m"}}`,
		},
		"wrong type": {
			def:    withOutput,
			result: `{"content":[],"structuredContent":{"count":"3"}}`,
			want:   prefix + `structuredContent/count: must be integer, got string`,
		},
		"every violation": {
			def:    withOutput,
			result: `{"content":[],"structuredContent":{"unit":"yd"}}`,
			want: strings.TrimSuffix(prefix, " ") + "\n" +
				"- structuredContent/count: missing required property\n" +
				`- structuredContent/unit: value must be one of "m", "ft"`,
		},
		"not an object": {
			def:    withOutput,
			result: `{"content":[],"structuredContent":[1]}`,
			want:   prefix + `structuredContent: must be object, got array`,
		},
		"missing": {
			def:    withOutput,
			result: `{"content":[{"type":"text","text":"3 m"}]}`,
			want:   `tool "convert" returned no structuredContent, but its outputSchema requires structured results`,
		},
		"null": {
			def:    withOutput,
			result: `{"content":[],"structuredContent":null}`,
			want:   `tool "convert" returned no structuredContent, but its outputSchema requires structured results`,
		},
		"isError is exempt, without structuredContent": {
			def:    withOutput,
			result: `{"content":[{"type":"text","text":"no such unit"}],"isError":true}`,
		},
		"isError is exempt, with a wrong one": {
			def:    withOutput,
			result: `{"content":[],"structuredContent":{"count":"x"}, "isError" : true}`,
		},
		"isError false is not exempt": {
			def:    withOutput,
			result: `{"content":[],"isError":false}`,
			want:   `tool "convert" returned no structuredContent, but its outputSchema requires structured results`,
		},
		"member names are exact": {
			def:    withOutput,
			result: `{"content":[],"structuredcontent":{"count":3},"IsError":true}`,
			want:   `tool "convert" returned no structuredContent, but its outputSchema requires structured results`,
		},
		"no outputSchema: anything passes": {
			def:    without,
			result: `{"content":[],"structuredContent":{"count":"3"}}`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			p := &fakeProvider{name: "p", tools: []tool.Def{{Name: "convert", JSON: json.RawMessage(tc.def)}},
				call: func(context.Context, *tool.Call) (json.RawMessage, error) { return json.RawMessage(tc.result), nil }}
			f.cat.Set(p)
			want := tc.result
			if tc.want != "" {
				want = string(tool.ErrorResult(tc.want))
			}
			res, err := f.cat.CallTool(context.Background(), &tool.Call{Name: "convert"})
			if err != nil {
				t.Fatalf("CallTool: %v", err)
			}
			if diff := cmp.Diff(want, string(res)); diff != "" {
				t.Errorf("CallTool's result (-want +got):\n%s", diff)
			}
			done := make(chan string, 1)
			f.cat.StartCall(context.Background(), &tool.Call{Name: "convert"}, func(res json.RawMessage, err error) {
				if err != nil {
					t.Errorf("StartCall: %v", err)
				}
				done <- string(res)
			})
			if got := await(t, done, "StartCall's answer"); got != want {
				t.Errorf("StartCall's result = %s, want %s", got, want)
			}
			log := f.log.String()
			warned := strings.Contains(log, "[WARN]  tool result breaks the tool's outputSchema") &&
				strings.Contains(log, "provider=p tool=convert")
			if tc.want == "" && warned || tc.want != "" && (!warned || !logged(log, tc.want)) {
				t.Errorf("warned = %v, want %v; log:\n%s", warned, tc.want != "", log)
			}
		})
	}
}

// A provider's failure is not a result: it passes as before, unchecked.
func TestOutputSchemaSparesFailures(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.cat.Set(&fakeProvider{name: "p",
		tools: []tool.Def{{Name: "t", JSON: json.RawMessage(`{"inputSchema":{},"outputSchema":{"required":["x"]}}`)}},
		call: func(context.Context, *tool.Call) (json.RawMessage, error) {
			return nil, tool.Errorf(tool.ErrRefused, "busy")
		}})
	if _, err := f.cat.CallTool(context.Background(), &tool.Call{Name: "t"}); err == nil || err.Error() != "busy" {
		t.Errorf("CallTool: %v, want the provider's error as it is", err)
	}
}

// The exposed name, not the provider's own, names the tool in the message
// the client reads; the log names both provider and own name.
func TestOutputSchemaNamesTheExposedTool(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	bad := func(context.Context, *tool.Call) (json.RawMessage, error) {
		return json.RawMessage(`{"content":[],"structuredContent":{}}`), nil
	}
	def := tool.Def{Name: "t", JSON: json.RawMessage(`{"inputSchema":{},"outputSchema":{"required":["x"]}}`)}
	f.cat.Set(&fakeProvider{name: "a", tools: []tool.Def{def}, call: bad})
	f.cat.Set(&fakeProvider{name: "b", tools: []tool.Def{def}, call: bad})
	res, err := f.cat.CallTool(context.Background(), &tool.Call{Name: "b__t"})
	if err != nil {
		t.Fatal(err)
	}
	want := tool.ErrorResult(`tool "b__t" returned a result that breaks its outputSchema: structuredContent/x: missing required property`)
	if string(res) != string(want) {
		t.Errorf("result = %s, want %s", res, want)
	}
	if log := f.log.String(); !strings.Contains(log, "provider=b tool=t") {
		t.Errorf("the warning does not name provider and tool:\n%s", log)
	}
}

// logged reports whether hclog's text log holds msg as the value of
// "error": quoted when it is one line, one "| " line per line otherwise.
func logged(log, msg string) bool {
	if !strings.Contains(msg, "\n") {
		return strings.Contains(log, "error="+strconv.Quote(msg))
	}
	return strings.Contains(log, "| "+strings.ReplaceAll(msg, "\n", "\n  | ")+"\n")
}
