package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Guardrails end to end (issue 33): real hook plugins in their own
// sandboxed processes, answering through the contract's Hooks stream,
// configured by a hooks block, in front of real plugins and wrapped
// servers, reached by the go-sdk client over stdio and by raw MCP
// 2026-07-28 requests over HTTP. The test hook plugin (internal/hookplugin)
// behaves as each hook's name says, up to its first "-".

// hookHost serves echo (and the given plugins) with hookplugin over stdio
// under config, hookplugin seeing the HOOKPLUGIN_* variables of env.
func hookHost(t *testing.T, config string, env []string, plugins ...string) *wrappedClient {
	t.Helper()
	dir := t.TempDir()
	for _, p := range append([]string{"echo", "hookplugin"}, plugins...) {
		copyPlugin(t, p, dir, p)
	}
	config += "sandbox {\n  plugin \"hookplugin\" {\n    env = [\"HOOKPLUGIN_ARGS\", \"HOOKPLUGIN_WORD\"]\n  }\n}\n"
	c := serveWrappedStdio(t, dir, writeConfig(t, config), env...)
	c.awaitTool(t, "echo")
	return c
}

// echoed calls echo with s and returns its text and isError.
func echoed(t *testing.T, c *wrappedClient, s string) (string, bool) {
	t.Helper()
	res, err := c.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": s}})
	if err != nil {
		t.Fatalf("echo %q: a JSON-RPC error %v, want a result", s, err)
	}
	return text(res), res.IsError
}

// hookBlock is one hook block of hookplugin.
//
// Unless extra sets a timeout, the hook gets 10 s, not the default 200 ms:
// under CI's load a hook's first answer once took longer, and a test that
// is not about the timeout must not see one.
func hookBlock(name, on string, extra ...string) string {
	b := "  hook \"" + name + "\" {\n    plugin = \"hookplugin\"\n    on     = " + on + "\n"
	timeout := false
	for _, e := range extra {
		b += "    " + e + "\n"
		timeout = timeout || strings.HasPrefix(e, "timeout")
	}
	if !timeout {
		b += "    timeout = \"10s\"\n"
	}
	return b + "  }\n"
}

func hooksConfig(blocks ...string) string { return "hooks {\n" + strings.Join(blocks, "") + "}\n" }

// TestGuardrailsOnCalls: refuse, rewrite, redact, order, a rewrite the
// tool's schema refuses, and the hook plugin's own tool never judged.
func TestGuardrailsOnCalls(t *testing.T) {
	t.Parallel()
	t.Run("refuse", func(t *testing.T) {
		t.Parallel()
		c := hookHost(t, hooksConfig(hookBlock("refuse_word", `["before_call"]`)), nil)
		if got, isErr := echoed(t, c, "a secret plan"); !isErr || got != `refused by hook "refuse_word": mentions "secret"` {
			t.Errorf("a call the hook refuses: %q (isError %v)", got, isErr)
		}
		if got, isErr := echoed(t, c, "hello"); isErr || got != "hello" {
			t.Errorf("a call the hook passes: %q (isError %v)", got, isErr)
		}
		// The hook plugin's own tool is never put to its own hooks.
		if got := c.call(t, "say", map[string]any{"text": "my secret"}); got != "my secret" {
			t.Errorf("hookplugin's own tool: %q", got)
		}
	})
	t.Run("rewrite then refuse, in the order written", func(t *testing.T) {
		t.Parallel()
		env := []string{`HOOKPLUGIN_ARGS={"text":"rewritten"}`}
		c := hookHost(t, hooksConfig(hookBlock("rewrite", `["before_call"]`), hookBlock("refuse_word", `["before_call"]`)), env)
		if got, isErr := echoed(t, c, "a secret"); isErr || got != "rewritten" {
			t.Errorf("rewritten before the refusing hook: %q (isError %v), want the rewritten text", got, isErr)
		}
	})
	t.Run("refuse then rewrite, in the order written", func(t *testing.T) {
		t.Parallel()
		env := []string{`HOOKPLUGIN_ARGS={"text":"rewritten"}`}
		c := hookHost(t, hooksConfig(hookBlock("refuse_word", `["before_call"]`), hookBlock("rewrite", `["before_call"]`)), env)
		if got, isErr := echoed(t, c, "a secret"); !isErr || !strings.Contains(got, `refused by hook "refuse_word"`) {
			t.Errorf("refused before the rewriting hook: %q (isError %v)", got, isErr)
		}
	})
	t.Run("a rewrite the schema refuses", func(t *testing.T) {
		t.Parallel()
		// {"rewritten": true} merged in: echo's schema has additionalProperties false.
		c := hookHost(t, hooksConfig(hookBlock("rewrite", `["before_call"]`)), nil)
		if got, isErr := echoed(t, c, "hi"); !isErr || !strings.Contains(got, `hook "rewrite"`) || !strings.Contains(got, "rewritten") {
			t.Errorf("a rewrite that breaks the inputSchema: %q (isError %v), want a refusal naming the hook and the member", got, isErr)
		}
	})
	t.Run("redact", func(t *testing.T) {
		t.Parallel()
		c := hookHost(t, hooksConfig(hookBlock("redact", `["after_call"]`)), nil)
		if got, isErr := echoed(t, c, "my secret is safe"); isErr || got != "my [redacted] is safe" {
			t.Errorf("a redacted result: %q (isError %v)", got, isErr)
		}
	})
}

