package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plughost/plughost/host/mcp/internal/mcptest"
)

// samplingParams is what a server asks with; samplingParamsNoTools is the
// same without tools, as a client that cannot take them receives it.
const (
	samplingParams = `{"messages":[{"role":"user","content":{"type":"text","text":"What time is it?"}}],` +
		`"systemPrompt":"Be brief.","maxTokens":64,"tools":[{"name":"clock","inputSchema":{"type":"object"}}],"toolChoice":{"mode":"auto"}}`
	samplingParamsNoTools = `{"messages":[{"role":"user","content":{"type":"text","text":"What time is it?"}}],` +
		`"systemPrompt":"Be brief.","maxTokens":64}`
	samplingResult = `{"role":"assistant","content":{"type":"text","text":"Noon."},"model":"test-model","stopReason":"endTurn"}`
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

type sampled struct {
	res json.RawMessage
	err error
}

// createMessage runs srv.CreateMessage in the background.
func createMessage(ctx context.Context, srv *Server, params string) <-chan sampled {
	ch := make(chan sampled, 1)
	go func() {
		res, err := srv.CreateMessage(ctx, json.RawMessage(params))
		ch <- sampled{res, err}
	}()
	return ch
}

func wait(t *testing.T, ch <-chan sampled) sampled {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("CreateMessage did not return")
		return sampled{}
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
				done := createMessage(t.Context(), c.srv, samplingParams)
				if got, want := c.next(), request+samplingParams+"}"; got != want {
					t.Errorf("request:\n got %s\nwant %s", got, want)
				}
				c.write(`{"jsonrpc":"2.0","id":"plughost-1","result":` + samplingResult + `}`)
				got := wait(t, done)
				if got.err != nil || string(got.res) != samplingResult {
					t.Errorf("CreateMessage = %s, %v; want %s", got.res, got.err, samplingResult)
				}
			},
		},
		"2024-11-05 client": {
			version: "2024-11-05", caps: `{"sampling":{}}`, initialized: true,
			run: func(t *testing.T, c *client) {
				done := createMessage(t.Context(), c.srv, samplingParams)
				if got, want := c.next(), request+samplingParamsNoTools+"}"; got != want {
					t.Errorf("request:\n got %s\nwant %s", got, want)
				}
				c.write(`{"jsonrpc":"2.0","id":"plughost-1","result":` + samplingResult + `}`)
				if got := wait(t, done); got.err != nil {
					t.Errorf("CreateMessage: %v", got.err)
				}
			},
		},
		"tools declared but version too old": {
			version: "2025-06-18", caps: `{"sampling":{"tools":{}}}`, initialized: true,
			run: func(t *testing.T, c *client) {
				done := createMessage(t.Context(), c.srv, samplingParams)
				if got, want := c.next(), request+samplingParamsNoTools+"}"; got != want {
					t.Errorf("request:\n got %s\nwant %s", got, want)
				}
				c.write(`{"jsonrpc":"2.0","id":"plughost-1","result":` + samplingResult + `}`)
				wait(t, done)
			},
		},
		"client error": {
			version: "2025-11-25", caps: `{"sampling":{}}`, initialized: true,
			run: func(t *testing.T, c *client) {
				done := createMessage(t.Context(), c.srv, samplingParamsNoTools)
				c.next()
				c.write(`{"jsonrpc":"2.0","id":"plughost-1","error":{"code":-1,"message":"User rejected sampling request"}}`)
				got := wait(t, done)
				var ce *ClientError
				if !errors.As(got.err, &ce) {
					t.Fatalf("CreateMessage error %v, want a *ClientError", got.err)
				}
				want := ClientError{Method: "sampling/createMessage", Code: -1, Message: "User rejected sampling request"}
				if diff := cmp.Diff(want, *ce); diff != "" {
					t.Errorf("ClientError (-want +got):\n%s", diff)
				}
				if !strings.Contains(got.err.Error(), "-1") || !strings.Contains(got.err.Error(), "User rejected") {
					t.Errorf("error text %q names neither code nor message", got.err)
				}
			},
		},
		"cancelled": {
			version: "2025-11-25", caps: `{"sampling":{}}`, initialized: true,
			run: func(t *testing.T, c *client) {
				ctx, cancel := context.WithCancel(t.Context())
				done := createMessage(ctx, c.srv, samplingParamsNoTools)
				c.next()
				cancel()
				got := wait(t, done)
				if !errors.Is(got.err, context.Canceled) {
					t.Errorf("CreateMessage error %v, want context.Canceled", got.err)
				}
				line := c.next()
				if !strings.HasPrefix(line, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"plughost-1","reason":`) {
					t.Errorf("after cancel: %s, want notifications/cancelled for plughost-1", line)
				}
				// A late answer to the cancelled request is ignored.
				if out := c.roundtrip(`{"jsonrpc":"2.0","id":"plughost-1","result":` + samplingResult + `}`); len(out) != 0 {
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
				done := createMessage(t.Context(), c.srv, samplingParamsNoTools)
				c.next()
				c.write(`{"jsonrpc":"2.0","id":"plughost-1","result":` + samplingResult + `}`)
				if got := wait(t, done); got.err != nil {
					t.Errorf("CreateMessage after stray responses: %v", got.err)
				}
			},
		},
		"malformed result": {
			version: "2025-11-25", caps: `{"sampling":{}}`, initialized: true,
			run: func(t *testing.T, c *client) {
				done := createMessage(t.Context(), c.srv, samplingParamsNoTools)
				c.next()
				c.write(`{"jsonrpc":"2.0","id":"plughost-1","result":"Noon."}`)
				if got := wait(t, done); got.err == nil || !strings.Contains(got.err.Error(), "not a JSON object") {
					t.Errorf("CreateMessage = %v, want an error about the result", got.err)
				}
			},
		},
		"session ends while waiting": {
			version: "2025-11-25", caps: `{"sampling":{}}`, initialized: true,
			run: func(t *testing.T, c *client) {
				done := createMessage(t.Context(), c.srv, samplingParamsNoTools)
				c.next()
				if err := c.close(); err != nil {
					t.Errorf("Serve = %v", err)
				}
				if got := wait(t, done); got.err == nil || !strings.Contains(got.err.Error(), "session ended") {
					t.Errorf("CreateMessage = %v, want the session's end", got.err)
				}
				if _, err := c.srv.CreateMessage(t.Context(), json.RawMessage(samplingParamsNoTools)); !errors.Is(err, ErrNoSamplingClient) {
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
					_, err := c.srv.CreateMessage(t.Context(), json.RawMessage(samplingParams))
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

// askModel calls CreateMessage and returns the answering model's name.
func askModel(t *testing.T, srv *Server) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	raw, err := srv.CreateMessage(ctx, json.RawMessage(samplingParamsNoTools))
	if err != nil {
		t.Fatalf("CreateMessage: %v", err)
	}
	var res struct{ Model string }
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	return res.Model
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
		cs, err := c.Connect(t.Context(), &sdk.IOTransport{Reader: pipeEnd{clientIn, nil}, Writer: pipeEnd{nil, clientOut}}, nil)
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
	if m := askModel(t, srv); m != "older" {
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
	if m := askModel(t, srv); m != "newer" {
		t.Errorf("asked %q, want newer", m)
	}
	if !srv.SamplingTools() {
		t.Error("SamplingTools() = false for a 2025-11-25 client with sampling.tools")
	}
	newer.Close()
	if err := <-newerDone; err != nil {
		t.Errorf("ServeStdio = %v", err)
	}
	if m := askModel(t, srv); m != "older" {
		t.Errorf("after newer hung up, asked %q, want older", m)
	}
}

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
			cs, err := client.Connect(ctx, transport(hs.url), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			// A list_changed received proves the client listens on its
			// stream (the GET stream on Streamable HTTP), where requests go.
			hs.cat.Change()
			select {
			case <-changed:
			case <-ctx.Done():
				t.Fatal("no list_changed")
			}
			if m := askModel(t, hs.srv); m != name {
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
	if _, err := hs.srv.CreateMessage(t.Context(), json.RawMessage(samplingParamsNoTools)); !errors.Is(err, ErrNoSamplingClient) {
		t.Errorf("without a GET stream: %v, want ErrNoSamplingClient", err)
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
	done := createMessage(t.Context(), hs.srv, samplingParams)
	e := r.nextWithin(t, 10*time.Second)
	if want := `{"jsonrpc":"2.0","id":"plughost-1","method":"sampling/createMessage","params":` + samplingParamsNoTools + `}`; e.data != want {
		t.Errorf("GET stream event:\n got %s\nwant %s", e.data, want)
	}
	if err := mcptest.CheckSchema(t, "2025-11-25", []byte(e.data), nil); err != nil {
		t.Error(err)
	}
	if s, _, b := hs.roundtrip(req{"POST", "/mcp", postHeaders(sid), `{"jsonrpc":"2.0","id":"plughost-1","result":` + samplingResult + `}`}); s != 202 || b != "" {
		t.Errorf("POSTed response: %d %q, want 202 and no body", s, b)
	}
	if got := wait(t, done); got.err != nil || string(got.res) != samplingResult {
		t.Errorf("CreateMessage = %s, %v", got.res, got.err)
	}
}
