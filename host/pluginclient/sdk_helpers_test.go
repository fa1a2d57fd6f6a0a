package pluginclient

// Helpers of the tests that serve a plugin of the SDK to this client.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"

	"github.com/hashicorp/go-plugin"
	"github.com/plughost/plughost/internal/lane"
	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/pluginproto"
	"google.golang.org/grpc"
)

// describe is what the test handlers answer: the caller as they got it.
func describe(c *pluginproto.Caller) string {
	if c == nil {
		return "nobody"
	}
	return fmt.Sprintf("%s %s %s %v %s %v", c.Subject, c.ClientID, c.Issuer, c.Scopes, c.Claims, c.Local)
}

// job is a handler that goes on as a task when it can, reports progress,
// asks again, and returns whether it went on as a task each time.
func job(_ context.Context, r *pluginproto.Request) (*pluginproto.Result, error) {
	first := r.RunAsTask()
	r.Progress(1, 0, "working")
	second := r.RunAsTask()
	return pluginproto.TextResult(fmt.Sprintf("task %v %v", first, second)), nil
}

func sampleTen(ctx context.Context, r *pluginproto.Request) error {
	_, err := r.Sample(ctx, pluginproto.SampleParams{Messages: []pluginproto.Message{{Role: "user", Content: pluginproto.Text("hi")}}, MaxTokens: 10})
	return err
}

func readsAs(text string) pluginproto.ResourceHandler {
	return func(context.Context, *pluginproto.ResourceRead) (*pluginproto.ResourceResult, error) {
		return pluginproto.TextContents("", text), nil
	}
}

// fakeProxy records what it is handed and answers as its fields say.
type fakeProxy struct {
	mu    sync.Mutex
	calls []pluginhost.ProxyCall
	reads []string
	subs  []string // "+uri" or "-uri"

	call      func(ctx context.Context, c *pluginhost.ProxyCall) (json.RawMessage, error)
	read      func(uri string, caps json.RawMessage, in *pluginhost.Input) (json.RawMessage, error)
	prompt    func(name string, args, caps json.RawMessage, in *pluginhost.Input) (json.RawMessage, error)
	complete  func(params json.RawMessage) (json.RawMessage, error)
	subscribe error
}

func (f *fakeProxy) CallTool(ctx context.Context, c *pluginhost.ProxyCall) (json.RawMessage, error) {
	f.mu.Lock()
	f.calls = append(f.calls, *c)
	f.mu.Unlock()
	return f.call(ctx, c)
}

func (f *fakeProxy) ReadResource(_ context.Context, uri string, caps json.RawMessage, in *pluginhost.Input) (json.RawMessage, error) {
	f.mu.Lock()
	f.reads = append(f.reads, uri)
	f.mu.Unlock()
	return f.read(uri, caps, in)
}

func (f *fakeProxy) GetPrompt(_ context.Context, name string, args, caps json.RawMessage, in *pluginhost.Input) (json.RawMessage, error) {
	return f.prompt(name, args, caps, in)
}

func (f *fakeProxy) Complete(_ context.Context, params json.RawMessage) (json.RawMessage, error) {
	return f.complete(params)
}

func (f *fakeProxy) SubscribeResource(_ context.Context, uri string, subscribe bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if subscribe {
		f.subs = append(f.subs, "+"+uri)
	} else {
		f.subs = append(f.subs, "-"+uri)
	}
	return f.subscribe
}

// recordingProxy answers every call, handing it to got.
type recordingProxy struct{ got chan<- *pluginhost.ProxyCall }

func (r recordingProxy) CallTool(_ context.Context, c *pluginhost.ProxyCall) (json.RawMessage, error) {
	r.got <- c
	return json.RawMessage(`{"content":[]}`), nil
}
func (recordingProxy) ReadResource(context.Context, string, json.RawMessage, *pluginhost.Input) (json.RawMessage, error) {
	return nil, pluginproto.ErrUnknownResource
}
func (recordingProxy) GetPrompt(context.Context, string, json.RawMessage, json.RawMessage, *pluginhost.Input) (json.RawMessage, error) {
	return nil, pluginproto.ErrUnknownPrompt
}
func (recordingProxy) Complete(context.Context, json.RawMessage) (json.RawMessage, error) {
	return json.RawMessage(`{}`), nil
}
func (recordingProxy) SubscribeResource(context.Context, string, bool) error { return nil }

