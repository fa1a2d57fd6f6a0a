package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plughost/plughost/host/catalog"
	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/hooks"
	"github.com/plughost/plughost/host/mcp/internal/mcptest"
	"github.com/plughost/plughost/host/tasks"
	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/host/toolsearch"
)

// The hooks' path through the protocol layer: a real catalog (host/catalog)
// with a chain of hooks (host/hooks) over an in-process asker, served to
// real clients. Each request kind reaches its provider through the
// catalog, and so through the hooks: sessions on both transports, input
// rounds (every round), stateless requests, tasks (the result redacted
// before the task stores it) and tool search's call_tool.

// redactor is the hooks' asker: before_call refuses arguments holding
// "forbidden", after_call redacts "AKIA" in a result; it records every
// question (point:tool).
type redactor struct {
	mu    sync.Mutex
	asked []string
}

func (r *redactor) AskHook(_ context.Context, _ string, q *tool.HookCall) (*tool.HookAnswer, error) {
	r.mu.Lock()
	r.asked = append(r.asked, string(q.Point)+":"+q.Item.Name)
	r.mu.Unlock()
	switch {
	case q.Point == tool.BeforeCall && strings.Contains(string(q.Arguments), "forbidden"):
		return &tool.HookAnswer{Decision: tool.HookRefuse, Reason: "forbidden word"}, nil
	case q.Point == tool.AfterCall && strings.Contains(string(q.Result), "AKIA"):
		return &tool.HookAnswer{Decision: tool.HookRewrite, Rewritten: json.RawMessage(strings.ReplaceAll(string(q.Result), "AKIAEXAMPLE", "[REDACTED]"))}, nil
	}
	return &tool.HookAnswer{Decision: tool.HookPass}, nil
}

func (r *redactor) count(question string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, q := range r.asked {
		if q == question {
			n++
		}
	}
	return n
}

// leaky is a provider whose tools leak a key: leak answers it at once,
// job as a task (it detaches when it may), name asks the client for a
// name first (an input round).
type leaky struct{}

const leakyTools = `[{"name":"leak","inputSchema":{"type":"object"}},` +
	`{"name":"job","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"}},` +
	`{"name":"name","inputSchema":{"type":"object"}}]`

func (leaky) Name() string { return "leaky" }

func (leaky) Tools() []tool.Def {
	var defs []json.RawMessage
	json.Unmarshal([]byte(leakyTools), &defs)
	var out []tool.Def
	for _, d := range defs {
		var n struct{ Name string }
		json.Unmarshal(d, &n)
		out = append(out, tool.Def{Name: n.Name, JSON: d})
	}
	return out
}

func (leaky) CallTool(_ context.Context, c *tool.Call) (json.RawMessage, error) {
	switch c.Name {
	case "job":
		if c.Detach != nil {
			c.Detach()
		}
	case "name":
		if c.Input == nil {
			return nil, &tool.InputRequired{State: "asked", Requests: json.RawMessage(`{"n":{"method":"elicitation/create","params":` +
				`{"message":"Your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}}}`)}
		}
		return tool.TextResult("hello, AKIAEXAMPLE"), nil
	}
	return tool.TextResult("the key is AKIAEXAMPLE"), nil
}

