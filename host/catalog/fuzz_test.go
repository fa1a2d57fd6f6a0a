package catalog

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzToolDefinition: whatever a plugin publishes as a tool's definition,
// and whatever arguments a client then sends and result the plugin then
// returns, the host's checks never panic and answer precisely. A refused
// definition gets an error (the host logs it and serves the provider's
// other tools); an accepted one is served as a JSON object with the name
// the host gives it, and its checks of arguments and results return "" or
// a message naming the tool. The corpus the fuzzer kept
// (testdata/fuzz/FuzzToolDefinition) replays in every `go test`.
func FuzzToolDefinition(f *testing.F) {
	for _, seed := range []struct{ def, args, result string }{
		{`{"name":"echo","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}`,
			`{"text":"hi"}`, `{"content":[{"type":"text","text":"hi"}]}`},
		{`{"name":"count","inputSchema":{"type":"object"},"outputSchema":{"type":"object","properties":{"n":{"type":"integer","minimum":0}}},"execution":{"taskSupport":"optional"}}`,
			`null`, `{"content":[],"structuredContent":{"n":"x"}}`},
		{`{"name":"r","inputSchema":{"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"},"outputSchema":{"anyOf":[{"pattern":"^(a+)+$"}]}}`,
			`{"a":[1,2,{"b":null}]}`, `{"isError":true}`},
		{`{"name":"dup","name":"dup","inputSchema":{}}`, `[]`, `"x"`},
		{`{"name":"x","inputSchema":{"$ref":"http://example.com/s.json"}}`, ``, `{`},
		{`{"name":"x","inputSchema":{"type":"object","required":["d"],"properties":{"d":{"format":"date-time","type":"string"}}}}`, `{"d":"2026-13-45"}`, `{}`},
		{`[]`, `{}`, `{}`},
	} {
		f.Add([]byte(seed.def), []byte(seed.args), []byte(seed.result))
	}
	f.Fuzz(func(t *testing.T, raw, args, result []byte) {
		d, err := parseDef("fuzzed", raw)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("definition %q refused with an empty error", raw)
			}
			return
		}
		var served map[string]json.RawMessage
		if err := json.Unmarshal(d.encode("exposed_1"), &served); err != nil || string(served["name"]) != `"exposed_1"` {
			t.Fatalf("definition %q is served as %s (%v)", raw, d.encode("exposed_1"), err)
		}
		if _, msg := d.check.CheckArguments("exposed_1", args); msg != "" && !strings.Contains(msg, "exposed_1") {
			t.Fatalf("the message for arguments %q does not name the tool: %q", args, msg)
		}
		if msg := d.check.CheckResult("exposed_1", result); msg != "" && !strings.Contains(msg, "exposed_1") {
			t.Fatalf("the message for result %q does not name the tool: %q", result, msg)
		}
	})
}