// textResult is the JSON of pluginproto.TextResult(s), as the plugin
// sends it.
func textResult(t *testing.T, s string) json.RawMessage {
	t.Helper()
	type text struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	b, err := json.Marshal(map[string][]text{"content": {{"text", s}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// describedPlugin serves p, with the SDK's own server, and describes it.
func describedPlugin(t *testing.T, p *pluginproto.Plugin) *Client {
	t.Helper()
	c, _ := servePlugin(t, p)
	if _, err := c.Describe(t.Context(), "test"); err != nil {
		t.Fatal(err)
	}
	if c.OnLane() != overLane() {
		t.Fatalf("calls on the lane: %v, want %v", c.OnLane(), overLane())
	}
	return c
}

// servePlugin serves p, with the SDK's own server, as serve does.
func servePlugin(t testing.TB, p *pluginproto.Plugin) (*Client, *grpc.Server) {
	t.Helper()
	return servePluginAs(t, ContractVersion, p)
}

// servePluginAs is servePlugin for a Client speaking contract.
func servePluginAs(t testing.TB, contract uint32, p *pluginproto.Plugin) (*Client, *grpc.Server) {
	t.Helper()
	g := pluginhost.Of(p).PluginSet()[PluginName].(plugin.GRPCPlugin)
	c, s := serveOn(t, contract, func(s *grpc.Server) {
		if err := g.GRPCServer(nil, s); err != nil {
			t.Fatal(err)
		}
	}, nil)
	if overLane() {
		host, plugin, err := lane.Pair()
		if err != nil {
			t.Fatal(err)
		}
		pluginhost.Of(p).SetLane(plugin)
		c.OfferLane(host, nil)
		t.Cleanup(func() { _ = host.Close() }) // the plugin's lane then ends
	}
	return c, s
}

// transportEnv, set to "grpc", has the tests that serve the SDK's plugin
// keep its calls on gRPC; by default they go on the frame lane, as a
// host's do. TestSuiteOverGRPC runs the package's tests again so.
const transportEnv = "PLUGHOST_TEST_TRANSPORT"

// overLane reports whether the SDK's plugins the tests serve get a lane.
func overLane() bool { return os.Getenv(transportEnv) != "grpc" }

// TestSuiteOverGRPC runs this package's tests again with the calls of the
// SDK's plugins on the CallsV2 rpc instead of the frame lane: the call
// logic must behave the same over both.
func TestSuiteOverGRPC(t *testing.T) {
	if !overLane() {
		return // this is the run over gRPC
	}
	if testing.Short() {
		t.Skip("the suite over gRPC runs without -short")
	}
	cmd := exec.Command(os.Args[0], "-test.skip", "^TestSuiteOverGRPC$", "-test.count=1")
	cmd.Env = append(os.Environ(), transportEnv+"=grpc")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the suite over gRPC failed: %v\n%s", err, out)
	}
}

func nopHandler(context.Context, *pluginproto.Request) (*pluginproto.Result, error) {
	return pluginproto.TextResult("ok"), nil
}

func toolNames(t *testing.T, tools []json.RawMessage) []string {
	t.Helper()
	names := make([]string, len(tools))
	for i, raw := range tools {
		var tool struct{ Name string }
		if err := json.Unmarshal(raw, &tool); err != nil {
			t.Fatal(err)
		}
		names[i] = tool.Name
	}
	return names
}

func jsonStrings[T ~[]byte](items []T) []string {
	out := make([]string, len(items))
	for i, b := range items {
		out[i] = string(b)
	}
	return out
}
