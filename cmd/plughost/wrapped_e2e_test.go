package main

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Existing MCP servers nobody here wrote, declared (NAME.mcp.json) and
// served through plughost inside the sandbox: the reference servers of
// @modelcontextprotocol pinned in conformance/package.json, on its Node 22,
// reached by the official go-sdk client.

// referenceServer returns the absolute path of a reference server's entry
// point, and the node binary's.
func referenceServer(t *testing.T, name string) (script, node string) {
	t.Helper()
	script, _ = filepath.Abs(filepath.Join("..", "..", "conformance", "node_modules", "@modelcontextprotocol", name, "dist", "index.js"))
	node, err := filepath.EvalSymlinks(nodeBin)
	if err == nil {
		node, err = filepath.Abs(node)
	}
	if err == nil {
		_, err = os.Stat(script)
	}
	if err != nil {
		t.Fatalf("%v\nthe wrapped servers' tests need the packages of conformance/package.json (npm ci in conformance/; make test runs it)", err)
	}
	return script, node
}

// declare writes the declaration NAME.mcp.json into dir.
func declare(t *testing.T, dir, name string, decl map[string]any) {
	t.Helper()
	b, err := json.Marshal(decl)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".mcp.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// wrappedClient is a go-sdk client that answers sampling, elicitation and
// roots, and hears progress, logs and resource updates.
type wrappedClient struct {
	cs       *mcp.ClientSession
	progress chan *mcp.ProgressNotificationParams
	logs     chan *mcp.LoggingMessageParams
	updated  chan string
	changed  chan struct{} // tools list_changed
	stderr   *lineBuffer
}

func newWrappedClient() (*wrappedClient, *mcp.Client) {
	c := &wrappedClient{
		progress: make(chan *mcp.ProgressNotificationParams, 100),
		logs:     make(chan *mcp.LoggingMessageParams, 100),
		updated:  make(chan string, 100),
		changed:  make(chan struct{}, 1),
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "plughost-e2e", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			var said string
			if len(r.Params.Messages) > 0 {
				if tc, ok := r.Params.Messages[0].Content.(*mcp.TextContent); ok {
					said = tc.Text
				}
			}
			return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", Content: &mcp.TextContent{Text: "sampled: " + said}}, nil
		},
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada Lovelace"}}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { c.progress <- r.Params },
		LoggingMessageHandler:       func(_ context.Context, r *mcp.LoggingMessageRequest) { c.logs <- r.Params },
		ResourceUpdatedHandler:      func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { c.updated <- r.Params.URI },
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case c.changed <- struct{}{}:
			default: // one pending is enough: the list is read again
			}
		},
	})
	client.AddRoots(&mcp.Root{URI: "file:///home/ada/project", Name: "project"})
	return c, client
}

// serveWrapped starts plughost over stdio serving dir (with the config
// file, when not empty; env, NAME=value entries, added to its environment
// last) and connects a wrappedClient speaking 2025-11-25.
func serveWrappedStdio(t *testing.T, dir, config string, env ...string) *wrappedClient {
	t.Helper()
	args := []string{"serve", "--plugins", dir, "--log-level", "debug"}
	if config != "" {
		args = append(args, "--config", config)
	}
	cmd := exec.Command(bin.plughost, args...)
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir(), "XDG_STATE_HOME="+t.TempDir())
	cmd.Env = append(cmd.Env, env...)
	return connectServe(t, cmd, 30*time.Second, dir)
}

// connectServe starts cmd (a plughost serve over stdio, its environment
// set), connects a wrappedClient speaking 2025-11-25 within timeout, and
// at cleanup closes it and checks that no server process whose command
// line names processDir outlived the host (logging plughost's stderr when
// the test failed).
func connectServe(t *testing.T, cmd *exec.Cmd, timeout time.Duration, processDir string) *wrappedClient {
	t.Helper()
	c, client := newWrappedClient()
	c.stderr = newLineBuffer()
	cmd.Stderr = c.stderr
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, sessionEra)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, c.stderr)
	}
	c.cs = cs
	t.Cleanup(func() {
		cs.Close()
		if leftover := processesRunning(processDir); len(leftover) > 0 {
			t.Errorf("server processes outlived the host: %v", leftover)
		}
		if t.Failed() {
			t.Logf("plughost stderr:\n%s", c.stderr)
		}
	})
	return c
}

