package pluginproto

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// describe is what the test handlers answer: the caller as they got it.
func describe(c *Caller) string {
	if c == nil {
		return "nobody"
	}
	return fmt.Sprintf("%s %s %s %v %s %v", c.Subject, c.ClientID, c.Issuer, c.Scopes, c.Claims, c.Local)
}

// Who a request acts for reaches the handler of a call, a read and a
// prompt get, over the contract and in process; nil stays nil.
func TestCallerReachesTheHandlers(t *testing.T) {
	t.Parallel()
	p := New("test", "0")
	p.AddTool(Tool{Name: "whoami"}, func(_ context.Context, req *Request) (*Result, error) {
		return TextResult(describe(req.Caller)), nil
	})
	p.AddResource(Resource{URI: "who://ami", Name: "whoami"}, func(_ context.Context, r *ResourceRead) (*ResourceResult, error) {
		return TextContents("", describe(r.Caller)), nil
	})
	p.AddPrompt(Prompt{Name: "whoami"}, func(_ context.Context, g *PromptGet) (*PromptResult, error) {
		return &PromptResult{Messages: []Message{{Role: "user", Content: Text(describe(g.Caller))}}}, nil
	})
	c, _ := serve(t, 2, newServer(p))
	if _, err := c.Describe(t.Context(), "test"); err != nil {
		t.Fatal(err)
	}
	alice := &Caller{Subject: "alice", ClientID: "cli", Issuer: "https://as", Scopes: []string{"mcp:tools"}, Claims: json.RawMessage(`{"groups":["writers"]}`)}
	for _, who := range []*Caller{alice, nil} {
		want := describe(who)
		for name, get := range map[string]func() (json.RawMessage, error){
			"call over gRPC": func() (json.RawMessage, error) {
				return c.CallTool(t.Context(), &CallRequest{Tool: "whoami", Caller: who})
			},
			"call in process": func() (json.RawMessage, error) {
				return p.CallTool(t.Context(), &CallRequest{Tool: "whoami", Caller: who})
			},
			"read over gRPC": func() (json.RawMessage, error) {
				return c.ReadResource(t.Context(), &ReadRequest{URI: "who://ami", Caller: who})
			},
			"read in process": func() (json.RawMessage, error) {
				return p.ReadResource(t.Context(), &ReadRequest{URI: "who://ami", Caller: who})
			},
			"prompt over gRPC": func() (json.RawMessage, error) {
				return c.GetPrompt(t.Context(), &PromptRequest{Name: "whoami", Caller: who})
			},
			"prompt in process": func() (json.RawMessage, error) {
				return p.GetPrompt(t.Context(), &PromptRequest{Name: "whoami", Caller: who})
			},
		} {
			res, err := get()
			quoted, _ := json.Marshal(want)
			if err != nil || !strings.Contains(string(res), string(quoted)) {
				t.Errorf("%s as %s: %s %v", name, want, res, err)
			}
		}
	}
}