// TestGuardrailsFailing: a hook that hangs past its timeout, or crashes,
// refuses what it judges under on_error = "refuse" and lets it through
// under "pass"; the host keeps serving, and the crashed hook plugin is
// restarted like any plugin.
func TestGuardrailsFailing(t *testing.T) {
	t.Parallel()
	for _, behaviour := range []string{"sleep", "crash"} {
		for _, onError := range []string{"refuse", "pass"} {
			t.Run(behaviour+" on_error "+onError, func(t *testing.T) {
				t.Parallel()
				c := hookHost(t, hooksConfig(hookBlock(behaviour, `["before_call"]`, `timeout = "300ms"`, `on_error = "`+onError+`"`,
					`match = "item.name == 'echo'"`)), nil)
				for i := range 2 { // the second time, a crashed plugin was restarted (or is restarting)
					got, isErr := echoed(t, c, "hello")
					switch onError {
					case "refuse":
						if !isErr || !strings.HasPrefix(got, `refused by hook "`+behaviour+`": it failed (`) {
							t.Errorf("call %d: %q (isError %v), want the refusal of a failed hook", i, got, isErr)
						}
					case "pass":
						if isErr || got != "hello" {
							t.Errorf("call %d: %q (isError %v), want echo's answer", i, got, isErr)
						}
					}
				}
				// A tool the hook does not judge is served meanwhile.
				c.call(t, "sleep", map[string]any{"ms": 0})
			})
		}
	}
}

// TestGuardrailsPermissive: a permissive hook changes nothing, and the
// audit log says what it would have done.
func TestGuardrailsPermissive(t *testing.T) {
	t.Parallel()
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	c := hookHost(t, hooksConfig(hookBlock("refuse_word", `["before_call"]`, `mode = "permissive"`), hookBlock("redact", `["after_call"]`, `mode = "permissive"`))+
		"audit {\n  file = \""+audit+"\"\n}\n", nil)
	if got, isErr := echoed(t, c, "a secret"); isErr || got != "a secret" {
		t.Errorf("under permissive hooks: %q (isError %v), want the call untouched", got, isErr)
	}
	c.cs.Close()
	b, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"hook":"refuse_word","point":"before_call","kind":"tool","item":"echo","provider":"echo","decision":"would_refuse"`,
		`"hook":"redact","point":"after_call","kind":"tool","item":"echo","provider":"echo","decision":"would_rewrite"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the audit log lacks %s:\n%s", want, b)
		}
	}
}

// TestGuardrailsToolSearch: in tool search mode, call_tool runs the tool it
// names through the hooks, which see that tool, not call_tool.
func TestGuardrailsToolSearch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, p := range []string{"echo", "hookplugin"} {
		copyPlugin(t, p, dir, p)
	}
	config := hooksConfig(hookBlock("refuse_word", `["before_call"]`, `match = "item.name == 'echo'"`)) + "search {}\n"
	c := serveWrappedStdio(t, dir, writeConfig(t, config))
	c.awaitTool(t, "call_tool")
	call := func(s string) (string, bool) {
		res, err := c.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "call_tool",
			Arguments: map[string]any{"name": "echo", "arguments": map[string]any{"text": s}}})
		if err != nil {
			t.Fatalf("call_tool: %v", err)
		}
		return text(res), res.IsError
	}
	if got, isErr := call("a secret"); !isErr || !strings.Contains(got, `refused by hook "refuse_word"`) {
		t.Errorf("call_tool echo through a refusing hook: %q (isError %v)", got, isErr)
	}
	if got, isErr := call("hello"); isErr || !strings.Contains(got, "hello") {
		t.Errorf("call_tool echo: %q (isError %v)", got, isErr)
	}
}