// awaitTool waits until the tool list holds name, listing again after
// each list_changed (a 2026-07-28 client, which hears none, polls).
func (c *wrappedClient) awaitTool(t *testing.T, name string) {
	t.Helper()
	// A hang guard: a node server's first start under -race, beside the
	// rest of the suite on 2 cores, once took over 30 s.
	deadline := time.After(2 * time.Minute)
	for {
		for tool, err := range c.cs.Tools(t.Context(), nil) {
			if err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			if tool.Name == name {
				return
			}
		}
		poll := time.After(100 * time.Millisecond)
		if c.cs.InitializeResult().ProtocolVersion != "2026-07-28" {
			poll = nil
		}
		select {
		case <-c.changed:
		case <-poll:
		case <-deadline:
			t.Fatalf("tool %s never listed", name)
		}
	}
}

func (c *wrappedClient) call(t *testing.T, name string, args map[string]any) string {
	t.Helper()
	res, err := c.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	out := text(res)
	if res.IsError {
		t.Fatalf("call %s: isError: %s", name, out)
	}
	return out
}

func TestWrappedEverythingServer(t *testing.T) {
	t.Parallel()
	script, node := referenceServer(t, "server-everything")
	dir := t.TempDir()
	declare(t, dir, "everything", map[string]any{"command": node, "args": []string{script, "stdio"}})
	c := serveWrappedStdio(t, dir, "")
	c.awaitTool(t, "get-sum")
	ctx := t.Context()
	// node's V8 cannot start without writable and executable memory: a
	// declared server run by node gets it, and the host says so.
	c.stderr.await(t, "declared server runs a JIT runtime")
	c.stderr.await(t, "allowed for a JIT compiler: allow_jit")

	t.Run("tools", func(t *testing.T) {
		if got := c.call(t, "get-sum", map[string]any{"a": 2, "b": 3}); !strings.Contains(got, "5") {
			t.Errorf("get-sum = %q", got)
		}
		res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "get-structured-content", Arguments: map[string]any{"location": "Chicago"}})
		if err != nil || res.IsError || res.StructuredContent == nil {
			t.Errorf("get-structured-content = %+v, %v: want structured content", res, err)
		}
	})
	t.Run("resources", func(t *testing.T) {
		r, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://resource/static/document/architecture.md"})
		if err != nil || len(r.Contents) == 0 || !strings.Contains(r.Contents[0].Text, "#") {
			t.Errorf("static resource: %+v, %v", r, err)
		}
		r, err = c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://resource/dynamic/text/3"})
		if err != nil || len(r.Contents) == 0 || r.Contents[0].Text == "" {
			t.Errorf("templated resource: %+v, %v", r, err)
		}
		var templates []string
		for tm, err := range c.cs.ResourceTemplates(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			templates = append(templates, tm.URITemplate)
		}
		if !slices.Contains(templates, "demo://resource/dynamic/text/{resourceId}") {
			t.Errorf("templates = %v", templates)
		}
	})
	t.Run("prompts and completion", func(t *testing.T) {
		p, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "args-prompt", Arguments: map[string]string{"city": "Paris"}})
		if err != nil || len(p.Messages) == 0 {
			t.Fatalf("args-prompt: %+v, %v", p, err)
		}
		if tc, ok := p.Messages[0].Content.(*mcp.TextContent); !ok || !strings.Contains(tc.Text, "Paris") {
			t.Errorf("args-prompt's message = %+v", p.Messages[0].Content)
		}
		comp, err := c.cs.Complete(ctx, &mcp.CompleteParams{
			Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "completable-prompt"},
			Argument: mcp.CompleteParamsArgument{Name: "department", Value: "E"},
		})
		if err != nil || !slices.Contains(comp.Completion.Values, "Engineering") {
			t.Errorf("completion = %+v, %v", comp, err)
		}
	})
	t.Run("sampling elicitation roots", func(t *testing.T) {
		if got := c.call(t, "trigger-sampling-request", map[string]any{"prompt": "hello there"}); !strings.Contains(got, "sampled: ") || !strings.Contains(got, "hello there") {
			t.Errorf("sampling: %s", got)
		}
		if got := c.call(t, "trigger-elicitation-request", nil); !strings.Contains(got, "Ada Lovelace") {
			t.Errorf("elicitation: %s", got)
		}
		if got := c.call(t, "get-roots-list", nil); !strings.Contains(got, "file:///home/ada/project") {
			t.Errorf("roots: %s", got)
		}
	})
	t.Run("progress and logs", func(t *testing.T) {
		if err := c.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
			t.Fatal(err)
		}
		c.call(t, "toggle-simulated-logging", nil) // a message every 5 s from now on
		params := &mcp.CallToolParams{Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 6, "steps": 3}}
		params.SetProgressToken("op-1")
		res, err := c.cs.CallTool(ctx, params)
		if err != nil || res.IsError {
			t.Fatalf("long-running operation: %v %s", err, text(res))
		}
		// A notification that comes after the result is dropped, as a
		// late one always is; the earlier steps' come through.
		if n := len(c.progress); n == 0 {
			t.Errorf("no progress notification reached the client")
		}
		// The server's messages while the call ran (one at least, in a 6 s
		// window of a 5 s pace) were its client's.
		if len(c.logs) == 0 {
			t.Errorf("no log message reached the client during the call")
		}
	})
	t.Run("subscriptions", func(t *testing.T) {
		const uri = "demo://resource/static/document/features.md"
		if err := c.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
		c.call(t, "toggle-subscriber-updates", nil) // an update of each subscribed resource every 5 s
		select {
		case got := <-c.updated:
			if got != uri {
				t.Errorf("resources/updated for %q, want %q", got, uri)
			}
		case <-time.After(20 * time.Second):
			t.Errorf("no resources/updated for %s", uri)
		}
	})
}

