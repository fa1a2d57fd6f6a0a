package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
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
	stderr   *lineBuffer
}

func newWrappedClient() (*wrappedClient, *mcp.Client) {
	c := &wrappedClient{
		progress: make(chan *mcp.ProgressNotificationParams, 100),
		logs:     make(chan *mcp.LoggingMessageParams, 100),
		updated:  make(chan string, 100),
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
	})
	client.AddRoots(&mcp.Root{URI: "file:///home/ada/project", Name: "project"})
	return c, client
}

// serveWrapped starts plughost over stdio serving dir (with the config
// file, when not empty) and connects a wrappedClient speaking 2025-11-25.
func serveWrappedStdio(t *testing.T, dir, config string) *wrappedClient {
	t.Helper()
	c, client := newWrappedClient()
	args := []string{"serve", "--plugins", dir, "--log-level", "debug"}
	if config != "" {
		args = append(args, "--config", config)
	}
	cmd := exec.Command(bin.plughost, args...)
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir(), "XDG_STATE_HOME="+t.TempDir())
	c.stderr = newLineBuffer()
	cmd.Stderr = c.stderr
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, sessionEra)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, c.stderr)
	}
	c.cs = cs
	t.Cleanup(func() {
		cs.Close()
		if leftover := processesRunning(dir); len(leftover) > 0 {
			t.Errorf("wrapped server processes outlived the host: %v", leftover)
		}
		if t.Failed() {
			t.Logf("plughost stderr:\n%s", c.stderr)
		}
	})
	return c
}

// awaitTool waits until the tool list holds name.
func (c *wrappedClient) awaitTool(t *testing.T, name string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for tool, err := range c.cs.Tools(t.Context(), nil) {
			if err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			if tool.Name == name {
				return
			}
		}
		c.stderr.await(t, "plugin loaded") // the host logs each load; list again after one
	}
	t.Fatalf("tool %s never listed", name)
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
