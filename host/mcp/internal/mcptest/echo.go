package mcptest

import (
	"context"
	"encoding/json"

	"github.com/plughost/plughost/host/tool"
)

// Echo is the trivial catalog of the benchmarks: no tools listed, and
// every call answered "hello" at once, without decoding its arguments.
type Echo struct{ NoSurface }

var echoResult = tool.TextResult("hello")

// ListTools lists nothing.
func (Echo) ListTools(string) ([]json.RawMessage, string, error) { return nil, "", nil }

// StartCall answers "hello", at once.
func (Echo) StartCall(_ context.Context, _ *tool.Call, done func(json.RawMessage, error)) {
	done(echoResult, nil)
}

// Subscribe never calls fn.
func (Echo) Subscribe(func(tool.Change)) func() { return func() {} }

// InitMsg is an initialize request (id "init") asking for version.
func InitMsg(version string) string {
	return `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"` + version +
		`","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
}