// server-filesystem granted one directory (A) and told of another (B)
// that the sandbox does not grant. B is made visible in the sandbox (a
// subdirectory of it is granted, so B exists there, empty but for it), so
// the server counts it among its own allowed directories. Every way of
// reaching a file in B — its absolute path, a ".." path from A, a symbolic
// link made inside A — is one the server's own checks let through: the
// same server with the sandbox disabled reads the file each way. In the
// sandbox each fails, and not for being outside the server's directories.
func TestWrappedFilesystemServerIsConfined(t *testing.T) {
	t.Parallel()
	script, node := referenceServer(t, "server-filesystem")
	granted, other := t.TempDir(), t.TempDir()
	for _, d := range []string{granted, filepath.Join(other, "sub")} {
		if err := os.MkdirAll(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(granted, 0o777); err != nil { // as root, the server runs as uid 65534
		t.Fatal(err)
	}
	if err := os.Chmod(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(granted, "hello.txt"), []byte("hello from A"), 0o644); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(other, "secret.txt")
	if err := os.WriteFile(secret, []byte("not for the server"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(granted, "link.txt")); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(granted, secret)
	if err != nil {
		t.Fatal(err)
	}
	ways := []string{secret, filepath.Join(granted, rel), filepath.Join(granted, "link.txt")}
	serve := func(t *testing.T, extra string) *wrappedClient {
		dir := t.TempDir()
		declare(t, dir, "fs", map[string]any{"command": node, "args": []string{script, granted, other}})
		config := filepath.Join(t.TempDir(), "plughost.hcl")
		if err := os.WriteFile(config, []byte(`sandbox {
  plugin "fs" {
    allow_write = ["`+granted+`"]
    allow_read  = ["`+filepath.Join(other, "sub")+`"]
    `+extra+`
  }
}
`), 0o644); err != nil {
			t.Fatal(err)
		}
		c := serveWrappedStdio(t, dir, config)
		c.awaitTool(t, "read_text_file")
		if got := c.call(t, "list_allowed_directories", nil); !strings.Contains(got, other) {
			t.Fatalf("the server does not count %s among its directories, so it would refuse it itself: %s", other, got)
		}
		return c
	}
	t.Run("without the sandbox, the server's checks let each way through", func(t *testing.T) {
		c := serve(t, "disabled = true")
		for _, path := range ways {
			if got := c.call(t, "read_text_file", map[string]any{"path": path}); got != "not for the server" {
				t.Errorf("read %s = %q", path, got)
			}
		}
	})
	t.Run("in the sandbox", func(t *testing.T) {
		c := serve(t, "")
		if got := c.call(t, "read_text_file", map[string]any{"path": filepath.Join(granted, "hello.txt")}); got != "hello from A" {
			t.Errorf("read in the granted directory = %q", got)
		}
		c.call(t, "write_file", map[string]any{"path": filepath.Join(granted, "new.txt"), "content": "written by the server"})
		if b, err := os.ReadFile(filepath.Join(granted, "new.txt")); err != nil || string(b) != "written by the server" {
			t.Errorf("write in the granted directory: %q, %v", b, err)
		}
		for _, path := range ways {
			res, err := c.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "read_text_file", Arguments: map[string]any{"path": path}})
			if err != nil {
				t.Fatal(err)
			}
			switch got := text(res); {
			case !res.IsError:
				t.Errorf("read %s: %q: the sandbox let it through", path, got)
			case strings.Contains(got, "outside allowed directories"):
				t.Errorf("read %s: the server's own check refused it (%s): this test must reach the sandbox", path, got)
			}
		}
		// Outside both: refused (by the server first).
		res, err := c.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "read_text_file", Arguments: map[string]any{"path": "/etc/hostname"}})
		if err != nil || !res.IsError {
			t.Errorf("read /etc/hostname: %v, %s: want refused", err, text(res))
		}
	})
}

