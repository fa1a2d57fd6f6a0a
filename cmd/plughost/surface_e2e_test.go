package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	hostmcp "github.com/plughost/plughost/host/mcp"
)

// The whole server surface through plugins, end to end: the real binary,
// real plugins (conformance, files, askplugin), the official go-sdk client
// with sampling, elicitation and roots handlers, over stdio and over
// Streamable HTTP.

// surfaceClient is a go-sdk client session that hears everything the host
// may ask or tell.
type surfaceClient struct {
	cs           *mcp.ClientSession
	workspace    string
	listsChanged chan struct{} // tools or resources list_changed
	updated      chan string
	waiting      chan struct{} // a wait_for_user elicitation reached the client
	abandoned    chan error    // its context ended: why
	stop         chan struct{} // closed at the end: a waiting handler gives up
}

// surfaceClientOptions are the client's handlers: sampling answers
// "sampled: <the first message's text>", elicitation accepts (except
// wait_for_user's, which waits until the host gives up on it).
func (c *surfaceClient) options(asks bool) *mcp.ClientOptions {
	o := &mcp.ClientOptions{
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { c.listChanged() },
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { c.listChanged() },
		ResourceUpdatedHandler:     func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { c.updated <- r.Params.URI },
	}
	if !asks {
		return o
	}
	o.CreateMessageHandler = func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		var said string
		if len(r.Params.Messages) > 0 {
			if tc, ok := r.Params.Messages[0].Content.(*mcp.TextContent); ok {
				said = tc.Text
			}
		}
		return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", Content: &mcp.TextContent{Text: "sampled: " + said}}, nil
	}
	o.ElicitationHandler = func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if r.Params.Message == "Take your time." {
			c.waiting <- struct{}{}
			select {
			case <-ctx.Done():
				c.abandoned <- ctx.Err()
				return nil, ctx.Err()
			case <-c.stop:
				return nil, errors.New("the test ended")
			}
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "ada", "email": "ada@example.com"}}, nil
	}
	return o
}

// connectSurface starts plughost with the conformance, files and askplugin
// plugins over transport ("stdio" or "http") and connects a client; asks
// says whether it declares sampling and elicitation (it always has roots).
func connectSurface(t *testing.T, transport string, asks bool, era string) *surfaceClient {
	t.Helper()
	c := &surfaceClient{
		listsChanged: make(chan struct{}, 1),
		updated:      make(chan string, 16),
		waiting:      make(chan struct{}, 1),
		abandoned:    make(chan error, 1),
		stop:         make(chan struct{}),
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "plughost-e2e", Version: "1"}, c.options(asks))
	client.AddRoots(&mcp.Root{URI: "file:///home/ada/project", Name: "project"})
	plugins := []string{"conformance", "files", "askplugin"}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	opts := sessionEra
	if era == "2026-07-28" {
		opts = nil // the go-sdk client's default: server/discover, no session
	}
	switch transport {
	case "stdio":
		dir, ws := t.TempDir(), t.TempDir()
		if err := os.Chmod(ws, 0o777); err != nil {
			t.Fatal(err)
		}
		for _, p := range plugins {
			copyPlugin(t, p, dir, p)
		}
		cmd := exec.Command(bin.plughost, "serve", "--plugins", dir, "--workspace", ws)
		cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir())
		stderr := newLineBuffer()
		cmd.Stderr = stderr
		cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, opts)
		if err != nil {
			t.Fatalf("connect: %v\nstderr:\n%s", err, stderr)
		}
		t.Cleanup(func() {
			close(c.stop)
			cs.Close()
			if leftover := processesUnder(dir); len(leftover) > 0 {
				t.Errorf("plugin processes outlived the host: %v", leftover)
			}
			if t.Failed() {
				t.Logf("plughost stderr:\n%s", stderr)
			}
		})
		c.cs, c.workspace = cs, ws
	case "http":
		h := startHTTPHost(t, plugins...)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: h.base + "/mcp", HTTPClient: h.httpClient(nil)}, opts)
		if err != nil {
			t.Fatalf("connect: %v\nstderr:\n%s", err, h.stderr)
		}
		t.Cleanup(func() { close(c.stop); cs.Close() })
		c.cs, c.workspace = cs, h.workspace
	}
	if v := c.cs.InitializeResult().ProtocolVersion; v != era {
		t.Fatalf("negotiated %q, want %q", v, era)
	}
	c.awaitResource(t, "test://static-text")
	return c
}

