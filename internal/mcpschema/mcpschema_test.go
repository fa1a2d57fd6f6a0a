package mcpschema

import (
	"slices"
	"testing"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		version, msg, method string
		ok                   bool
	}{
		"initialize result":                    {"2025-11-25", `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"x","version":"1"}}}`, "initialize", true},
		"initialize result without serverInfo": {"2025-11-25", `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{}}}`, "initialize", false},
		"call result":                          {"2025-06-18", `{"jsonrpc":"2.0","id":"a","result":{"content":[{"type":"text","text":"hi"}]}}`, "tools/call", true},
		"call result bad content":              {"2025-06-18", `{"jsonrpc":"2.0","id":"a","result":{"content":[{"type":"text"}]}}`, "tools/call", false},
		"error":                                {"2024-11-05", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`, "", true},
		"error without message":                {"2024-11-05", `{"jsonrpc":"2.0","id":3,"error":{"code":-32700}}`, "", false},
		"list_changed":                         {"2025-11-25", `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`, "", true},
		"unknown notification":                 {"2025-11-25", `{"jsonrpc":"2.0","method":"notifications/bogus","params":{"x":1}}`, "", false},
		"batch in 2025-03-26":                  {"2025-03-26", `[{"jsonrpc":"2.0","id":1,"result":{}}]`, "ping", true},
		"batch in 2025-06-18":                  {"2025-06-18", `[{"jsonrpc":"2.0","id":1,"result":{}}]`, "ping", false},
		"sampling request":                     {"2024-11-05", `{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":10}}`, "", true},
		"sampling request with tools":          {"2025-11-25", `{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":10,"tools":[{"name":"t","inputSchema":{"type":"object"}}],"toolChoice":{"mode":"auto"}}}`, "", true},
		"sampling request without maxTokens":   {"2025-11-25", `{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[]}}`, "", false},
		"unknown request":                      {"2025-11-25", `{"jsonrpc":"2.0","id":"s1","method":"roots/bogus","params":{}}`, "", false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			v, err := New(tc.version)
			if err != nil {
				t.Fatal(err)
			}
			err = v.Check([]byte(tc.msg), tc.method)
			if (err == nil) != tc.ok {
				t.Errorf("Check(%s) = %v, want ok=%v", tc.msg, err, tc.ok)
			}
		})
	}
}

func TestVersions(t *testing.T) {
	t.Parallel()
	for _, v := range Versions() {
		if _, err := New(v); err != nil {
			t.Errorf("New(%s): %v", v, err)
		}
	}
	want := []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"}
	if got := Versions(); !slices.Equal(got, want) {
		t.Errorf("Versions() = %v, want %v", got, want)
	}
}
