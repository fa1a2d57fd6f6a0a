package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/plughost/plughost/host/mcp/internal/mcptest"
	"github.com/plughost/plughost/host/tasks"
	"github.com/plughost/plughost/host/tool"
)

// denyGuard hides the tools it names (a caller's rules, changed at will).
type denyGuard struct {
	mu     sync.Mutex
	denied map[string]bool
}

func (g *denyGuard) Key() string { return "deny" }

func (g *denyGuard) Visible(it *tool.Item) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return !g.denied[it.Name]
}

func (g *denyGuard) Allow(it *tool.Item, _ json.RawMessage) error { return nil }

func (g *denyGuard) deny(name string) {
	g.mu.Lock()
	g.denied[name] = true
	g.mu.Unlock()
}

// guardedTestCatalog is the test catalog, listing per caller as
// host/catalog does (its lists are the same for all: what matters here is
// what the guard says of a tool).
type guardedTestCatalog struct{ *mcptest.Catalog }

func (c guardedTestCatalog) ListToolsFor(_ tool.Guard, cursor string) ([]json.RawMessage, string, error) {
	return c.ListTools(cursor)
}

func (c guardedTestCatalog) ListResourcesFor(_ tool.Guard, cursor string) ([]json.RawMessage, string, error) {
	return c.ListResources(cursor)
}

func (c guardedTestCatalog) ListResourceTemplatesFor(_ tool.Guard, cursor string) ([]json.RawMessage, string, error) {
	return c.ListResourceTemplates(cursor)
}

func (c guardedTestCatalog) ListPromptsFor(_ tool.Guard, cursor string) ([]json.RawMessage, string, error) {
	return c.ListPrompts(cursor)
}

func (c guardedTestCatalog) ViewSums(tool.Guard) (tools, resources, templates, prompts uint64) {
	return
}

func (c guardedTestCatalog) MayRead(tool.Guard, string) bool { return true }

func (c guardedTestCatalog) CompleteFor(ctx context.Context, _ tool.Guard, params json.RawMessage) (json.RawMessage, error) {
	return c.Complete(ctx, params)
}

func (c guardedTestCatalog) Sees(g tool.Guard, name string) bool {
	return g.Visible(&tool.Item{Kind: tool.ItemTool, Name: name})
}

// collected is a Sink keeping what was written.
type collected struct {
	mu   sync.Mutex
	msgs []string
}

func (c *collected) Write(msg []byte) error {
	c.mu.Lock()
	c.msgs = append(c.msgs, string(msg))
	c.mu.Unlock()
	return nil
}

// statelessAs sends one stateless request as caller to srv and returns the
// response.
func statelessAs(t *testing.T, srv *Server, caller Caller, method, params string) string {
	t.Helper()
	sess := srv.OpenStateless(Peer{Caller: caller})
	defer sess.Close()
	var out collected
	sess.Handle(t.Context(), []byte(`{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":{`+params+`,`+taskMeta+`}}`), &out)
	out.mu.Lock()
	defer out.mu.Unlock()
	if len(out.msgs) == 0 {
		t.Fatalf("%s: no response", method)
	}
	return out.msgs[len(out.msgs)-1]
}

// Under access rules, the owner of a task whose rules now hide its tool
// is answered as for an unknown task, as another caller is; its rules
// allowing the tool again, it is served again. The stateless lists say
// cacheScope "private".
func TestTaskRulesAskedAgain(t *testing.T) {
	t.Parallel()
	svc := tasks.New(tasks.Options{})
	t.Cleanup(func() { svc.Close() })
	cat := guardedTestCatalog{mcptest.NewCatalog()}
	guard := &denyGuard{denied: map[string]bool{}}
	srv := NewServer(cat, &Options{Tasks: svc, Access: func(*Caller) tool.Guard { return guard }})
	alice := Caller{Issuer: "https://as.example", Subject: "alice", ClientID: "app"}
	res := statelessAs(t, srv, alice, "tools/call", `"name":"job","arguments":{}`)
	var created struct{ Result struct{ TaskID string } }
	if json.Unmarshal([]byte(res), &created); created.Result.TaskID == "" {
		t.Fatalf("tools/call job: %s, want a CreateTaskResult", res)
	}
	id := created.Result.TaskID
	t.Cleanup(func() { cat.ReleaseJob(0) })
	get := `"taskId":"` + id + `"`
	if got := statelessAs(t, srv, alice, "tasks/get", get); !strings.Contains(got, `"status":"working"`) {
		t.Fatalf("the owner's tasks/get: %s, want its working task", got)
	}
	unknown := statelessAs(t, srv, alice, "tasks/get", `"taskId":"nope"`)
	for name, who := range map[string]Caller{
		"another subject":        {Issuer: alice.Issuer, Subject: "bob", ClientID: alice.ClientID},
		"another client":         {Issuer: alice.Issuer, Subject: alice.Subject, ClientID: "other-app"},
		"another issuer":         {Issuer: "https://other.example", Subject: alice.Subject, ClientID: alice.ClientID},
		"the static token":       {},
		"the local user of name": {Subject: "alice", Local: true},
	} {
		for _, m := range []string{"tasks/get", "tasks/cancel"} {
			if got := statelessAs(t, srv, who, m, get); strings.ReplaceAll(got, id, "nope") != strings.ReplaceAll(unknown, "tasks/get", m) {
				t.Errorf("%s's %s of alice's task: %s; want as for an unknown task", name, m, got)
			}
		}
	}
	guard.deny("job")
	if got := statelessAs(t, srv, alice, "tasks/get", get); strings.ReplaceAll(got, id, "nope") != unknown {
		t.Errorf("the owner's tasks/get once its rules hide the tool: %s; want as for an unknown task", got)
	}
	if got := statelessAs(t, srv, alice, "tasks/cancel", get); !strings.Contains(got, `"code":-32602`) {
		t.Errorf("the owner's tasks/cancel once its rules hide the tool: %s; want -32602", got)
	}
	guard.mu.Lock()
	delete(guard.denied, "job")
	guard.mu.Unlock()
	if got := statelessAs(t, srv, alice, "tasks/get", get); !strings.Contains(got, `"status":"working"`) {
		t.Errorf("the owner's tasks/get, the tool allowed again: %s, want its working task (not cancelled)", got)
	}
	for _, m := range []string{"tools/list", "prompts/list", "resources/list", "resources/templates/list"} {
		if got := statelessAs(t, srv, alice, m, `"cursor":"`+""+`"`); !strings.Contains(got, `"cacheScope":"private"`) {
			t.Errorf("%s under access rules: %s, want cacheScope private", m, got)
		}
	}
	if got := statelessAs(t, srv, alice, "server/discover", `"x":0`); !strings.Contains(got, `"cacheScope":"public"`) {
		t.Errorf("server/discover: %s, want cacheScope public", got)
	}
}