func (c *surfaceClient) listChanged() {
	select {
	case c.listsChanged <- struct{}{}:
	default: // one pending is enough: the lists are read again
	}
}

// resourceURIs lists every resource's URI, sorted.
func (c *surfaceClient) resourceURIs(t *testing.T) []string {
	t.Helper()
	var uris []string
	for r, err := range c.cs.Resources(t.Context(), nil) {
		if err != nil {
			t.Fatalf("resources/list: %v", err)
		}
		uris = append(uris, r.URI)
	}
	slices.Sort(uris)
	return uris
}

// awaitResource waits until the resource list holds uri and the tools of
// every plugin are listed, listing again after each list_changed.
//
// In the stateless era the go-sdk client caches a list for its ttlMs
// (SEP-2549; plughost says 500 ms) and empties the cache on list_changed,
// but a list whose answer was on its way when the notification came is
// put in the cache after it was emptied: the list after the notification
// can be that stale one, and no further notification comes. So it also
// lists again once such an entry has expired.
func (c *surfaceClient) awaitResource(t *testing.T, uri string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		if slices.Contains(c.resourceURIs(t), uri) && c.hasTool(t, "wait_for_user") {
			return
		}
		select {
		case <-c.listsChanged:
		case <-time.After(2 * hostmcp.DefaultListTTL):
		case <-deadline:
			t.Fatalf("resources = %v; %s never appeared", c.resourceURIs(t), uri)
		}
	}
}

func (c *surfaceClient) hasTool(t *testing.T, name string) bool {
	for tool, err := range c.cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		if tool.Name == name {
			return true
		}
	}
	return false
}

func (c *surfaceClient) call(t *testing.T, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := c.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

var transports = []string{"stdio", "http"}

// eras are the protocol versions the go-sdk client is made to speak: a
// 2025-11-25 session, and 2026-07-28 without one.
var eras = []string{"2025-11-25", "2026-07-28"}

// eachTransportAndEra runs test once per transport and era, in parallel.
func eachTransportAndEra(t *testing.T, test func(t *testing.T, transport, era string)) {
	for _, tr := range transports {
		for _, era := range eras {
			t.Run(tr+"/"+era, func(t *testing.T) {
				t.Parallel()
				test(t, tr, era)
			})
		}
	}
}

func TestResourcesPromptsCompletionEndToEnd(t *testing.T) {
	t.Parallel()
	eachTransportAndEra(t, func(t *testing.T, tr, era string) {
		c := connectSurface(t, tr, true, era)
		ctx := t.Context()
		if caps := c.cs.InitializeResult().Capabilities; caps.Resources == nil || !caps.Resources.Subscribe ||
			!caps.Resources.ListChanged || caps.Prompts == nil || caps.Completions == nil {
			t.Errorf("capabilities = %+v; want resources (subscribe, listChanged), prompts and completions", caps)
		}

		// Resources of two plugins, text and binary, and a template.
		got, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static-text"})
		if err != nil || len(got.Contents) != 1 || got.Contents[0].Text != "This is the content of the static text resource." {
			t.Errorf("read static-text = %+v, %v", got, err)
		}
		got, err = c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static-binary"})
		if err != nil || len(got.Contents) != 1 || got.Contents[0].MIMEType != "image/png" || len(got.Contents[0].Blob) == 0 {
			t.Errorf("read static-binary = %+v, %v", got, err)
		}
		got, err = c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://template/123/data"})
		if err != nil || len(got.Contents) != 1 || !strings.Contains(got.Contents[0].Text, `"Data for ID: 123"`) {
			t.Errorf("read through the template = %+v, %v", got, err)
		}
		_, err = c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://nowhere"})
		if want := map[string]int64{"2025-11-25": -32002, "2026-07-28": -32602}[era]; code(err) != want { // SEP-2164
			t.Errorf("read of an unknown resource: error %v, want %d", err, want)
		}
		tmpl, err := c.cs.ListResourceTemplates(ctx, nil)
		if err != nil || len(tmpl.ResourceTemplates) != 1 || tmpl.ResourceTemplates[0].URITemplate != "test://template/{id}/data" {
			t.Errorf("templates = %+v, %v", tmpl, err)
		}

		// Prompts and completion.
		pr, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_prompt_with_arguments", Arguments: map[string]string{"arg1": "a", "arg2": "b"}})
		if err != nil || len(pr.Messages) != 1 || pr.Messages[0].Content.(*mcp.TextContent).Text != "Prompt with arguments: arg1='a', arg2='b'" {
			t.Errorf("get prompt = %+v, %v", pr, err)
		}
		_, err = c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_prompt_with_arguments", Arguments: map[string]string{"arg1": "a"}})
		if code(err) != -32602 || !strings.Contains(err.Error(), "arg2") {
			t.Errorf("get prompt without arg2: error %v, want -32602 naming it", err)
		}
		comp, err := c.cs.Complete(ctx, &mcp.CompleteParams{
			Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "test_prompt_with_arguments"},
			Argument: mcp.CompleteParamsArgument{Name: "arg1", Value: "par"},
		})
		if err != nil || !slices.Equal(comp.Completion.Values, []string{"paris", "park", "party"}) {
			t.Errorf("complete = %+v, %v", comp, err)
		}

		// The files plugin: a new file is a new resource; writing it
		// again reaches its subscribers only.
		if res := c.call(t, "create_file", map[string]any{"filename": "notes.txt", "content": "one"}); res.IsError {
			t.Fatalf("create_file: %s", text(res))
		}
		uri := "file://" + filepath.Join(c.workspace, "notes.txt")
		c.awaitResource(t, uri)
		if err := c.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
		// Written by someone else (the plugin sees it through inotify,
		// inside its sandbox).
		if err := os.WriteFile(filepath.Join(c.workspace, "notes.txt"), []byte("two, longer"), 0o644); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-c.updated:
			if got != uri {
				t.Errorf("resources/updated for %s, want %s", got, uri)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no notifications/resources/updated after the subscribed file changed")
		}
		read, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil || read.Contents[0].Text != "two, longer" {
			t.Errorf("read %s = %+v, %v", uri, read, err)
		}
		if err := c.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
			t.Error(err)
		}
	})
}

