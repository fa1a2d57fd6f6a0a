package streamable

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plughost/plughost/host/mcp/internal/mcptest"
)

// initializeWith opens a 2025-11-25 session declaring caps and returns its
// id; no GET stream is opened.
func (hs *httpServer) initializeWith(caps string) string {
	hs.t.Helper()
	status, h, body := hs.roundtrip(req{"POST", "/mcp", postHeaders(""), `{"jsonrpc":"2.0","id":1,"method":"initialize","params":` +
		`{"protocolVersion":"2025-11-25","capabilities":` + caps + `,"clientInfo":{"name":"t","version":"1"}}}`})
	sid := h.Get("Mcp-Session-Id")
	if status != 200 || sid == "" {
		hs.t.Fatalf("initialize: %d %s", status, body)
	}
	if s, _, b := hs.roundtrip(req{"POST", "/mcp", postHeaders(sid), `{"jsonrpc":"2.0","method":"notifications/initialized"}`}); s != 202 {
		hs.t.Fatalf("notifications/initialized: %d %s", s, b)
	}
	return sid
}

// TestInputOnPOSTStream: a provider's requests to the client travel the
// stream of the POST whose call needs them, so a client with no GET stream
// open gets them; its POSTed answers (202) let the call go on, round after
// round, and the call's result ends that stream.
func TestInputOnPOSTStream(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, nil)
	sid := hs.initializeWith(`{"elicitation":{"form":{}}}`)
	resp := hs.do(req{"POST", "/mcp", postHeaders(sid), `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"survey","arguments":{}}}`})
	defer resp.Body.Close()
	r := newSSEReader(t, resp)
	for i, answer := range []string{`{"action":"accept","content":{"name":"Ada"}}`, `{"action":"accept","content":{"color":"teal"}}`} {
		e := r.nextWithin(t, 10*time.Second)
		id := `"plughost-` + string(rune('1'+i)) + `"`
		if !strings.HasPrefix(e.data, `{"jsonrpc":"2.0","id":`+id+`,"method":"elicitation/create","params":{`) {
			t.Fatalf("event %d on the POST's stream: %s, want the request %s", i, e.data, id)
		}
		if err := mcptest.CheckSchema(t, "2025-11-25", []byte(e.data), nil); err != nil {
			t.Error(err)
		}
		if s, _, b := hs.roundtrip(req{"POST", "/mcp", postHeaders(sid), `{"jsonrpc":"2.0","id":` + id + `,"result":` + answer + `}`}); s != 202 || b != "" {
			t.Fatalf("POSTed answer: %d %q, want 202 and no body", s, b)
		}
	}
	e := r.nextWithin(t, 10*time.Second)
	if want := `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"name=Ada color=teal"}]}}`; e.data != want {
		t.Errorf("the call's result:\n got %s\nwant %s", e.data, want)
	}
	if err := mcptest.CheckSchema(t, "2025-11-25", []byte(e.data), func(json.RawMessage) string { return "tools/call" }); err != nil {
		t.Error(err)
	}
	if e, ok := r.next(); ok {
		t.Errorf("the stream goes on after the result: %+v", e)
	}
}

