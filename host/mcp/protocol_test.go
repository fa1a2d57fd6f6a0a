package mcp

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/host/tool"

	"github.com/plughost/plughost/host/mcp/internal/mcptest"
)

// response is a decoded server message.
type response struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *respError      `json:"error,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
}

type respError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func decode(t testing.TB, line string) response {
	t.Helper()
	var r response
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		t.Fatalf("server wrote %q: %v", line, err)
	}
	return r
}

// one sends msg and returns the single message the server writes.
func (c *client) one(msg string) response {
	c.t.Helper()
	out := c.roundtrip(msg)
	if len(out) != 1 {
		c.t.Fatalf("sent %s, got %d messages: %q", msg, len(out), out)
	}
	return decode(c.t, out[0])
}

func TestNegotiation(t *testing.T) {
	t.Parallel()
	tests := map[string]struct{ requested, want string }{
		"2024-11-05":        {"2024-11-05", "2024-11-05"},
		"2025-03-26":        {"2025-03-26", "2025-03-26"},
		"2025-06-18":        {"2025-06-18", "2025-06-18"},
		"2025-11-25":        {"2025-11-25", "2025-11-25"},
		"newer":             {"2026-07-28", "2025-11-25"},
		"older":             {"2024-10-07", "2025-11-25"},
		"empty":             {"", "2025-11-25"},
		"not a date at all": {"latest", "2025-11-25"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newClient(t, clientOptions{server: Options{Version: "9.9"}})
			r := c.one(mcptest.InitMsg(tt.requested))
			var got struct {
				ProtocolVersion string
				ServerInfo      struct{ Name, Version string }
				Capabilities    map[string]json.RawMessage
			}
			if err := json.Unmarshal(r.Result, &got); err != nil {
				t.Fatal(err)
			}
			if got.ProtocolVersion != tt.want {
				t.Errorf("protocolVersion = %q, want %q", got.ProtocolVersion, tt.want)
			}
			if diff := cmp.Diff(struct{ Name, Version string }{"plughost", "9.9"}, got.ServerInfo); diff != "" {
				t.Errorf("serverInfo (-want +got):\n%s", diff)
			}
			caps := map[string]string{}
			for k, v := range got.Capabilities {
				caps[k] = string(v)
			}
			want := map[string]string{"tools": `{"listChanged":true}`, "logging": `{}`, "completions": `{}`,
				"prompts": `{"listChanged":true}`, "resources": `{"subscribe":true,"listChanged":true}`}
			if tt.want == "2024-11-05" {
				delete(want, "completions") // completion/complete, without a capability before 2025-03-26
			}
			if diff := cmp.Diff(want, caps); diff != "" {
				t.Errorf("capabilities (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBeforeInitialize(t *testing.T) {
	t.Parallel()
	notInit := &respError{-32600, "session not initialized: send initialize first"}
	tests := map[string]struct {
		msg       string
		wantError *respError // nil: a result
	}{
		"ping":       {`{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil},
		"tools/list": {`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, notInit},
		"tools/call": {`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`, notInit},
		"setLevel":   {`{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"info"}}`, notInit},
		// server/discover is the stateless revision's: served before (and
		// without) initialize, but only with its _meta.
		"server/discover": {`{"jsonrpc":"2.0","id":1,"method":"server/discover"}`, &respError{-32602, "invalid params: a 2026-07-28 request needs _meta, an object with io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities"}},
		"unknown":         {`{"jsonrpc":"2.0","id":1,"method":"roots/list"}`, &respError{-32601, "method not found: roots/list"}},
		"prompts/list":    {`{"jsonrpc":"2.0","id":1,"method":"prompts/list"}`, notInit},
		"resources/read":  {`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///a"}}`, notInit},
		"batch":           {`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, &respError{-32600, "invalid request: JSON-RPC batches are supported only in protocol version 2025-03-26"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newClient(t, clientOptions{})
			r := c.one(tt.msg)
			if diff := cmp.Diff(tt.wantError, r.Error); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			// The session still initializes afterwards.
			c.initialize("2025-11-25")
		})
	}
}

func TestInvalidMessages(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		msg    string
		wantID string // raw JSON
		want   respError
	}{
		"truncated":         {`{"jsonrpc":"2.0"`, "null", respError{-32700, "parse error: invalid JSON"}},
		"trailing garbage":  {`{"jsonrpc":"2.0","id":1,"method":"ping"} x`, "null", respError{-32700, "parse error: invalid JSON"}},
		"two values":        {`{} {}`, "null", respError{-32700, "parse error: invalid JSON"}},
		"invalid UTF-8":     {"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"ping\"}", "null", respError{-32700, "parse error: invalid UTF-8"}},
		"array of nothing":  {`true`, "null", respError{-32600, "invalid request: a message must be a JSON object"}},
		"jsonrpc missing":   {`{"id":"x","method":"ping"}`, `"x"`, respError{-32600, `invalid request: "jsonrpc" must be "2.0"`}},
		"jsonrpc 2":         {`{"jsonrpc":"2","id":"x","method":"ping"}`, `"x"`, respError{-32600, `invalid request: "jsonrpc" must be "2.0"`}},
		"id null":           {`{"jsonrpc":"2.0","id":null,"method":"ping"}`, "null", respError{-32600, "invalid request: id must be a string or an integer"}},
		"id fraction":       {`{"jsonrpc":"2.0","id":2.5,"method":"ping"}`, "null", respError{-32600, "invalid request: id must be a string or an integer"}},
		"id exponent":       {`{"jsonrpc":"2.0","id":1e3,"method":"ping"}`, "null", respError{-32600, "invalid request: id must be a string or an integer"}},
		"missing method":    {`{"jsonrpc":"2.0","id":3}`, "3", respError{-32600, "invalid request: missing method"}},
		"method object":     {`{"jsonrpc":"2.0","id":3,"method":{}}`, "3", respError{-32600, "invalid request: method must be a string"}},
		"duplicate method":  {`{"jsonrpc":"2.0","id":3,"method":"ping","method":"x"}`, "null", respError{-32600, `invalid request: duplicate member "method"`}},
		"params array":      {`{"jsonrpc":"2.0","id":3,"method":"ping","params":[]}`, "3", respError{-32602, "invalid params: params must be an object"}},
		"params null":       {`{"jsonrpc":"2.0","id":3,"method":"ping","params":null}`, "3", respError{-32602, "invalid params: params must be an object"}},
		"unknown method":    {`{"jsonrpc":"2.0","id":"m","method":"tools/frobnicate"}`, `"m"`, respError{-32601, "method not found: tools/frobnicate"}},
		"escaped method":    {`{"jsonrpc":"2.0","id":"m","method":"a\"b"}`, `"m"`, respError{-32601, `method not found: a"b`}},
		"notification name": {`{"jsonrpc":"2.0","id":4,"method":"notifications/cancelled"}`, "4", respError{-32601, "method not found: notifications/cancelled"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newClient(t, clientOptions{})
			r := c.one(tt.msg)
			if string(r.ID) != tt.wantID {
				t.Errorf("id = %s, want %s", r.ID, tt.wantID)
			}
			if diff := cmp.Diff(&tt.want, r.Error); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSilentMessages(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"unknown notification":  `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`,
		"response":              `{"jsonrpc":"2.0","id":5,"result":{}}`,
		"error response":        `{"jsonrpc":"2.0","id":5,"error":{"code":1,"message":"x"}}`,
		"null-id error":         `{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"x"}}`,
		"unknown cancel":        `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"nobody"}}`,
		"malformed cancel":      `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{}}}`,
		"notification unknown":  `{"jsonrpc":"2.0","method":"tools/list"}`,
		"initialized too early": `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	}
	for name, msg := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newClient(t, clientOptions{stdio: true})
			if out := c.roundtrip(msg); len(out) != 0 {
				t.Errorf("server answered %s with %q", msg, out)
			}
		})
	}
}

func TestToolsCallParams(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		params    string
		wantText  string // the args tool echoes the arguments the catalog got
		wantError *respError
	}{
		"arguments absent":      {`{"name":"args"}`, `{}`, nil},
		"arguments empty":       {`{"name":"args","arguments":{}}`, `{}`, nil},
		"arguments kept as is":  {`{"name":"args","arguments":{ "b" : [1, 2.50] , "a":"\u00e9"}}`, `{ "b" : [1, 2.50] , "a":"\u00e9"}`, nil},
		"_meta is not an arg":   {`{"name":"args","arguments":{"x":1},"_meta":{"progressToken":"p"}}`, `{"x":1}`, nil},
		"escaped name":          {`{"name":"\u0061rgs"}`, `{}`, nil},
		"unknown fields pass":   {`{"name":"args","task":{"ttl":1}}`, `{}`, nil},
		"name missing":          {`{"arguments":{}}`, "", &respError{-32602, "invalid params: tools/call needs name, a string"}},
		"name number":           {`{"name":7}`, "", &respError{-32602, "invalid params: tools/call needs name, a string"}},
		"name null":             {`{"name":null}`, "", &respError{-32602, "invalid params: tools/call needs name, a string"}},
		"arguments string":      {`{"name":"args","arguments":"{}"}`, "", &respError{-32602, "invalid params: arguments must be an object"}},
		"arguments null":        {`{"name":"args","arguments":null}`, `{}`, nil},
		"progressToken object":  {`{"name":"args","_meta":{"progressToken":{}}}`, "", &respError{-32602, "invalid params: progressToken must be a string or an integer"}},
		"unknown tool":          {`{"name":"nope"}`, "", &respError{-32602, `invalid params: unknown tool: "nope"`}},
		"params not an object":  {`[]`, "", &respError{-32602, "invalid params: params must be an object"}},
		"tool error → isError":  {`{"name":"fail"}`, "backend exploded", nil},
		"bad args → isError":    {`{"name":"echo","arguments":{"text":false}}`, "invalid arguments: text is required and must be a string", nil},
		"non-JSON → isError":    {`{"name":"garbage"}`, `tool "garbage" returned an invalid result (not a JSON object)`, nil},
		"multi-line → one line": {`{"name":"pretty"}`, "a\nb", nil},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newClient(t, clientOptions{})
			c.initialize("2025-11-25")
			r := c.one(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + tt.params + `}`)
			if diff := cmp.Diff(tt.wantError, r.Error); diff != "" {
				t.Fatalf("error (-want +got):\n%s", diff)
			}
			if tt.wantError != nil {
				return
			}
			var res struct {
				Content []struct{ Type, Text string }
			}
			if err := json.Unmarshal(r.Result, &res); err != nil || len(res.Content) != 1 {
				t.Fatalf("result %s: %v", r.Result, err)
			}
			if res.Content[0].Text != tt.wantText {
				t.Errorf("text = %q, want %q", res.Content[0].Text, tt.wantText)
			}
		})
	}
}

func TestListToolsPages(t *testing.T) {
	t.Parallel()
	c := newClient(t, clientOptions{})
	c.initialize("2025-11-25")
	var names []string
	cursor := ""
	for page := 0; ; page++ {
		params := `{}`
		if cursor != "" {
			params = `{"cursor":"` + cursor + `"}`
		}
		r := c.one(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":` + params + `}`)
		var res struct {
			Tools      []struct{ Name string }
			NextCursor *string
		}
		if err := json.Unmarshal(r.Result, &res); err != nil {
			t.Fatal(err)
		}
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		if res.NextCursor == nil {
			break
		}
		if *res.NextCursor == "" || page > 10 {
			t.Fatalf("bad nextCursor %q", *res.NextCursor)
		}
		cursor = *res.NextCursor
	}
	if diff := cmp.Diff(mcptest.ToolNames, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
}

// TestProgressAndLogAfterReturn checks that a provider misusing its
// callbacks after the call returned cannot send anything.
func TestProgressAndLogAfterReturn(t *testing.T) {
	t.Parallel()
	c := newClient(t, clientOptions{})
	c.initialize("2025-11-25")
	c.one(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"late","_meta":{"progressToken":"t"}}}`)
	call := c.cat.LateCall()
	call.Progress(tool.Progress{Progress: 10})
	call.Log(tool.Log{Level: "emergency", Data: json.RawMessage(`"late"`)})
	if out := c.roundtrip(`{"jsonrpc":"2.0","id":2,"method":"ping"}`); len(out) != 1 || !strings.Contains(out[0], `"id":2`) {
		t.Errorf("after misuse got %q, want only the ping response", out)
	}
}

func TestProgressNilWithoutToken(t *testing.T) {
	t.Parallel()
	c := newClient(t, clientOptions{})
	c.initialize("2025-11-25")
	c.one(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"late"}}`)
	call := c.cat.LateCall()
	if call.Progress != nil {
		t.Error("Progress is set although the request has no progressToken")
	}
	if call.Log == nil {
		t.Error("Log is nil")
	}
}