func TestPluginAsksTheClientEndToEnd(t *testing.T) {
	t.Parallel()
	eachTransportAndEra(t, func(t *testing.T, tr, era string) {
		c := connectSurface(t, tr, true, era)
		for _, tc := range []struct {
			tool string
			args map[string]any
			want string
		}{
			{"test_sampling", map[string]any{"prompt": "2+2?"}, "LLM response: sampled: 2+2?"},
			{"test_elicitation", map[string]any{"message": "Who?"}, `User response: <action: accept, content: {"email":"ada@example.com","username":"ada"}>`},
			{"roots", nil, "file:///home/ada/project"},
			{"twice", nil, "accept, then sampled: the user said accept"},
		} {
			res := c.call(t, tc.tool, tc.args)
			if res.IsError || text(res) != tc.want {
				t.Errorf("%s = %q (isError %v), want %q", tc.tool, text(res), res.IsError, tc.want)
			}
		}

		// A call cancelled while the client is asked: the request to
		// the client is abandoned, and the host goes on serving.
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			_, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "wait_for_user"})
			done <- err
		}()
		select {
		case <-c.waiting:
		case <-time.After(30 * time.Second):
			t.Fatal("wait_for_user's elicitation never reached the client")
		}
		cancel()
		if err := <-done; err == nil {
			t.Error("the cancelled call returned no error")
		}
		select {
		case err := <-c.abandoned:
			if err == nil {
				t.Error("the elicitation's context ended without an error")
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the host never cancelled its elicitation request after the call was cancelled")
		}
		if res := c.call(t, "test_simple_text", nil); res.IsError {
			t.Errorf("after the cancelled call: %s", text(res))
		}
	})
}

func TestPluginAsksAClientThatCannotAnswer(t *testing.T) {
	t.Parallel()
	eachTransportAndEra(t, func(t *testing.T, tr, era string) {
		c := connectSurface(t, tr, false, era)
		for tool, capability := range map[string]string{"test_elicitation": "elicitation", "test_sampling": "sampling"} {
			res := c.call(t, tool, map[string]any{"message": "x", "prompt": "x"})
			if !res.IsError || !strings.Contains(text(res), capability) {
				t.Errorf("%s with a client lacking %s = %q (isError %v); want an isError result naming it", tool, capability, text(res), res.IsError)
			}
		}
	})
}

// code is the JSON-RPC error code of err, 0 if it is none.
func code(err error) int64 {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return we.Code
	}
	return 0
}
