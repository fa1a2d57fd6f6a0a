package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plughost/plughost/host/mcp/internal/mcptest"
	"github.com/plughost/plughost/host/tool"
)

// connectStdio serves one stdio session of srv to the go-sdk client c; the
// channel reports what ServeStdio returned once the client hung up.
func connectStdio(t *testing.T, srv *Server, c *sdk.Client) (*sdk.ClientSession, <-chan error) {
	t.Helper()
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	done := make(chan error, 1)
	// The session ends when the client hangs up (at cleanup, after
	// t.Context is cancelled).
	go func() { done <- srv.ServeStdio(context.Background(), serverIn, serverOut) }()
	cs, err := c.Connect(t.Context(), &sdk.IOTransport{Reader: pipeEnd{clientIn, nil}, Writer: pipeEnd{nil, clientOut}}, sdkSession)
	if err != nil {
		clientOut.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("ServeStdio = %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("ServeStdio did not return after the client hung up")
		}
	})
	return cs, done
}

// TestInputGoSDKStdio: the official go-sdk client, over stdio, answers a
// provider's requests (sampling, elicitation over two rounds, roots) for
// tools, resources and prompts; a client without the elicitation
// capability is not asked (the provider gets -32601 naming it); a
// client's JSON-RPC error reaches the provider.
func TestInputGoSDKStdio(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		opts mcptest.InputClientOptions
		run  func(t *testing.T, ctx context.Context, cs *sdk.ClientSession)
	}{
		"rounds": {run: mcptest.CheckInputRounds},
		"no elicitation": {
			opts: mcptest.InputClientOptions{NoElicitation: true},
			run: func(t *testing.T, ctx context.Context, cs *sdk.ClientSession) {
				want := "a_roots: ok; b_sample: ok; c_elicit: error -32601: the client did not declare the elicitation capability"
				if got, isErr := mcptest.CallText(t, ctx, cs, "everything"); got != want || isErr {
					t.Errorf("everything = %q (isError %v), want %q", got, isErr, want)
				}
				want = "name: error -32601: the client did not declare the elicitation capability"
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
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			cs, _ := connectStdio(t, NewServer(mcptest.NewCatalog(), nil), mcptest.InputClient(tt.opts))
			tt.run(t, ctx, cs)
		})
	}
}

// TestInputCancelledGoSDKStdio: the client cancels a call while its
// elicitation handler is asked: the server cancels its request (the
// handler's context ends), the call's context (the provider's) ends, the
// provider is not run again, and the session settles with nothing in
// flight (TestMain checks no goroutine leaks).
func TestInputCancelledGoSDKStdio(t *testing.T) {
	t.Parallel()
	cat := mcptest.NewCatalog()
	events := make(chan struct{}, 1)
	poke := func() {
		select {
		case events <- struct{}{}:
		default:
		}
	}
	var mu sync.Mutex
	var sess *Session
	srv := NewServer(cat, &Options{OnSession: func(s *Session) func() {
		mu.Lock()
		sess = s
		mu.Unlock()
		return poke
	}})
	asked, handlerEnded := make(chan struct{}), make(chan error, 1)
	client := mcptest.InputClient(mcptest.InputClientOptions{Elicit: func(ctx context.Context, _ *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		close(asked)
		<-ctx.Done()
		handlerEnded <- ctx.Err()
		return nil, ctx.Err()
	}})
	cs, _ := connectStdio(t, srv, client)

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
	select {
	case err := <-handlerEnded:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the handler's context ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server never cancelled its request: the handler still waits")
	}
	timeout := time.After(10 * time.Second)
	for {
		mu.Lock()
		s := sess
		mu.Unlock()
		if s.Pending() == 0 { // the call answered, so its request forgotten
			break
		}
		select {
		case <-events:
		case <-timeout:
			t.Fatalf("the session did not settle: %d pending", s.Pending())
		}
	}
	if err := cat.ScriptContext().Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("the provider's context: %v, want it cancelled", err)
	}
	if n := cat.ScriptRuns(); n != 1 {
		t.Errorf("the provider ran %d times, want 1 (no retry after the cancel)", n)
	}
	// The session goes on.
	if got, _ := mcptest.CallText(t, t.Context(), cs, "roots"); got != "roots: file:///home/ada" {
		t.Errorf("roots after the cancel = %q", got)
	}
}