// server-memory keeps its knowledge graph in the plugin's data directory
// (${HOME}): it survives a restart of the host.
func TestWrappedMemoryServerPersists(t *testing.T) {
	t.Parallel()
	script, node := referenceServer(t, "server-memory")
	dir, state := t.TempDir(), t.TempDir()
	declare(t, dir, "memory", map[string]any{"command": node, "args": []string{script},
		"env": map[string]string{"MEMORY_FILE_PATH": "${HOME}/memory.jsonl"}})
	run := func(do func(c *wrappedClient)) {
		c, client := newWrappedClient()
		cmd := exec.Command(bin.plughost, "serve", "--plugins", dir)
		cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir(), "XDG_STATE_HOME="+state)
		c.stderr = newLineBuffer()
		cmd.Stderr = c.stderr
		cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, sessionEra)
		if err != nil {
			t.Fatalf("connect: %v\nstderr:\n%s", err, c.stderr)
		}
		c.cs = cs
		defer func() {
			if t.Failed() {
				t.Logf("plughost stderr:\n%s", c.stderr)
			}
		}()
		c.awaitTool(t, "create_entities")
		do(c)
		if err := cs.Close(); err != nil {
			t.Logf("close: %v", err)
		}
	}
	run(func(c *wrappedClient) {
		c.call(t, "create_entities", map[string]any{"entities": []map[string]any{
			{"name": "Ada", "entityType": "person", "observations": []string{"wrote the first program"}}}})
	})
	if _, err := os.Stat(filepath.Join(state, "plughost", "plugins", "memory", "data", "memory.jsonl")); err != nil {
		t.Errorf("the graph is not in the plugin's data directory: %v", err)
	}
	run(func(c *wrappedClient) {
		if got := c.call(t, "read_graph", nil); !strings.Contains(got, "wrote the first program") {
			t.Errorf("after a restart, read_graph = %s", got)
		}
	})
}

// startRemote starts plughost serving plugins over Streamable HTTP at addr
// (its token: token, or none on loopback), the remote server of the tests
// below, and returns its stderr once it serves.
func startRemote(t *testing.T, addr, token, plugins string) *lineBuffer {
	t.Helper()
	a := exec.Command(bin.plughost, "serve", "--http", addr, "--plugins", plugins)
	a.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir(), "XDG_STATE_HOME="+t.TempDir(), "PLUGHOST_TOKEN="+token)
	stderr := newLineBuffer()
	a.Stderr = stderr
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a.Process.Signal(syscall.SIGTERM)
		a.Wait()
		if t.Failed() {
			t.Logf("the remote plughost's stderr:\n%s", stderr)
		}
	})
	stderr.await(t, "serving MCP over Streamable HTTP")
	return stderr
}