// TestGuardrailsStatelessAndTasks: MCP 2026-07-28 stateless requests over
// HTTP pass the hooks, and a task's result passes after_call before the
// task keeps it.
func TestGuardrailsStatelessAndTasks(t *testing.T) {
	t.Parallel()
	config := writeConfig(t, hooksConfig(hookBlock("refuse_word", `["before_call"]`, `match = "item.name == 'echo'"`),
		hookBlock("redact", `["after_call"]`))+"sandbox {\n  plugin \"hookplugin\" {\n    env = [\"HOOKPLUGIN_WORD\"]\n  }\n}\n")
	// The hooks' word is "built": askplugin's task answers "built after accept".
	h := startHTTPHostEnv(t, []string{"HOOKPLUGIN_WORD=built"}, []string{"--config", config}, "echo", "askplugin", "hookplugin")
	url := h.base + "/mcp"
	res := rpc(t, url, "tools/call", "echo", `"name":"echo","arguments":{"text":"a built thing"}`)
	if !strings.Contains(string(res["content"]), `refused by hook \"refuse_word\"`) || string(res["isError"]) != "true" {
		t.Errorf("a stateless call the hook refuses: %s %s", res["content"], res["isError"])
	}
	res = rpc(t, url, "tools/call", "echo", `"name":"echo","arguments":{"text":"hello"}`)
	if string(res["isError"]) == "true" || !strings.Contains(string(res["content"]), "hello") {
		t.Errorf("a stateless call the hook passes: %s", res["content"])
	}
	// askplugin's build goes on as a task and asks the user; once
	// answered, its result passes after_call before the task keeps it.
	id := createTask(t, url, "build", `{}`)
	var goKey string
	awaitStatus(t, url, id, "input_required", func(task map[string]json.RawMessage) {
		var reqs map[string]json.RawMessage
		json.Unmarshal(task["inputRequests"], &reqs)
		for k := range reqs {
			if strings.HasSuffix(k, "go") {
				goKey = k
			}
		}
	})
	if goKey == "" {
		t.Fatal("the task asked nothing")
	}
	rpc(t, url, "tasks/update", id, `"taskId":"`+id+`","inputResponses":{"`+goKey+`":{"action":"accept"}}`)
	awaitStatus(t, url, id, "completed", func(task map[string]json.RawMessage) {
		if r := string(task["result"]); !strings.Contains(r, "[redacted] after accept") || strings.Contains(r, "built") {
			t.Errorf("the task's stored result %s, want it redacted by the after_call hook", r)
		}
	})
}

// TestWrappedServerResultsRedacted: the reference memory server from npm,
// wrapped, behind the bundled pii guardrail at after_call: what the server
// stored and returns (an e-mail address, a card number) reaches the client
// redacted, in the text and in structuredContent, which the host checks
// again against the tool's outputSchema.
func TestWrappedServerResultsRedacted(t *testing.T) {
	t.Parallel()
	script, node := referenceServer(t, "server-memory")
	dir := t.TempDir()
	declare(t, dir, "memory", map[string]any{"command": node, "args": []string{script},
		"env": map[string]string{"MEMORY_FILE_PATH": "${HOME}/memory.jsonl"}})
	copyPlugin(t, "pii", dir, "pii")
	c := serveWrappedStdio(t, dir, writeConfig(t, hooksConfig(`  hook "pii" {
    plugin = "pii"
    on     = ["after_call"]
  }
`)))
	c.awaitTool(t, "read_graph")
	const mail, card = "ada@example.com", "4111 1111 1111 1111"
	c.call(t, "create_entities", map[string]any{"entities": []map[string]any{
		{"name": "Ada", "entityType": "person", "observations": []string{"mail " + mail + ", card " + card}}}})
	res, err := c.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "read_graph", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("read_graph: %v", err)
	}
	got := text(res)
	if res.IsError {
		t.Fatalf("read_graph: isError: %s", got)
	}
	structured, _ := json.Marshal(res.StructuredContent)
	all := got + " " + string(structured)
	for _, personal := range []string{mail, card} {
		if strings.Contains(all, personal) {
			t.Errorf("read_graph returned %q unredacted: %s", personal, all)
		}
	}
	if !strings.Contains(all, "[redacted: email]") || !strings.Contains(got, "Ada") {
		t.Errorf("read_graph = %s, want Ada with her e-mail address redacted", all)
	}
}

// TestGuardrailsNodeHook: a hook written in Node.js (examples/node-hook),
// sandboxed with runtime "node", answers through the contract in a full
// plughost serve: it refuses a call asking for a recursive delete and
// redacts an AWS access key id from a result.
func TestGuardrailsNodeHook(t *testing.T) {
	t.Parallel()
	base, err := os.MkdirTemp("", "plughost-node-hook-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755) // as root, plugins run as uid 65534
	plugins, _ := nodeProjectOf(t, base, filepath.Join("..", "..", "examples", "node-hook"), "guard")
	copyPlugin(t, "echo", plugins, "echo")
	config := writeConfig(t, `hooks {
  hook "node" {
    plugin = "guard"
    on     = ["before_call", "after_call"]
  }
}
sandbox {
  plugin "guard" {
    runtime = "node"
  }
}
`)
	c := serveWrappedStdio(t, plugins, config)
	c.awaitTool(t, "echo")
	if got, isErr := echoed(t, c, "please rm -rf /"); !isErr || got != `refused by hook "node": recursive deletes are not allowed` {
		t.Errorf("a call the Node hook refuses: %q (isError %v)", got, isErr)
	}
	if got, isErr := echoed(t, c, "key AKIAIOSFODNN7EXAMPLE here"); isErr || got != "key [redacted] here" {
		t.Errorf("a result the Node hook redacts: %q (isError %v)", got, isErr)
	}
}
