// Package floor is the hand-written MCP echo server of the benchmark: newline
// JSON-RPC (or one POST per message over HTTP), encoding/json and bufio,
// nothing else. It serves exactly what the load client asks for (initialize,
// tools/list, tools/call of "echo") and is the floor every other server is
// compared with.
package floor

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
)

type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		ProtocolVersion string `json:"protocolVersion"`
		Name            string `json:"name"`
		Arguments       struct {
			Text *string `json:"text"`
		} `json:"arguments"`
	} `json:"params"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type textContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type callResult struct {
	Content []textContent `json:"content"`
	IsError bool          `json:"isError,omitempty"`
}

var echoTool = json.RawMessage(`{"name":"echo","description":"Returns the given text unchanged.",` +
	`"inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}`)

// handle answers one message; it returns nil for a notification.
func handle(line []byte) *response {
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		return &response{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: &rpcError{-32700, "parse error: " + err.Error()}}
	}
	if len(req.ID) == 0 {
		return nil // a notification
	}
	resp := &response{JSONRPC: "2.0", ID: req.ID}
	switch req.Method {
	case "initialize":
		v := req.Params.ProtocolVersion
		if v == "" {
			v = "2025-11-25"
		}
		resp.Result = map[string]any{
			"protocolVersion": v,
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": "floor", "version": "1"},
		}
	case "ping":
		resp.Result = struct{}{}
	case "tools/list":
		resp.Result = map[string]any{"tools": []json.RawMessage{echoTool}}
	case "tools/call":
		switch {
		case req.Params.Name != "echo":
			resp.Error = &rpcError{-32602, "unknown tool " + req.Params.Name}
		case req.Params.Arguments.Text == nil:
			resp.Result = callResult{Content: []textContent{{"text", `missing required argument "text"`}}, IsError: true}
		default:
			resp.Result = callResult{Content: []textContent{{"text", *req.Params.Arguments.Text}}}
		}
	default:
		resp.Error = &rpcError{-32601, "method not found: " + req.Method}
	}
	return resp
}

// Serve answers newline-delimited JSON-RPC from r on w, one message at a
// time, until r ends.
func Serve(r io.Reader, w io.Writer) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw) // Encode ends each message with '\n'
	for sc.Scan() {
		resp := handle(sc.Bytes())
		if resp == nil {
			continue
		}
		if err := enc.Encode(resp); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
	}
	return sc.Err()
}

// Handler serves the same over HTTP: each POST carries one message and gets
// its response as application/json (202 and no body for a notification).
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resp := handle(body)
		if resp == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "floor")
		_ = json.NewEncoder(w).Encode(resp)
	})
}
