package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plughost/plughost/host/mcp/internal/mcptest"
)

// initializeWith performs the handshake declaring caps; without initialized
// it stops after the initialize response.
func (c *client) initializeWith(version, caps string, initialized bool) {
	c.t.Helper()
	out := c.roundtrip(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + version +
		`","capabilities":` + caps + `,"clientInfo":{"name":"test","version":"1"}}}`)
	if len(out) != 1 || !strings.Contains(out[0], `"protocolVersion":"`+version+`"`) {
		c.t.Fatalf("initialize %s: got %q", version, out)
	}
	if initialized {
		c.roundtrip(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	}
}

// TestSamplingTranscript drives server-to-client requests over the
// in-memory and stdio transports: the request line (schema-checked like
// every line the server writes), the routing of the client's result or
// error by id, cancellation, and the cases where no client may be asked.
func TestSamplingTranscript(t *testing.T) {
	t.Parallel()
	const request = `{"jsonrpc":"2.0","id":"plughost-1","method":"sampling/createMessage","params":`
	tests := map[string]struct {
		version     string
		caps        string
		initialized bool // the client sent notifications/initialized
		tools       bool // SamplingTools
		run         func(t *testing.T, c *client)
	}{
		"answered": {
			version: "2025-11-25", caps: `{"sampling":{"tools":{}}}`, initialized: true, tools: true,
			run: func(t *testing.T, c *client) {
				done := mcptest.CreateMessage(t.Context(), c.srv.CreateMessage, mcptest.SamplingParams)
				if got, want := c.next(), request+mcptest.SamplingParams+"}"; got != want {
					t.Errorf("request:\n got %s\nwant %s", got, want)
				}
				c.write(`{"jsonrpc":"2.0","id":"plughost-1","result":` + mcptest.SamplingResult + `}`)
				got := mcptest.Wait(t, done)
				if got.Err != nil || string(got.Res) != mcptest.SamplingResult {
					t.Errorf("CreateMessage = %s, %v; want %s", got.Res, got.Err, mcptest.SamplingResult)
				}
			},
		},
		"2024-11-05 client": {
			version: "2024-11-05", caps: `{"sampling":{}}`, initialized: true,
			run: func(t *testing.T, c *client) {
				done := mcptest.CreateMessage(t.Context(), c.srv.CreateMessage, mcptest.SamplingParams)
				if got, want := c.next(), request+mcptest.SamplingParamsNoTools+"}"; got != want {
					t.Errorf("request:\n got %s\nwant %s", got, want)
				}
				c.write(`{"jsonrpc":"2.0","id":"plughost-1","result":` + mcptest.SamplingResult + `}`)
				if got := mcptest.Wait(t, done); got.Err != nil {
					t.Errorf("CreateMessage: %v", got.Err)
				}
			},
		},
		"tools declared but version too old": {
			version: "2025-06-18", caps: `{"sampling":{"tools":{}}}`, initialized: true,
			run: func(t *testing.T, c *client) {
				done := mcptest.CreateMessage(t.Context(), c.srv.CreateMessage, mcptest.SamplingParams)
				if got, want := c.next(), request+mcptest.SamplingParamsNoTools+"}"; got != want {
					t.Errorf("request:\n got %s\nwant %s", got, want)
				}
				c.write(`{"jsonrpc":"2.0","id":"plughost-1","result":` + mcptest.SamplingResult + `}`)
				mcptest.Wait(t, done)
			},
		},
		"client error": {
			version: "2025-11-25", caps: `{"sampling":{}}`, initialized: true,
			run: func(t *testing.T, c *client) {
				done := mcptest.CreateMessage(t.Context(), c.srv.CreateMessage, mcptest.SamplingParamsNoTools)
				c.next()
				c.write(`{"jsonrpc":"2.0","id":"plughost-1","error":{"code":-1,"message":"User rejected sampling request"}}`)
				got := mcptest.Wait(t, done)
				var ce *ClientError
				if !errors.As(got.Err, &ce) {
					t.Fatalf("CreateMessage error %v, want a *ClientError", got.Err)
				}
				want := ClientError{Method: "sampling/createMessage", Code: -1, Message: "User rejected sampling request"}
				if diff := cmp.Diff(want, *ce); diff != "" {
					t.Errorf("ClientError (-want +got):\n%s", diff)
				}
				if !strings.Contains(got.Err.Error(), "-1") || !strings.Contains(got.Err.Error(), "User rejected") {
					t.Errorf("error text %q names neither code nor message", got.Err)
				}
			},
		},
		"cancelled": {
			version: "2025-11-25", caps: `{"sampling":{}}`, initialized: true,
			run: func(t *testing.T, c *client) {
				ctx, cancel := context.WithCancel(t.Context())
				done := mcptest.CreateMessage(ctx, c.srv.CreateMessage, mcptest.SamplingParamsNoTools)
				c.next()
				cancel()
				got := mcptest.Wait(t, done)
				if !errors.Is(got.Err, context.Canceled) {
					t.Errorf("CreateMessage error %v, want context.Canceled", got.Err)
				}
				line := c.next()
				if !strings.HasPrefix(line, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"plughost-1","reason":`) {
					t.Errorf("after cancel: %s, want notifications/cancelled for plughost-1", line)
				}
				// A late answer to the cancelled request is ignored.
				if out := c.roundtrip(`{"jsonrpc":"2.0","id":"plughost-1","result":` + mcptest.SamplingResult + `}`); len(out) != 0 {
					t.Errorf("a late response got output %q", out)
				}
			},
		},
		"unknown id ignored": {
			version: "2025-11-25", caps: `{"sampling":{}}`, initialized: true,
			run: func(t *testing.T, c *client) {
				for _, msg := range []string{
					`{"jsonrpc":"2.0","id":"plughost-7","result":{}}`,
					`{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"x"}}`,
				} {
					if out := c.roundtrip(msg); len(out) != 0 {
						t.Errorf("%s got output %q", msg, out)
					}
				}
				done := mcptest.CreateMessage(t.Context(), c.srv.CreateMessage, mcptest.SamplingParamsNoTools)
				c.next()
				c.write(`{"jsonrpc":"2.0","id":"plughost-1","result":` + mcptest.SamplingResult + `}`)
				if got := mcptest.Wait(t, done); got.Err != nil {
					t.Errorf("CreateMessage after stray responses: %v", got.Err)
				}
			},
		},
		"malformed result": {
			version: "2025-11-25", caps: `{"sampling":{}}`, initialized: true,
			run: func(t *testing.T, c *client) {
				done := mcptest.CreateMessage(t.Context(), c.srv.CreateMessage, mcptest.SamplingParamsNoTools)
				c.next()
				c.write(`{"jsonrpc":"2.0","id":"plughost-1","result":"Noon."}`)
				if got := mcptest.Wait(t, done); got.Err == nil || !strings.Contains(got.Err.Error(), "not a JSON object") {
					t.Errorf("CreateMessage = %v, want an error about the result", got.Err)
				}
			},
		},
		"session ends while waiting": {
			version: "2025-11-25", caps: `{"sampling":{}}`, initialized: true,
			run: func(t *testing.T, c *client) {
				done := mcptest.CreateMessage(t.Context(), c.srv.CreateMessage, mcptest.SamplingParamsNoTools)
				c.next()
				if err := c.close(); err != nil {
					t.Errorf("Serve = %v", err)
				}
				if got := mcptest.Wait(t, done); got.Err == nil || !strings.Contains(got.Err.Error(), "session ended") {
					t.Errorf("CreateMessage = %v, want the session's end", got.Err)
				}
				if _, err := c.srv.CreateMessage(t.Context(), json.RawMessage(mcptest.SamplingParamsNoTools)); !errors.Is(err, ErrNoSamplingClient) {
					t.Errorf("after the session ended: %v, want ErrNoSamplingClient", err)
				}
			},
		},
		"no sampling capability": {
			version: "2025-11-25", caps: `{"roots":{},"sampling":null}`, initialized: true,
		},
		"not initialized": {
			version: "2025-11-25", caps: `{"sampling":{}}`, initialized: false,
		},
	}
	for name, tt := range tests {
		for _, stdio := range []bool{false, true} {
			sub := name
			if stdio {
				sub += " over stdio"
			}
			t.Run(sub, func(t *testing.T) {
				t.Parallel()
				c := newClient(t, clientOptions{stdio: stdio})
				c.initializeWith(tt.version, tt.caps, tt.initialized)
				if got := c.srv.SamplingTools(); got != tt.tools {
					t.Errorf("SamplingTools() = %v, want %v", got, tt.tools)
				}
				if tt.run == nil {
					_, err := c.srv.CreateMessage(t.Context(), json.RawMessage(mcptest.SamplingParams))
					if !errors.Is(err, ErrNoSamplingClient) {
						t.Errorf("CreateMessage = %v, want ErrNoSamplingClient", err)
					}
					if out := c.take(); len(out) != 0 {
						t.Errorf("the server wrote %q", out)
					}
					return
				}
				tt.run(t, c)
			})
		}
	}
}

// TestCreateMessageBadParams: params must be a JSON object.
func TestCreateMessageBadParams(t *testing.T) {
	t.Parallel()
	srv := NewServer(mcptest.NewCatalog(), nil)
	for _, p := range []string{``, `[]`, `{"a":`, `"x"`} {
		if _, err := srv.CreateMessage(t.Context(), json.RawMessage(p)); err == nil || !strings.Contains(err.Error(), "JSON object") {
			t.Errorf("CreateMessage(%q) = %v, want a params error", p, err)
		}
	}
}

// sdkSampler is a go-sdk client whose model answers with its name.
func sdkSampler(name string, tools bool, got chan<- *sdk.CreateMessageParams) *sdk.Client {
	opts := &sdk.ClientOptions{}
	if tools {
		opts.CreateMessageWithToolsHandler = func(_ context.Context, r *sdk.CreateMessageWithToolsRequest) (*sdk.CreateMessageWithToolsResult, error) {
			return &sdk.CreateMessageWithToolsResult{Role: "assistant", Model: name,
				Content: []sdk.Content{&sdk.TextContent{Text: "answer from " + name}}}, nil
		}
	} else {
		opts.CreateMessageHandler = func(_ context.Context, r *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
			if got != nil {
				got <- r.Params
			}
			return &sdk.CreateMessageResult{Role: "assistant", Model: name, Content: &sdk.TextContent{Text: "answer from " + name}}, nil
		}
	}
	return sdk.NewClient(&sdk.Implementation{Name: name, Version: "1"}, opts)
}

// TestSamplingGoSDKStdio: go-sdk clients over stdio answer sampling; with
// two connected, the most recently initialized one is asked, and once it
// hangs up the other is.
func TestSamplingGoSDKStdio(t *testing.T) {
	t.Parallel()
	srv := NewServer(mcptest.NewCatalog(), nil)
	connect := func(c *sdk.Client) (*sdk.ClientSession, <-chan error) {
		clientIn, serverOut := io.Pipe()
		serverIn, clientOut := io.Pipe()
		done := make(chan error, 1)
		go func() { done <- srv.ServeStdio(t.Context(), serverIn, serverOut) }()
		cs, err := c.Connect(t.Context(), &sdk.IOTransport{Reader: pipeEnd{clientIn, nil}, Writer: pipeEnd{nil, clientOut}}, sdkSession)
		if err != nil {
			t.Fatal(err)
		}
		// stdio is served in order: once ping is answered, so is
		// notifications/initialized.
		if err := cs.Ping(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		return cs, done
	}
	got := make(chan *sdk.CreateMessageParams, 1)
	older, olderDone := connect(sdkSampler("older", false, got))
	defer func() { older.Close(); <-olderDone }()
	if m := mcptest.AskModel(t, srv.CreateMessage); m != "older" {
		t.Errorf("asked %q, want older", m)
	}
	p := <-got
	if p.MaxTokens != 64 || p.SystemPrompt != "Be brief." || len(p.Messages) != 1 {
		t.Errorf("the client got params %+v", p)
	} else if txt, ok := p.Messages[0].Content.(*sdk.TextContent); !ok || txt.Text != "What time is it?" {
		t.Errorf("the client got message %+v", p.Messages[0])
	}
	if srv.SamplingTools() {
		t.Error("SamplingTools() = true for a client without sampling.tools")
	}

	newer, newerDone := connect(sdkSampler("newer", true, nil))
	if m := mcptest.AskModel(t, srv.CreateMessage); m != "newer" {
		t.Errorf("asked %q, want newer", m)
	}
	if !srv.SamplingTools() {
		t.Error("SamplingTools() = false for a 2025-11-25 client with sampling.tools")
	}
	newer.Close()
	if err := <-newerDone; err != nil {
		t.Errorf("ServeStdio = %v", err)
	}
	if m := mcptest.AskModel(t, srv.CreateMessage); m != "older" {
		t.Errorf("after newer hung up, asked %q, want older", m)
	}
}
