package mcp

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/plughost/plughost/host/mcp/internal/mcptest"
)

// FuzzDispatch: whatever a client sends, the server writes only complete,
// valid, single-line JSON-RPC messages, and never panics.
func FuzzDispatch(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"echo","arguments":{"text":"a"},"_meta":{"progressToken":1}}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"x"}]`,
		`{"jsonrpc":"2.0","\u0069d":"\ud83d\ude00","method":"p\u0069ng","params":{}}`,
		`{"jsonrpc":"2.0","id":-0,"method":"tools/list","params":{"cursor":"page-1"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"debug"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"a":[{"b":"]}"}],"jsonrpc":"2.0","id":9,"method":"ping"}`,
		`[]`, `{}`, `"`, `[1,`, `{"jsonrpc":"2.0","id":1,"result":{}}`,
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, msg string, batch bool) {
		cat := mcptest.NewCatalog()
		cat.NoPark = true // Handle waits for calls: slow must not block
		out := newRecorder()
		s := NewServer(cat, nil).NewSession(out)
		defer s.Close()
		version := "2025-11-25"
		if batch {
			version = "2025-03-26"
		}
		s.Handle(t.Context(), []byte(mcptest.InitMsg(version)), out)
		s.Handle(t.Context(), []byte(msg), out)
		for _, m := range out.get() {
			if strings.ContainsAny(m, "\n\r") || !jsonValid(m) {
				t.Fatalf("for %q the server wrote %q", msg, m)
			}
		}
	})
}

func jsonValid(s string) bool { return json.Valid([]byte(s)) && utf8.ValidString(s) }
