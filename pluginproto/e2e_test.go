package pluginproto_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/plughost/plughost/pluginproto"
)

// helperEnv makes the test binary, re-executed by startPlugin, serve
// helperPlugin instead of running the tests.
const helperEnv = "PLUGHOST_TEST_HELPER_PLUGIN"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		pluginproto.Serve(helperPlugin())
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helperPlugin is the plugin the end-to-end tests talk to.
func helperPlugin() *pluginproto.Plugin {
	p := pluginproto.New("helper", "0.1.0")
	echo := func(_ context.Context, r *pluginproto.Request) (*pluginproto.Result, error) {
		var args struct{ Text string }
		if err := r.Bind(&args); err != nil {
			return nil, err
		}
		return pluginproto.TextResult(args.Text), nil
	}
	p.AddTool(pluginproto.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object","properties":{"Text":{"type":"string"}}}`)}, echo)
	p.AddTool(pluginproto.Tool{Name: "report"}, func(_ context.Context, r *pluginproto.Request) (*pluginproto.Result, error) {
		r.Log("info", map[string]string{"step": "start"})
		r.Progress(1, 2, "half")
		r.Progress(2, 2, "done")
		return &pluginproto.Result{Content: []pluginproto.Content{pluginproto.Text("reported")}, StructuredContent: map[string]int{"steps": 2}}, nil
	})
	// block reports progress, waits for its context to end, then announces
	// the cancellation by adding a tool named cancelled_<id>.
	p.AddTool(pluginproto.Tool{Name: "block"}, func(ctx context.Context, r *pluginproto.Request) (*pluginproto.Result, error) {
		var args struct{ ID string }
		if err := r.Bind(&args); err != nil {
			return nil, err
		}
		r.Progress(0, 0, "blocked")
		<-ctx.Done()
		p.AddTool(pluginproto.Tool{Name: "cancelled_" + args.ID}, echo)
		return nil, ctx.Err()
	})
	p.AddTool(pluginproto.Tool{Name: "panic"}, func(context.Context, *pluginproto.Request) (*pluginproto.Result, error) {
		panic("boom")
	})
	p.AddTool(pluginproto.Tool{Name: "add_tool"}, func(_ context.Context, r *pluginproto.Request) (*pluginproto.Result, error) {
		var args struct{ Name string }
		if err := r.Bind(&args); err != nil {
			return nil, err
		}
		p.AddTool(pluginproto.Tool{Name: args.Name, Description: "added"}, echo)
		return pluginproto.TextResult("added " + args.Name), nil
	})
	p.AddTool(pluginproto.Tool{Name: "exit"}, func(context.Context, *pluginproto.Request) (*pluginproto.Result, error) {
		os.Exit(3)
		return nil, nil
	})
	p.Logger().SetLevel(hclog.Off) // the panic test would print a stack
	return p
}

// startPlugin runs the helper plugin in a subprocess and returns its Client.
func startPlugin(t *testing.T) *pluginproto.Client {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	pc := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  pluginproto.Handshake,
		Plugins:          pluginproto.ClientPluginSet(),
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           hclog.New(&hclog.LoggerOptions{Name: "plugin", Level: hclog.Error, Output: os.Stderr}),
	})
	t.Cleanup(pc.Kill)
	rpc, err := pc.Client()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := rpc.Dispense(pluginproto.PluginName)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := raw.(*pluginproto.Client)
	if !ok {
		t.Fatalf("Dispense returned %T, want *pluginproto.Client", raw)
	}
	return c
}

func names(t *testing.T, tools []json.RawMessage) []string {
	t.Helper()
	var out []string
	for _, raw := range tools {
		var tool struct{ Name string }
		if err := json.Unmarshal(raw, &tool); err != nil {
			t.Fatal(err)
		}
		out = append(out, tool.Name)
	}
	return out
}

// watch starts WatchTools and returns a channel that receives each change.
func watch(t *testing.T, c *pluginproto.Client) <-chan struct{} {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	changes := make(chan struct{}, 64)
	done := make(chan error, 1)
	go func() { done <- c.WatchTools(ctx, func() { changes <- struct{}{} }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("WatchTools ended with %v, want context.Canceled", err)
		}
	})
	return changes
}

// awaitTool waits for change notifications until the plugin lists name.
func awaitTool(t *testing.T, c *pluginproto.Client, changes <-chan struct{}, name string) json.RawMessage {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		tools, err := c.ListTools(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if i := slices.Index(names(t, tools), name); i >= 0 {
			return tools[i]
		}
		select {
		case <-changes:
		case <-timeout:
			t.Fatalf("tool %q never appeared", name)
		}
	}
}