// TestSurfaceGoSDKStdio: the official go-sdk client, over stdio, lists
// resources, templates and prompts, reads, gets a prompt, completes,
// subscribes (updates of its resources only) and learns of list changes
// of resources and prompts; hanging up releases its subscription.
func TestSurfaceGoSDKStdio(t *testing.T) {
	t.Parallel()
	cat := mcptest.NewCatalog()
	client, ev := mcptest.SurfaceClient()
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- NewServer(cat, nil).ServeStdio(context.Background(), serverIn, serverOut) }()
	cs, err := client.Connect(t.Context(), &sdk.IOTransport{Reader: pipeEnd{clientIn, nil}, Writer: pipeEnd{nil, clientOut}}, sdkSession)
	if err != nil {
		t.Fatal(err)
	}
	mcptest.CheckSurface(t, t.Context(), cs, cat, ev)
	cs.Close()
	if err := <-done; err != nil {
		t.Errorf("ServeStdio = %v", err)
	}
	if n := cat.Subscriptions(); n != 0 {
		t.Errorf("%d live subscriptions after the session ended", n)
	}
}

// TestInputTimeout: a client that does not answer within InputTimeout has
// its request cancelled, and the call fails as timed out (an isError
// result naming the request).
func TestInputTimeout(t *testing.T) {
	t.Parallel()
	c := newClient(t, clientOptions{server: Options{InputTimeout: 20 * time.Millisecond}})
	c.initializeWith("2025-11-25", `{"sampling":{}}`, true)
	c.write(`{"jsonrpc":"2.0","id":"t","method":"tools/call","params":{"name":"sample","arguments":{}}}`)
	if got := c.next(); !strings.Contains(got, `"id":"plughost-1","method":"sampling/createMessage"`) {
		t.Fatalf("first message %s, want the sampling request", got)
	}
	want := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"plughost-1","reason":"the server no longer needs the result: the client did not answer in time"}}`
	if got := c.next(); got != want {
		t.Errorf("after the timeout:\n got %s\nwant %s", got, want)
	}
	want = `{"jsonrpc":"2.0","id":"t","result":{"content":[{"type":"text","text":"the client did not answer sampling/createMessage (the provider's input request \"q\") within 20ms"}],"isError":true}}`
	if got := c.next(); got != want {
		t.Errorf("the call's answer:\n got %s\nwant %s", got, want)
	}
}

// TestInputBoundedByTheCallsLimit: a request to the client waits no longer
// than the time limit of the call that asked, when that is shorter than
// the input timeout.
func TestInputBoundedByTheCallsLimit(t *testing.T) {
	t.Parallel()
	c := newClient(t, clientOptions{})
	c.initializeWith("2025-11-25", `{"sampling":{}}`, true)
	c.write(`{"jsonrpc":"2.0","id":"t","method":"tools/call","params":{"name":"sample_20ms","arguments":{}}}`)
	if got := c.next(); !strings.Contains(got, `"id":"plughost-1","method":"sampling/createMessage"`) {
		t.Fatalf("first message %s, want the sampling request", got)
	}
	if got := c.next(); !strings.Contains(got, `"method":"notifications/cancelled"`) {
		t.Errorf("after the call's limit: %s, want notifications/cancelled", got)
	}
	want := `{"jsonrpc":"2.0","id":"t","result":{"content":[{"type":"text","text":"the client did not answer sampling/createMessage (the provider's input request \"q\") within 20ms"}],"isError":true}}`
	if got := c.next(); got != want {
		t.Errorf("the call's answer:\n got %s\nwant %s", got, want)
	}
}

// TestInputFreesSlot: a call waiting for its client's answer holds no
// slot (its provider does nothing meanwhile): with one slot, another call
// runs meanwhile; the retry takes the slot again.
func TestInputFreesSlot(t *testing.T) {
	t.Parallel()
	c := newClient(t, clientOptions{server: Options{MaxInFlight: 1}, stdio: true})
	c.initializeWith("2025-11-25", `{"sampling":{}}`, true)
	c.write(`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"sample","arguments":{}}}`)
	if got := c.next(); !strings.Contains(got, `"id":"plughost-1","method":"sampling/createMessage"`) {
		t.Fatalf("first message %s, want the sampling request", got)
	}
	if r := c.one(`{"jsonrpc":"2.0","id":"e","method":"tools/call","params":{"name":"echo","arguments":{"text":"meanwhile"}}}`); r.Error != nil ||
		!strings.Contains(string(r.Result), "meanwhile") {
		t.Errorf("a call while another waits for the client: %s %+v", r.Result, r.Error)
	}
	r := c.one(`{"jsonrpc":"2.0","id":"plughost-1","result":` + mcptest.SamplingResult + `}`)
	if !strings.Contains(string(r.Result), "the model said: Noon.") {
		t.Errorf("the call after the answer: %s %+v", r.Result, r.Error)
	}
}

// TestInputRequestOrder: a provider's requests go to the client shorter
// keys first, keys of one length in string order, so numeric keys (the Go
// SDK's "1".."16") go in numeric order.
func TestInputRequestOrder(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		keys []string
		want string
	}{
		"numeric":      {[]string{"10", "2", "1", "16", "9"}, "1 2 9 10 16"},
		"names":        {[]string{"c_elicit", "a_roots", "b_sample"}, "a_roots b_sample c_elicit"},
		"mixed length": {[]string{"bb", "a", "ab", "b"}, "a b ab bb"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var b strings.Builder
			for i, k := range tt.keys {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(`"` + k + `":{"method":"roots/list"}`)
			}
			reqs, err := parseInputRequests(json.RawMessage("{" + b.String() + "}"))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range reqs {
				got = append(got, r.key)
			}
			if strings.Join(got, " ") != tt.want {
				t.Errorf("order %v, want %s", got, tt.want)
			}
		})
	}
}

// TestInputNamesProvider: the retry's Input carries the client's answers
// by key, the errors by key, the state and the provider that asked (so the
// catalog can refuse a retry routed to another provider).
func TestInputNamesProvider(t *testing.T) {
	t.Parallel()
	c := newClient(t, clientOptions{})
	c.initializeWith("2025-11-25", `{"roots":{},"sampling":{}}`, true)
	c.write(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"everything","arguments":{}}}`)
	if r := decode(t, c.next()); r.Method != "roots/list" {
		t.Fatalf("got %+v, want roots/list", r)
	}
	c.write(`{"jsonrpc":"2.0","id":"plughost-1","result":{"roots":[]}}`)
	if r := decode(t, c.next()); r.Method != "sampling/createMessage" {
		t.Fatalf("got %+v, want sampling/createMessage", r)
	}
	r := c.one(`{"jsonrpc":"2.0","id":"plughost-2","result":` + mcptest.SamplingResult + `}`)
	if want := "a_roots: ok; b_sample: ok; c_elicit: error -32601: the client did not declare the elicitation capability"; !strings.Contains(string(r.Result), want) {
		t.Errorf("everything = %s %+v, want %q", r.Result, r.Error, want)
	}
	want := &tool.Input{
		Responses: json.RawMessage(`{"a_roots":{"roots":[]},"b_sample":` + mcptest.SamplingResult + `}`),
		Errors:    map[string]tool.InputError{"c_elicit": {Code: tool.CodeNotSupported, Message: "the client did not declare the elicitation capability"}},
		State:     "everything",
		Provider:  mcptest.ScriptProvider,
	}
	if diff := cmp.Diff(want, c.cat.LastInput()); diff != "" {
		t.Errorf("the retry's Input (-want +got):\n%s", diff)
	}
}
