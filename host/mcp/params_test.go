package mcp

import (
	"testing"

	"github.com/plughost/plughost/internal/jsonrpc"
)

// Each params type decodes what its method takes and answers -32602
// naming what is wrong; tools/call and prompts/get share the rules of a
// name, its arguments and _meta, and name their own method.
func TestParamsDecode(t *testing.T) {
	t.Parallel()
	decode := map[string]func(method string, raw []byte) *jsonrpc.Error{
		"tools/call":            func(m string, raw []byte) *jsonrpc.Error { _, err := callParams{}.decode(m, raw); return err },
		"prompts/get":           func(m string, raw []byte) *jsonrpc.Error { _, err := promptParams{}.decode(m, raw); return err },
		"resources/read":        func(m string, raw []byte) *jsonrpc.Error { _, err := uriParams{}.decode(m, raw); return err },
		"resources/unsubscribe": func(m string, raw []byte) *jsonrpc.Error { _, err := uriParams{}.decode(m, raw); return err },
		"tools/list":            func(m string, raw []byte) *jsonrpc.Error { _, err := cursorParams{}.decode(m, raw); return err },
		"logging/setLevel":      func(m string, raw []byte) *jsonrpc.Error { _, err := levelParams{}.decode(m, raw); return err },
		"tasks/get":             func(m string, raw []byte) *jsonrpc.Error { _, err := taskParams{}.decode(m, raw); return err },
		"tasks/update":          func(m string, raw []byte) *jsonrpc.Error { _, err := taskParams{}.decode(m, raw); return err },
		"notifications/cancelled": func(m string, raw []byte) *jsonrpc.Error {
			_, err := cancelParams{}.decode(m, raw)
			return err
		},
		"completion/complete": func(m string, raw []byte) *jsonrpc.Error { _, err := completeParams{}.decode(m, raw); return err },
	}
	tests := []struct {
		method, params, want string // want "" for no error
	}{
		{"tools/call", `{"name":"x","arguments":null}`, ""},
		{"tools/call", `{"arguments":{}}`, "invalid params: tools/call needs name, a string"},
		{"prompts/get", `{"arguments":{}}`, "invalid params: prompts/get needs name, a string"},
		{"tools/call", `{"name":"x","arguments":[1]}`, "invalid params: arguments must be an object"},
		{"prompts/get", `{"name":"x","arguments":[1]}`, "invalid params: arguments must be an object"},
		{"prompts/get", `{"name":"x","arguments":{"a":1}}`, `invalid params: arguments must be an object of strings; "a" is not a string`},
		{"tools/call", `{"name":"x","_meta":1}`, "invalid params: _meta must be an object"},
		{"prompts/get", `{"name":"x","_meta":{"progressToken":1.5}}`, "invalid params: progressToken must be a string or an integer"},
		{"tools/call", `{"name":"x","_meta":{"progressToken":{}}}`, "invalid params: progressToken must be a string or an integer"},
		{"resources/read", `{"uri":"file:///a"}`, ""},
		{"resources/unsubscribe", `{}`, "invalid params: resources/unsubscribe needs uri, a string"},
		{"resources/read", `{"uri":""}`, "invalid params: uri must not be empty"},
		{"tools/list", `{"cursor":1}`, "invalid params: cursor must be a string"},
		{"tools/list", ``, ""},
		{"logging/setLevel", `{"level":"loud"}`, `invalid params: unknown level "loud"; want one of debug, info, notice, warning, error, critical, alert, emergency`},
		{"tasks/get", `{"taskId":""}`, "invalid params: tasks/get needs taskId, a non-empty string"},
		{"tasks/update", `{"taskId":"t"}`, "invalid params: tasks/update needs inputResponses, an object (key → the client's result)"},
		{"notifications/cancelled", `{"requestId":null}`, "notifications/cancelled without a valid requestId"},
		{"completion/complete", `{"ref":{"type":"ref/x"},"argument":{}}`, `invalid params: ref.type must be "ref/prompt" or "ref/resource"`},
	}
	for _, tt := range tests {
		var raw []byte
		if tt.params != "" {
			raw = []byte(tt.params)
		}
		err := decode[tt.method](tt.method, raw)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s %s: %q, want no error", tt.method, tt.params, err.Message)
		case tt.want != "" && (err == nil || err.Code != jsonrpc.CodeInvalidParams || err.Message != tt.want):
			t.Errorf("%s %s: %v, want -32602 %q", tt.method, tt.params, err, tt.want)
		}
	}
}
