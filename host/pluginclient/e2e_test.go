package pluginclient_test

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

	"github.com/plughost/plughost/host/pluginclient"
	"github.com/plughost/plughost/internal/lane"
	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/pluginproto"
)

// helperEnv makes the test binary, re-executed by startHelper, serve
// helperPlugin (with this package's SDK, contract 2) instead of running the
// tests; or, set to "bad", serve a plugin that breaks the contract's rules
// (serveBad).
const helperEnv = "PLUGHOST_TEST_HELPER_PLUGIN"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "1":
		pluginproto.Serve(helperPlugin())
		os.Exit(0)
	case "bad":
		serveBad()
		os.Exit(0)
	case "hook":
		pluginproto.Serve(hookBenchPlugin())
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helperPlugin is the plugin the end-to-end tests talk to.
func helperPlugin() *pluginproto.Plugin {
	p := pluginproto.New("helper", "0.1.0")
	p.SetAbout(pluginproto.About{Title: "Helper", Description: "Tools the end-to-end tests drive: echo, report, block, …"})
	p.Request(pluginproto.Requests{Read: []string{"/srv/helper"}, Net: []string{"api.example.com:443"}, Env: []string{"HELPER_TOKEN", strings.Repeat("x", pluginclient.MaxRequestSize+1)}})
	echo := func(_ context.Context, r *pluginproto.Request) (*pluginproto.Result, error) {
		var args struct{ Text string }
		if err := r.Bind(&args); err != nil {
			return nil, err
		}
		return pluginproto.TextResult(args.Text), nil
	}
	p.AddTool(pluginproto.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object","properties":{"Text":{"type":"string"}}}`)}, echo)
	p.AddTool(pluginproto.Tool{Name: "report"}, func(_ context.Context, r *pluginproto.Request) (*pluginproto.Result, error) {
		r.Log(pluginproto.LevelInfo, map[string]string{"step": "start"})
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
	// job goes on as a task when it can (RunAsTask twice: one Detach at
	// most), reports progress, and says whether it did.
	p.AddTool(pluginproto.Tool{Name: "job", TaskSupport: pluginproto.TaskOptional}, func(_ context.Context, r *pluginproto.Request) (*pluginproto.Result, error) {
		task := r.RunAsTask()
		r.Progress(1, 1, "working")
		return pluginproto.TextResult(fmt.Sprintf("task: %v", task && r.RunAsTask())), nil
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
	// late returns at once, leaving behind a goroutine that, once release
	// is called with the same id (so surely after the host has the
	// result), reports progress (which must reach no one), then adds a
	// tool named late_<id>.
	var (
		lateMu      sync.Mutex
		lateRelease = map[string]chan struct{}{}
	)
	lateChan := func(id string) chan struct{} {
		lateMu.Lock()
		defer lateMu.Unlock()
		if lateRelease[id] == nil {
			lateRelease[id] = make(chan struct{})
		}
		return lateRelease[id]
	}
	p.AddTool(pluginproto.Tool{Name: "late"}, func(_ context.Context, r *pluginproto.Request) (*pluginproto.Result, error) {
		var args struct{ ID string }
		if err := r.Bind(&args); err != nil {
			return nil, err
		}
		release := lateChan(args.ID)
		go func() {
			<-release
			for range 3 {
				r.Progress(9, 9, "late")
				r.Log(pluginproto.LevelInfo, "late")
			}
			p.AddTool(pluginproto.Tool{Name: "late_" + args.ID}, echo)
		}()
		r.Progress(1, 1, "on time")
		return pluginproto.TextResult("early"), nil
	})
	p.AddTool(pluginproto.Tool{Name: "release"}, func(_ context.Context, r *pluginproto.Request) (*pluginproto.Result, error) {
		var args struct{ ID string }
		if err := r.Bind(&args); err != nil {
			return nil, err
		}
		close(lateChan(args.ID))
		return pluginproto.TextResult("released"), nil
	})
	// rendezvous returns its Text once N calls of it are running at the
	// same time (or its context ends).
	var (
		rvMu      sync.Mutex
		rvRunning int
		rvAll     = make(chan struct{})
	)
	p.AddTool(pluginproto.Tool{Name: "rendezvous"}, func(ctx context.Context, r *pluginproto.Request) (*pluginproto.Result, error) {
		var args struct {
			Text string
			N    int
		}
		if err := r.Bind(&args); err != nil {
			return nil, err
		}
		rvMu.Lock()
		if rvRunning++; rvRunning == args.N {
			close(rvAll)
		}
		rvMu.Unlock()
		select {
		case <-rvAll:
			return pluginproto.TextResult(args.Text), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	// big returns a text of Size bytes.
	p.AddTool(pluginproto.Tool{Name: "big"}, func(_ context.Context, r *pluginproto.Request) (*pluginproto.Result, error) {
		var args struct{ Size int }
		if err := r.Bind(&args); err != nil {
			return nil, err
		}
		return pluginproto.TextResult(strings.Repeat("x", args.Size)), nil
	})
	addSurface(p)
	p.Logger().SetLevel(hclog.Off) // the panic test would print a stack
	return p
}

// startPlugin starts cmd as a plugin, as the host does, and returns its
// Client and the contract version its handshake named.
func startPlugin(t testing.TB, cmd *exec.Cmd) (*pluginclient.Client, int) {
	t.Helper()
	return startPluginLimited(t, cmd, nil)
}

// startPluginLimited is startPlugin with the host's limits.
func startPluginLimited(t testing.TB, cmd *exec.Cmd, limits *pluginclient.Limits) (*pluginclient.Client, int) {
	t.Helper()
	var hostLane *os.File
	if os.Getenv("PLUGHOST_TEST_TRANSPORT") != "grpc" { // a lane, as a host hands (sdk_helpers_test.go)
		host, pluginEnd, err := lane.Pair()
		if err != nil {
			t.Fatal(err)
		}
		hostLane = host
		cmd.ExtraFiles = append(cmd.ExtraFiles, pluginEnd)
		cmd.Env = append(cmd.Env, lane.Env(2+len(cmd.ExtraFiles)))
		t.Cleanup(func() { _ = pluginEnd.Close(); _ = host.Close() })
	}
	pc := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  pluginclient.Handshake,
		VersionedPlugins: pluginclient.PluginSets(limits),
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           hclog.New(&hclog.LoggerOptions{Name: "plugin", Level: hclog.Error, Output: os.Stderr}),
	})
	t.Cleanup(pc.Kill)
	rpc, err := pc.Client()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := rpc.Dispense(pluginclient.PluginName)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := raw.(*pluginclient.Client)
	if !ok {
		t.Fatalf("Dispense returned %T, want *pluginclient.Client", raw)
	}
	if hostLane != nil {
		c.OfferLane(hostLane, nil)
	}
	return c, pc.NegotiatedVersion()
}

// startHelper runs helperPlugin in a subprocess (this test binary) and
// returns its Client, checking that it negotiated contract 2.
func startHelper(t testing.TB) *pluginclient.Client {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	c, v := startPlugin(t, cmd)
	if v != pluginclient.ContractVersion {
		t.Fatalf("negotiated contract %d, want %d", v, pluginclient.ContractVersion)
	}
	onLane(t, c)
	return c
}

// onLane describes the helper plugin, as a host does first, so that its
// calls take the frame lane startPlugin offered (unless the tests run over
// gRPC), and checks that they do.
func onLane(t testing.TB, c *pluginclient.Client) {
	t.Helper()
	if os.Getenv("PLUGHOST_TEST_TRANSPORT") == "grpc" {
		return
	}
	if _, err := c.Describe(t.Context(), "test"); err != nil {
		t.Fatal(err)
	}
	if !c.OnLane() {
		t.Fatal("the helper plugin did not take the frame lane")
	}
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

// watch starts Watch and returns a channel that receives each change.
func watch(t *testing.T, c *pluginclient.Client) <-chan struct{} {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	changes := make(chan struct{}, 64)
	done := make(chan error, 1)
	go func() { done <- c.Watch(ctx, func(pluginclient.Change) { changes <- struct{}{} }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Watch ended with %v, want context.Canceled", err)
		}
	})
	return changes
}

// awaitTool waits for change notifications until the plugin lists name.
func awaitTool(t *testing.T, c *pluginclient.Client, changes <-chan struct{}, name string) json.RawMessage {
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

// TestEndToEnd runs helperPlugin, built with this package's SDK, in a
// subprocess and drives it through the host's Client: contract 2.
func TestEndToEnd(t *testing.T) {
	t.Parallel()
	t.Run("describe and list", func(t *testing.T) {
		t.Parallel()
		c := startHelper(t)
		d, err := c.Describe(t.Context(), "test-host")
		if err != nil {
			t.Fatal(err)
		}
		want := pluginclient.Description{Name: "helper", Version: "0.1.0", ContractVersion: pluginclient.ContractVersion, Offers: pluginproto.Offers{
			Resources: true, ResourceSubscriptions: true, Prompts: true, Completions: true,
		}, About: pluginproto.About{Title: "Helper", Description: "Tools the end-to-end tests drive: echo, report, block, …"},
			// What it asks for, less what is over MaxRequestSize.
			Requests: pluginproto.Requests{Read: []string{"/srv/helper"}, Net: []string{"api.example.com:443"}, Env: []string{"HELPER_TOKEN"}}}
		if diff := cmp.Diff(want, d); diff != "" {
			t.Errorf("Describe (-want +got):\n%s", diff)
		}
		tools, err := c.ListTools(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		want2 := []string{"echo", "report", "block", "panic", "job", "add_tool", "exit", "late", "release", "rendezvous", "big", "survey", "touch", "add_resource", "add_prompt"}
		if diff := cmp.Diff(want2, names(t, tools)); diff != "" {
			t.Errorf("ListTools (-want +got):\n%s", diff)
		}
		if got, want := string(tools[0]), `{"name":"echo","inputSchema":{"type":"object","properties":{"Text":{"type":"string"}}}}`; got != want {
			t.Errorf("echo tool = %s, want %s", got, want)
		}
	})

	t.Run("call with progress, log and result", func(t *testing.T) {
		t.Parallel()
		c := startHelper(t)
		var got []string
		res, err := c.CallTool(t.Context(), &pluginhost.CallRequest{
			Tool: "report",
			Progress: func(progress, total float64, msg string) {
				got = append(got, fmt.Sprintf("progress %v/%v %s", progress, total, msg))
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
		c := startHelper(t)
		res, err := c.CallTool(t.Context(), &pluginhost.CallRequest{Tool: "echo", Arguments: json.RawMessage(`{"Text":"héllo"}`)})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(res), `{"content":[{"type":"text","text":"héllo"}]}`; got != want {
			t.Errorf("result = %s, want %s", got, want)
		}
	})

	t.Run("arguments larger than the plugin's 4 MiB message limit", func(t *testing.T) {
		t.Parallel()
		c := startHelper(t)
		text := strings.Repeat("é", 3<<20) // 6 MiB of JSON
		res, err := c.CallTool(t.Context(), &pluginhost.CallRequest{Tool: "echo", Arguments: fmt.Appendf(nil, `{"Text":%q}`, text)})
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf(`{"content":[{"type":"text","text":%q}]}`, text); string(res) != want {
			t.Errorf("result of %d bytes, want %d", len(res), len(want))
		}
	})

	t.Run("cancellation reaches the handler", func(t *testing.T) {
		t.Parallel()
		c := startHelper(t)
		changes := watch(t, c)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var once sync.Once
		_, err := c.CallTool(ctx, &pluginhost.CallRequest{
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
		if _, err := c.CallTool(t.Context(), &pluginhost.CallRequest{Tool: "echo"}); err != nil {
			t.Errorf("call after a cancelled call: %v", err)
		}
	})

	t.Run("panic is the plugin's failure and the plugin lives on", func(t *testing.T) {
		t.Parallel()
		c := startHelper(t)
		res, err := c.CallTool(t.Context(), &pluginhost.CallRequest{Tool: "panic"})
		const want = `call "panic": the plugin failed running the call: tool "panic" panicked: boom`
		if !errors.Is(err, pluginclient.ErrPluginFailed) || err.Error() != want {
			t.Errorf("CallTool = %s, %v; want ErrPluginFailed: %s", res, err, want)
		}
		if _, err := c.CallTool(t.Context(), &pluginhost.CallRequest{Tool: "echo", Arguments: json.RawMessage(`{"Text":"alive"}`)}); err != nil {
			t.Errorf("call after panic: %v", err)
		}
	})

	t.Run("a call goes on as a task only when it may", func(t *testing.T) {
		t.Parallel()
		c := startHelper(t)
		for _, tasks := range []bool{true, false} {
			var got []string
			res, err := c.CallTool(t.Context(), &pluginhost.CallRequest{
				Tool: "job", Tasks: tasks,
				Detach:   func() { got = append(got, "detach") },
				Progress: func(_, _ float64, msg string) { got = append(got, msg) },
			})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, string(res))
			want := []string{"working", fmt.Sprintf(`{"content":[{"type":"text","text":"task: %v"}]}`, tasks)}
			if tasks {
				want = append([]string{"detach"}, want...)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Tasks %v (-want +got):\n%s", tasks, diff)
			}
		}
	})

	t.Run("watch sees AddTool", func(t *testing.T) {
		t.Parallel()
		c := startHelper(t)
		if _, err := c.ListTools(t.Context()); err != nil {
			t.Fatal(err)
		}
		changes := watch(t, c)
		if _, err := c.CallTool(t.Context(), &pluginhost.CallRequest{Tool: "add_tool", Arguments: json.RawMessage(`{"Name":"fresh"}`)}); err != nil {
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
		res, err := c.CallTool(t.Context(), &pluginhost.CallRequest{Tool: "fresh", Arguments: json.RawMessage(`{"Text":"new"}`)})
		if err != nil || !strings.Contains(string(res), `"new"`) {
			t.Errorf("calling the added tool = %s, %v", res, err)
		}
	})

	t.Run("unknown tool", func(t *testing.T) {
		t.Parallel()
		c := startHelper(t)
		_, err := c.CallTool(t.Context(), &pluginhost.CallRequest{Tool: "nope"})
		if want := `call "nope": unknown tool: unknown tool "nope"`; !errors.Is(err, pluginclient.ErrUnknownTool) || err.Error() != want {
			t.Errorf("err = %v, want ErrUnknownTool: %s", err, want)
		}
		if _, err := c.CallTool(t.Context(), &pluginhost.CallRequest{Tool: "echo"}); err != nil {
			t.Errorf("call after an unknown tool: %v", err)
		}
	})

	t.Run("late progress after the result is dropped", func(t *testing.T) {
		t.Parallel()
		c := startHelper(t)
		changes := watch(t, c)
		var got []string
		returned := false
		res, err := c.CallTool(t.Context(), &pluginhost.CallRequest{
			Tool:      "late",
			Arguments: json.RawMessage(`{"ID":"l1"}`),
			Progress: func(_, _ float64, msg string) {
				if returned {
					t.Errorf("progress %q after CallTool returned", msg)
				}
				got = append(got, msg)
			},
			Log: func(_, _ string, data json.RawMessage) { got = append(got, string(data)) },
		})
		returned = true
		if err != nil || string(res) != `{"content":[{"type":"text","text":"early"}]}` {
			t.Fatalf("CallTool = %s, %v", res, err)
		}
		// The plugin tries its late reports once released, and has tried
		// them once late_l1 is listed; a call after that on the same
		// connection sees none of them.
		if _, err := c.CallTool(t.Context(), &pluginhost.CallRequest{Tool: "release", Arguments: json.RawMessage(`{"ID":"l1"}`)}); err != nil {
			t.Fatal(err)
		}
		awaitTool(t, c, changes, "late_l1")
		got2 := 0
		if _, err := c.CallTool(t.Context(), &pluginhost.CallRequest{
			Tool: "echo", Progress: func(float64, float64, string) { got2++ },
			Log: func(string, string, json.RawMessage) { got2++ },
		}); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"on time"}, got); diff != "" || got2 != 0 {
			t.Errorf("notifications (-want +got):\n%s; %d reached the next call", diff, got2)
		}
	})

	t.Run("200 calls in flight", func(t *testing.T) {
		t.Parallel()
		c := startHelper(t)
		const n = 200
		// Every call is held in the plugin until all n are running there.
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				text := fmt.Sprintf("call %d", i)
				res, err := c.CallTool(ctx, &pluginhost.CallRequest{
					Tool: "rendezvous", Arguments: fmt.Appendf(nil, `{"Text":%q,"N":%d}`, text, n),
				})
				if want := fmt.Sprintf(`{"content":[{"type":"text","text":%q}]}`, text); err == nil && string(res) != want {
					err = fmt.Errorf("result %s, want %s", res, want)
				}
				errs[i] = err
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("plugin dies mid-call", func(t *testing.T) {
		t.Parallel()
		c := startHelper(t)
		// Three calls block in the plugin (each reports progress once
		// running), then a fourth makes it exit: all four fail.
		const blocked = 3
		running := make(chan struct{}, blocked)
		errs := make(chan error, blocked+1)
		for i := range blocked {
			go func() {
				var once sync.Once
				_, err := c.CallTool(t.Context(), &pluginhost.CallRequest{
					Tool: "block", Arguments: fmt.Appendf(nil, `{"ID":"d%d"}`, i),
					Progress: func(float64, float64, string) { once.Do(func() { running <- struct{}{} }) },
				})
				errs <- err
			}()
		}
		for range blocked {
			select {
			case <-running:
			case err := <-errs:
				t.Fatalf("a blocked call ended early: %v", err)
			}
		}
		_, err := c.CallTool(t.Context(), &pluginhost.CallRequest{Tool: "exit"})
		errs <- err
		for range blocked + 1 {
			if err := <-errs; !errors.Is(err, pluginclient.ErrPluginClosed) {
				t.Errorf("err = %v, want ErrPluginClosed", err)
			}
		}
		t.Logf("error for a dead plugin: %v", err)
		_, err = c.CallTool(t.Context(), &pluginhost.CallRequest{Tool: "echo"})
		if !errors.Is(err, pluginclient.ErrPluginClosed) {
			t.Errorf("call after the plugin died: err = %v, want ErrPluginClosed", err)
		}
	})
}