// A remote server: plughost (B, over stdio) in front of another plughost
// (A, over Streamable HTTP, with a bearer token B reads from a file). A
// plugin of A asks the client twice (elicitation, then sampling): the
// questions travel A → B's wrapper → B → the client, and the answers back.
func TestWrappedRemoteServer(t *testing.T) {
	t.Parallel()
	pluginsA := t.TempDir()
	copyPlugin(t, "askplugin", pluginsA, "askplugin")
	copyPlugin(t, "echo", pluginsA, "echo")
	stderrA := startRemote(t, "127.0.0.1:0", "s3cret-token", pluginsA)
	m := listenURL.FindStringSubmatch(stderrA.String())
	if m == nil {
		t.Fatalf("no URL in A's log:\n%s", stderrA)
	}
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	declare(t, dir, "remote", map[string]any{"url": m[1] + "/mcp", "bearer_token_file": tokenFile})

	// The declaration alone may not have plughost read a file and send it
	// away: the operator grants the token's file.
	refused := serveWrappedStdio(t, dir, "")
	refused.stderr.await(t, "bearer_token_file "+tokenFile+": the operator grants it to this server with allow_read")
	refused.cs.Close() // ends that host before the next serves the same directory

	config := filepath.Join(t.TempDir(), "plughost.hcl")
	if err := os.WriteFile(config, []byte(`sandbox {
  plugin "remote" {
    allow_read = ["`+tokenFile+`"]
  }
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	c := serveWrappedStdio(t, dir, config)
	c.awaitTool(t, "twice")
	if got := c.call(t, "echo", map[string]any{"text": "through two hosts"}); !strings.Contains(got, "through two hosts") {
		t.Errorf("echo = %q", got)
	}
	if got := c.call(t, "twice", nil); got != "accept, then sampled: the user said accept" {
		t.Errorf("twice = %q", got)
	}
	if got := c.call(t, "roots", nil); got != "file:///home/ada/project" {
		t.Errorf("roots = %q", got)
	}
	// A plugin dropped into A's directory: A's list_changed reaches B's
	// wrapper, which lists again, and B tells its client.
	copyPlugin(t, "clock", pluginsA, "clock")
	c.awaitTool(t, "get_current_time")

	// Progress comes back through both hosts; the client's cancellation
	// reaches the plugin on A.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	params := &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 60000}}
	params.SetProgressToken("sleep-1")
	done := make(chan error, 1)
	go func() {
		_, err := c.cs.CallTool(ctx, params)
		done <- err
	}()
	select {
	case <-c.progress:
	case <-time.After(20 * time.Second):
		t.Fatal("no progress of the sleep reached the client")
	}
	cancel()
	if err := <-done; err == nil {
		t.Error("the cancelled call returned a result")
	}
	stderrA.await(t, "sleep cancelled")
}

// A wrapped server over MCP 2026-07-28 (no session, HTTP): the server's
// questions reach the client as InputRequiredResults, and the retries
// carry the answers back to the same held request; the list follows a
// declaration dropped into the watched directory.
func TestWrappedServerStateless(t *testing.T) {
	t.Parallel()
	script, node := referenceServer(t, "server-everything")
	h := startHTTPHost(t)
	c, client := newWrappedClient()
	c.stderr = h.stderr
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: h.base + "/mcp", HTTPClient: h.httpClient(nil)}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %q, want 2026-07-28", v)
	}
	c.cs = cs
	declare(t, h.pluginDir, "everything", map[string]any{"command": node, "args": []string{script, "stdio"}})
	c.awaitTool(t, "trigger-elicitation-request")
	if got := c.call(t, "get-sum", map[string]any{"a": 40, "b": 2}); !strings.Contains(got, "42") {
		t.Errorf("get-sum = %q", got)
	}
	if got := c.call(t, "trigger-elicitation-request", nil); !strings.Contains(got, "Ada Lovelace") {
		t.Errorf("elicitation: %s", got)
	}
	if got := c.call(t, "trigger-sampling-request", map[string]any{"prompt": "stateless"}); !strings.Contains(got, "sampled: ") {
		t.Errorf("sampling: %s", got)
	}
}

// A remote server that is down when plughost starts is reported and
// retried, like a crashed plugin, and served once it is up.
func TestWrappedRemoteServerDownThenUp(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there until A starts
	dir := t.TempDir()
	declare(t, dir, "remote", map[string]any{"url": "http://" + addr + "/mcp"})
	c := serveWrappedStdio(t, dir, "")
	c.stderr.await(t, "remote server unreachable; retrying")

	pluginsA := t.TempDir()
	copyPlugin(t, "echo", pluginsA, "echo")
	startRemote(t, addr, "", pluginsA)
	c.awaitTool(t, "echo")
	if got := c.call(t, "echo", map[string]any{"text": "up now"}); got != "up now" {
		t.Errorf("echo = %q", got)
	}
}