func TestEndToEnd(t *testing.T) {
	t.Parallel()

	t.Run("describe and list", func(t *testing.T) {
		t.Parallel()
		c := startPlugin(t)
		d, err := c.Describe(t.Context(), "test-host")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(pluginproto.Description{Name: "helper", Version: "0.1.0", ContractVersion: pluginproto.ContractVersion}, d); diff != "" {
			t.Errorf("Describe (-want +got):\n%s", diff)
		}
		tools, err := c.ListTools(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"echo", "report", "block", "panic", "add_tool", "exit"}, names(t, tools)); diff != "" {
			t.Errorf("ListTools (-want +got):\n%s", diff)
		}
		if got, want := string(tools[0]), `{"name":"echo","inputSchema":{"type":"object","properties":{"Text":{"type":"string"}}}}`; got != want {
			t.Errorf("echo tool = %s, want %s", got, want)
		}
	})

	t.Run("call with progress, log and result", func(t *testing.T) {
		t.Parallel()
		c := startPlugin(t)
		var got []string
		res, err := c.CallTool(t.Context(), &pluginproto.CallRequest{
			Tool: "report",
			Progress: func(p, total float64, msg string) {
				got = append(got, fmt.Sprintf("progress %v/%v %s", p, total, msg))
			},
			Log: func(level, logger string, data json.RawMessage) {
				got = append(got, fmt.Sprintf("log %s %q %s", level, logger, data))
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{`log info "" {"step":"start"}`, "progress 1/2 half", "progress 2/2 done"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("notifications (-want +got):\n%s", diff)
		}
		if got, want := string(res), `{"content":[{"type":"text","text":"reported"}],"structuredContent":{"steps":2}}`; got != want {
			t.Errorf("result = %s, want %s", got, want)
		}
	})

	t.Run("arguments pass through", func(t *testing.T) {
		t.Parallel()
		c := startPlugin(t)
		res, err := c.CallTool(t.Context(), &pluginproto.CallRequest{Tool: "echo", Arguments: json.RawMessage(`{"Text":"héllo"}`)})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(res), `{"content":[{"type":"text","text":"héllo"}]}`; got != want {
			t.Errorf("result = %s, want %s", got, want)
		}
	})

	t.Run("cancellation reaches the handler", func(t *testing.T) {
		t.Parallel()
		c := startPlugin(t)
		changes := watch(t, c)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var once sync.Once
		_, err := c.CallTool(ctx, &pluginproto.CallRequest{
			Tool:      "block",
			Arguments: json.RawMessage(`{"ID":"x1"}`),
			// The handler is running once it reports progress: cancel then.
			Progress: func(float64, float64, string) { once.Do(cancel) },
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("CallTool = %v, want context.Canceled", err)
		}
		// The handler adds cancelled_x1 only after its context ended.
		awaitTool(t, c, changes, "cancelled_x1")
	})

	t.Run("panic is an error result and the plugin lives on", func(t *testing.T) {
		t.Parallel()
		c := startPlugin(t)
		res, err := c.CallTool(t.Context(), &pluginproto.CallRequest{Tool: "panic"})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(res), `{"content":[{"type":"text","text":"tool \"panic\" panicked: boom"}],"isError":true}`; got != want {
			t.Errorf("result = %s, want %s", got, want)
		}
		if _, err := c.CallTool(t.Context(), &pluginproto.CallRequest{Tool: "echo", Arguments: json.RawMessage(`{"Text":"alive"}`)}); err != nil {
			t.Errorf("call after panic: %v", err)
		}
	})

	t.Run("watch sees AddTool", func(t *testing.T) {
		t.Parallel()
		c := startPlugin(t)
		if _, err := c.ListTools(t.Context()); err != nil {
			t.Fatal(err)
		}
		changes := watch(t, c)
		if _, err := c.CallTool(t.Context(), &pluginproto.CallRequest{Tool: "add_tool", Arguments: json.RawMessage(`{"Name":"fresh"}`)}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-changes:
		case <-time.After(20 * time.Second):
			t.Fatal("no change notification after AddTool")
		}
		got := awaitTool(t, c, changes, "fresh")
		if want := `{"name":"fresh","description":"added","inputSchema":{"type":"object"}}`; string(got) != want {
			t.Errorf("added tool = %s, want %s", got, want)
		}
		res, err := c.CallTool(t.Context(), &pluginproto.CallRequest{Tool: "fresh", Arguments: json.RawMessage(`{"Text":"new"}`)})
		if err != nil || !strings.Contains(string(res), `"new"`) {
			t.Errorf("calling the added tool = %s, %v", res, err)
		}
	})

	t.Run("unknown tool", func(t *testing.T) {
		t.Parallel()
		c := startPlugin(t)
		_, err := c.CallTool(t.Context(), &pluginproto.CallRequest{Tool: "nope"})
		if !errors.Is(err, pluginproto.ErrUnknownTool) || !strings.Contains(err.Error(), `"nope"`) {
			t.Errorf("err = %v, want ErrUnknownTool naming the tool", err)
		}
	})

	t.Run("plugin dies mid-call", func(t *testing.T) {
		t.Parallel()
		c := startPlugin(t)
		_, err := c.CallTool(t.Context(), &pluginproto.CallRequest{Tool: "exit"})
		if !errors.Is(err, pluginproto.ErrPluginClosed) {
			t.Errorf("err = %v, want ErrPluginClosed", err)
		}
		t.Logf("error for a dead plugin: %v", err)
	})
}