// hookedServerCatalog is a real catalog of the leaky provider whose hooks
// (one, at before_call and after_call) ask r.
func hookedServerCatalog(t *testing.T, r *redactor) *catalog.Catalog {
	t.Helper()
	chain, err := hooks.New([]config.Hook{{Name: "secrets", Plugin: "secrets", On: []string{"before_call", "after_call"},
		Mode: "enforce", OnError: "refuse", Timeout: 5 * time.Second}}, r, &hooks.Options{Logger: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	cat := catalog.New(&catalog.Options{Logger: hclog.NewNullLogger(), Hooks: chain})
	t.Cleanup(cat.Close)
	cat.Set(leaky{})
	return cat
}

// A session with the go-sdk client over stdio: a result is redacted, a
// refusal is an isError result naming the hook, and a call with an input
// round passes before_call at each round and after_call once.
func TestHooksGoSDKStdio(t *testing.T) {
	t.Parallel()
	r := &redactor{}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cs, _ := connectStdio(t, NewServer(hookedServerCatalog(t, r), nil), mcptest.InputClient(mcptest.InputClientOptions{}))
	if got, isErr := mcptest.CallText(t, ctx, cs, "leak"); got != "the key is [REDACTED]" || isErr {
		t.Errorf("leak = %q (isError %v), want the key redacted", got, isErr)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "leak", Arguments: map[string]any{"q": "forbidden"}})
	if err != nil {
		t.Fatal(err)
	}
	if txt := res.Content[0].(*sdk.TextContent).Text; !res.IsError || txt != `refused by hook "secrets": forbidden word` {
		t.Errorf("a refused call = %q (isError %v)", txt, res.IsError)
	}
	if got, isErr := mcptest.CallText(t, ctx, cs, "name"); got != "hello, [REDACTED]" || isErr {
		t.Errorf("name = %q (isError %v), want the key redacted after the input round", got, isErr)
	}
	if b, a := r.count("before_call:name"), r.count("after_call:name"); b != 2 || a != 1 {
		t.Errorf("the input round's call: before_call asked %d times, after_call %d; want 2 (each round) and 1", b, a)
	}
}

// Stateless requests and tasks, on both transports: a stateless call's
// result is redacted, and a task's result is redacted before the task
// stores it (tasks/get reads it so).
func TestHooksStatelessAndTasks(t *testing.T) {
	t.Parallel()
	for _, stdio := range []bool{false, true} {
		t.Run(map[bool]string{false: "chan", true: "stdio"}[stdio], func(t *testing.T) {
			t.Parallel()
			r := &redactor{}
			svc := tasks.New(tasks.Options{})
			t.Cleanup(func() { svc.Close() })
			c := newClient(t, clientOptions{stdio: stdio, catalog: hookedServerCatalog(t, r), server: Options{Tasks: svc}})
			reply, line := taskRequest(t, c, 1, "tools/call", `"name":"leak","arguments":{}`, taskMeta)
			if !strings.Contains(line, "the key is [REDACTED]") || strings.Contains(line, "AKIA") || reply.Error != nil {
				t.Errorf("a stateless call: %s, want the key redacted", line)
			}
			_, line = taskRequest(t, c, 2, "tools/call", `"name":"leak","arguments":{"q":"forbidden"}`, taskMeta)
			if !strings.Contains(line, `"isError":true`) || !strings.Contains(line, `refused by hook \"secrets\": forbidden word`) {
				t.Errorf("a refused stateless call: %s", line)
			}
			id := startTask(t, c, 3, "job", `{}`)
			task := awaitTask(t, svc, id, tasks.Completed)
			if s := string(task.Result); !strings.Contains(s, "[REDACTED]") || strings.Contains(s, "AKIA") {
				t.Errorf("the task stored %s, want its result redacted", s)
			}
			_, line = taskRequest(t, c, 4, "tasks/get", `"taskId":"`+id+`"`, taskMeta)
			if !strings.Contains(line, "the key is [REDACTED]") || strings.Contains(line, "AKIA") {
				t.Errorf("tasks/get: %s", line)
			}
		})
	}
}

// Tool search's call_tool runs a tool through the catalog, so through its
// hooks, which see the tool called (not call_tool).
func TestHooksToolSearch(t *testing.T) {
	t.Parallel()
	r := &redactor{}
	x := toolsearch.New()
	var defs []json.RawMessage
	json.Unmarshal([]byte(leakyTools), &defs)
	if err := x.Set("leaky", toolsearch.Provider{}, defs); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, clientOptions{stdio: true, catalog: hookedServerCatalog(t, r), server: Options{ToolSearch: &ToolSearch{Index: x}}})
	c.initialize("2025-11-25")
	if res := callOne(t, c, "call_tool", `"arguments":{"name":"leak","arguments":{}}`); res.IsError || res.text() != "the key is [REDACTED]" {
		t.Errorf("call_tool leak: %+v, want the key redacted", res)
	}
	if res := callOne(t, c, "call_tool", `"arguments":{"name":"leak","arguments":{"q":"forbidden"}}`); !res.IsError || res.text() != `refused by hook "secrets": forbidden word` {
		t.Errorf("call_tool leak, refused: %+v", res)
	}
	if n := r.count("after_call:leak"); n != 1 {
		t.Errorf("after_call asked %d times about leak, want 1", n)
	}
}
