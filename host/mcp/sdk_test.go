package mcp

import (
	"io"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plughost/plughost/host/mcp/internal/mcptest"
)

// pipeEnd joins one pipe's reader and another's writer into the
// io.ReadWriteCloser go-sdk's IOTransport wants.
type pipeEnd struct {
	*io.PipeReader
	*io.PipeWriter
}

func (p pipeEnd) Close() error {
	if p.PipeReader != nil {
		p.PipeReader.Close()
	}
	if p.PipeWriter != nil {
		p.PipeWriter.Close()
	}
	return nil
}

// TestGoSDKClient: the official go-sdk client, over stdio, can initialize,
// list, set the log level, call with progress and logs, see an unknown tool
// refused, learn of a list change, ping, and hang up (Serve returns nil).
func TestGoSDKClient(t *testing.T) {
	t.Parallel()
	cat := mcptest.NewCatalog()
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- NewServer(cat, &Options{Version: "1.0.0"}).ServeStdio(t.Context(), serverIn, serverOut)
	}()

	client, changed, progress, logs := mcptest.SDKClient()
	ctx := t.Context()
	cs, err := client.Connect(ctx, &sdk.IOTransport{Reader: pipeEnd{clientIn, nil}, Writer: pipeEnd{nil, clientOut}}, sdkSession)
	if err != nil {
		t.Fatal(err)
	}
	if v := cs.InitializeResult().ProtocolVersion; v != versions[vLatest] {
		t.Errorf("negotiated %q, want %q", v, versions[vLatest])
	}
	var names []string
	for tl, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tl.Name)
	}
	if got, want := strings.Join(names, ","), strings.Join(mcptest.ToolNames, ","); got != want {
		t.Errorf("tools %s, want %s", got, want)
	}
	if err := cs.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: "warning"}); err != nil {
		t.Fatal(err)
	}
	mcptest.CallChatty(t, ctx, cs, progress, logs, "warning", "error")
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "nope"}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("unknown tool: err = %v", err)
	}
	cat.Change()
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no list_changed")
	}
	if err := cs.Ping(ctx, nil); err != nil {
		t.Fatal(err)
	}
	cs.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ServeStdio = %v, want nil after the client hung up", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdio did not return after the client hung up")
	}
}

// sdkSession makes a go-sdk client speak MCP 2025-11-25 (initialize, a
// session) instead of trying the stateless 2026-07-28 first: the tests
// that use it are about sessions.
var sdkSession = &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