// TestInputCancelledOnPOSTStream: the client cancels a call while the
// server waits for its answer: the server cancels its request on the same
// stream, which then ends without a response; a late answer is ignored.
func TestInputCancelledOnPOSTStream(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, nil)
	sid := hs.initializeWith(`{"sampling":{}}`)
	resp := hs.do(req{"POST", "/mcp", postHeaders(sid), `{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"sample","arguments":{}}}`})
	defer resp.Body.Close()
	r := newSSEReader(t, resp)
	if e := r.nextWithin(t, 10*time.Second); !strings.Contains(e.data, `"id":"plughost-1","method":"sampling/createMessage"`) {
		t.Fatalf("first event %s, want the sampling request", e.data)
	}
	if s, _, b := hs.roundtrip(req{"POST", "/mcp", postHeaders(sid), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c"}}`}); s != 202 {
		t.Fatalf("notifications/cancelled: %d %s", s, b)
	}
	want := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"plughost-1","reason":"the server no longer needs the result: context canceled"}}`
	if e := r.nextWithin(t, 10*time.Second); e.data != want {
		t.Errorf("after the cancel:\n got %s\nwant %s", e.data, want)
	}
	if e, ok := r.next(); ok {
		t.Errorf("the cancelled call's stream goes on: %+v", e)
	}
	if s, _, b := hs.roundtrip(req{"POST", "/mcp", postHeaders(sid), `{"jsonrpc":"2.0","id":"plughost-1","result":` + mcptest.SamplingResult + `}`}); s != 202 {
		t.Errorf("late answer: %d %s", s, b)
	}
	hs.await("the session to settle", hs.settled)
	if n := hs.cat.ScriptRuns(); n != 1 {
		t.Errorf("the provider ran %d times, want 1", n)
	}
}

// TestInputCancelledOnBothStreams: when the client cancels a call whose
// request to it is pending, the server cancels that request on the call's
// own stream (the POST's) and on the session's GET stream too: a client
// that cancels its call may have stopped reading the POST's stream.
func TestInputCancelledOnBothStreams(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, nil)
	sid := hs.initializeWith(`{"sampling":{}}`)
	get := hs.do(req{"GET", "/mcp", map[string]string{"Accept": "text/event-stream", "Mcp-Session-Id": sid}, ""})
	defer get.Body.Close()
	own := newSSEReader(t, get)
	own.raw = true
	// The priming event is written as the stream attaches: once it is
	// read, the session counts as listening.
	if e := own.nextWithin(t, 10*time.Second); e.data != "" || e.id != "0_0" {
		t.Fatalf("first event on the GET stream %+v, want the priming event 0_0", e)
	}
	own.raw = false
	resp := hs.do(req{"POST", "/mcp", postHeaders(sid), `{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"sample","arguments":{}}}`})
	defer resp.Body.Close()
	post := newSSEReader(t, resp)
	if e := post.nextWithin(t, 10*time.Second); !strings.Contains(e.data, `"id":"plughost-1","method":"sampling/createMessage"`) {
		t.Fatalf("first event on the POST's stream %s, want the sampling request", e.data)
	}
	if s, _, b := hs.roundtrip(req{"POST", "/mcp", postHeaders(sid), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c"}}`}); s != 202 {
		t.Fatalf("notifications/cancelled: %d %s", s, b)
	}
	want := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"plughost-1","reason":"the server no longer needs the result: context canceled"}}`
	if e := own.nextWithin(t, 10*time.Second); e.data != want {
		t.Errorf("on the GET stream:\n got %s\nwant %s", e.data, want)
	}
	if e := post.nextWithin(t, 10*time.Second); e.data != want {
		t.Errorf("on the POST's stream:\n got %s\nwant %s", e.data, want)
	}
	if e, ok := post.next(); ok {
		t.Errorf("the cancelled call's stream goes on: %+v", e)
	}
	hs.await("the session to settle", hs.settled)
}

// TestInputGoSDKHTTP: the official go-sdk client answers a provider's
// requests over Streamable HTTP and over the deprecated HTTP+SSE
// transport: sampling, elicitation over two rounds, roots, for tools,
// resources and prompts; without the elicitation capability it is not
// asked; its JSON-RPC error reaches the provider.
func TestInputGoSDKHTTP(t *testing.T) {
	t.Parallel()
	transports := map[string]func(url string) sdk.Transport{
		"streamable": func(url string) sdk.Transport { return &sdk.StreamableClientTransport{Endpoint: url + PathMCP} },
		"legacy sse": func(url string) sdk.Transport { return &sdk.SSEClientTransport{Endpoint: url + PathSSE} },
	}
	tests := map[string]struct {
		opts mcptest.InputClientOptions
		run  func(t *testing.T, ctx context.Context, cs *sdk.ClientSession)
	}{
		"rounds": {run: mcptest.CheckInputRounds},
		"no elicitation": {
			opts: mcptest.InputClientOptions{NoElicitation: true},
			run: func(t *testing.T, ctx context.Context, cs *sdk.ClientSession) {
				want := "name: error -32601: the client did not declare the elicitation capability"
				if got, isErr := mcptest.CallText(t, ctx, cs, "survey"); got != want || !isErr {
					t.Errorf("survey = %q (isError %v), want %q as an isError result", got, isErr, want)
				}
			},
		},
		"client error": {
			opts: mcptest.InputClientOptions{RefuseSampling: true},
			run: func(t *testing.T, ctx context.Context, cs *sdk.ClientSession) {
				want := "q: error -1: User rejected sampling request"
				if got, isErr := mcptest.CallText(t, ctx, cs, "sample"); got != want || !isErr {
					t.Errorf("sample = %q (isError %v), want %q as an isError result", got, isErr, want)
				}
			},
		},
	}
	for tname, transport := range transports {
		for name, tt := range tests {
			t.Run(tname+"/"+name, func(t *testing.T) {
				t.Parallel()
				hs := startHTTP(t, nil)
				ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
				defer cancel()
				cs, err := mcptest.InputClient(tt.opts).Connect(ctx, transport(hs.url), sessionEra)
				if err != nil {
					t.Fatal(err)
				}
				defer cs.Close()
				tt.run(t, ctx, cs)
			})
		}
	}
}

// TestInputCancelledGoSDKHTTP: the go-sdk client cancels a call over
// Streamable HTTP while its elicitation handler is asked: the call's
// context (the provider's) ends, the provider is not run again, and the
// session settles with nothing in flight.
func TestInputCancelledGoSDKHTTP(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, nil)
	asked, release := make(chan struct{}), make(chan struct{})
	client := mcptest.InputClient(mcptest.InputClientOptions{Elicit: func(ctx context.Context, _ *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		close(asked)
		select {
		case <-ctx.Done():
		case <-release:
		}
		return nil, errors.New("no answer")
	}})
	cs, err := client.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: hs.url + PathMCP}, sessionEra)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	defer close(release) // before Close, which waits for the handler
	ctx, cancel := context.WithCancel(t.Context())
	called := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "survey"})
		called <- err
	}()
	select {
	case <-asked:
	case <-time.After(10 * time.Second):
		t.Fatal("the client was never asked")
	}
	cancel()
	select {
	case err := <-called:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("CallTool = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("CallTool did not return")
	}
	hs.await("the call to end", func() bool {
		c := hs.cat.ScriptContext()
		return c != nil && c.Err() != nil && hs.settled()
	})
	if n := hs.cat.ScriptRuns(); n != 1 {
		t.Errorf("the provider ran %d times, want 1", n)
	}
}

// TestSurfaceGoSDKHTTP: the go-sdk client over Streamable HTTP lists
// resources, templates and prompts, reads, gets, completes, subscribes
// (resources/updated on its GET stream, only for its resources) and learns
// of list changes; ending the session releases its subscriptions.
func TestSurfaceGoSDKHTTP(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, nil)
	client, ev := mcptest.SurfaceClient()
	cs, err := client.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: hs.url + PathMCP}, sessionEra)
	if err != nil {
		t.Fatal(err)
	}
	mcptest.CheckSurface(t, t.Context(), cs, hs.cat, ev)
	cs.Close() // DELETE
	hs.await("the subscriptions to be released", func() bool { return hs.cat.Subscriptions() == 0 })
}
