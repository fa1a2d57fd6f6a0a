package streamable

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/host/mcp/internal/mcptest"
)

// TestSamplingGoSDKHTTP: the go-sdk client answers sampling over
// Streamable HTTP (request on its GET stream, response POSTed) and over
// the deprecated HTTP+SSE transport (both on its stream).
func TestSamplingGoSDKHTTP(t *testing.T) {
	t.Parallel()
	tests := map[string]func(url string) sdk.Transport{
		"streamable": func(url string) sdk.Transport { return &sdk.StreamableClientTransport{Endpoint: url + PathMCP} },
		"legacy sse": func(url string) sdk.Transport { return &sdk.SSEClientTransport{Endpoint: url + PathSSE} },
	}
	for name, transport := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			hs := startHTTP(t, nil)
			changed := make(chan struct{}, 10)
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			client := sdk.NewClient(&sdk.Implementation{Name: name, Version: "1"}, &sdk.ClientOptions{
				ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
				CreateMessageHandler: func(_ context.Context, r *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
					return &sdk.CreateMessageResult{Role: "assistant", Model: name, Content: &sdk.TextContent{Text: "hi"}}, nil
				},
			})
			cs, err := client.Connect(ctx, transport(hs.url), sessionEra)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			// The client is asked only once its notifications/initialized
			// is served. On legacy SSE that POST is answered 202 when the
			// message is queued, and the session serves its messages in
			// order: a ping answered proves the notification was served.
			if err := cs.Ping(ctx, nil); err != nil {
				t.Fatal(err)
			}
			// A list_changed received proves the client listens on its
			// stream (the GET stream on Streamable HTTP), where requests go.
			hs.cat.Change()
			select {
			case <-changed:
			case <-ctx.Done():
				t.Fatal("no list_changed")
			}
			if m := mcptest.AskModel(t, hs.srv.CreateMessage); m != name {
				t.Errorf("asked %q, want %q", m, name)
			}
		})
	}
}

// TestSamplingHTTPNeedsGETStream: over Streamable HTTP the request goes on
// the session's GET stream, so a session without one is skipped; once the
// stream is open the request arrives there and the POSTed response (202)
// completes it.
func TestSamplingHTTPNeedsGETStream(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, nil)
	status, h, body := hs.roundtrip(req{"POST", "/mcp", postHeaders(""), `{"jsonrpc":"2.0","id":1,"method":"initialize","params":` +
		`{"protocolVersion":"2025-11-25","capabilities":{"sampling":{}},"clientInfo":{"name":"t","version":"1"}}}`})
	sid := h.Get("Mcp-Session-Id")
	if status != 200 || sid == "" {
		t.Fatalf("initialize: %d %s", status, body)
	}
	if s, _, b := hs.roundtrip(req{"POST", "/mcp", postHeaders(sid), `{"jsonrpc":"2.0","method":"notifications/initialized"}`}); s != 202 {
		t.Fatalf("notifications/initialized: %d %s", s, b)
	}
	if _, err := hs.srv.CreateMessage(t.Context(), json.RawMessage(mcptest.SamplingParamsNoTools)); !errors.Is(err, mcp.ErrNoSamplingClient) {
		t.Errorf("without a GET stream: %v, want mcp.ErrNoSamplingClient", err)
	}
	get := hs.do(req{"GET", "/mcp", map[string]string{"Accept": "text/event-stream", "Mcp-Session-Id": sid}, ""})
	defer get.Body.Close()
	r := newSSEReader(t, get)
	// The priming event is written as the stream attaches: once it is
	// read, the session counts as listening.
	r.raw = true
	if e := r.nextWithin(t, 10*time.Second); e.data != "" || e.id != "0_0" {
		t.Fatalf("first event %+v, want the priming event 0_0", e)
	}
	done := mcptest.CreateMessage(t.Context(), hs.srv.CreateMessage, mcptest.SamplingParams)
	e := r.nextWithin(t, 10*time.Second)
	if want := `{"jsonrpc":"2.0","id":"plughost-1","method":"sampling/createMessage","params":` + mcptest.SamplingParamsNoTools + `}`; e.data != want {
		t.Errorf("GET stream event:\n got %s\nwant %s", e.data, want)
	}
	if err := mcptest.CheckSchema(t, "2025-11-25", []byte(e.data), nil); err != nil {
		t.Error(err)
	}
	if s, _, b := hs.roundtrip(req{"POST", "/mcp", postHeaders(sid), `{"jsonrpc":"2.0","id":"plughost-1","result":` + mcptest.SamplingResult + `}`}); s != 202 || b != "" {
		t.Errorf("POSTed response: %d %q, want 202 and no body", s, b)
	}
	if got := mcptest.Wait(t, done); got.Err != nil || string(got.Res) != mcptest.SamplingResult {
		t.Errorf("CreateMessage = %s, %v", got.Res, got.Err)
	}
}
