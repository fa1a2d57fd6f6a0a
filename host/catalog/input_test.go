package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/host/tool"
)

// startServer is a fakeServer that is also a tool.Starter: StartCall runs
// CallTool on a goroutine and hands its answer to done.
type startServer struct{ *fakeServer }

var _ tool.Starter = (*startServer)(nil)

func (s *startServer) StartCall(ctx context.Context, call *tool.Call, done func(json.RawMessage, error)) {
	go func() { done(s.CallTool(ctx, call)) }()
}

// asker returns a provider offering tool "x", resource "file:///x" and
// prompt "x", each of which needs the client's input: without it, the
// answer is ir; with it, a result. calls counts every request it gets.
func asker(name string, ir *tool.InputRequired, calls *atomic.Int32) *startServer {
	s := newServer(name).with("file:///x", "x")
	s.tools = []tool.Def{toolDef("x", objectSchema)}
	s.call = func(_ context.Context, c *tool.Call) (json.RawMessage, error) {
		calls.Add(1)
		if c.Input == nil {
			return nil, ir
		}
		return tool.TextResult(name), nil
	}
	s.read = func(_ context.Context, r *tool.Read) (json.RawMessage, error) {
		calls.Add(1)
		if r.Input == nil {
			return nil, ir
		}
		return json.RawMessage(`{"contents":[{"uri":"file:///x","text":"` + name + `"}]}`), nil
	}
	s.get = func(_ context.Context, g *tool.PromptGet) (json.RawMessage, error) {
		calls.Add(1)
		if g.Input == nil {
			return nil, ir
		}
		return json.RawMessage(`{"messages":[]}`), nil
	}
	return &startServer{s}
}

// A provider's InputRequired names it, and the retry that carries the
// client's answers goes to that provider or nowhere: when another provider
// now serves the tool, resource or prompt (the providers changed while the
// client answered), or none does, or the retry names no provider, it is
// refused as gone and no provider is called.
func TestInputRetryStaysWithItsProvider(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		what, again string
		do          func(c *Catalog, in *tool.Input) error
	}{
		"CallTool": {`tool "x"`, "call it again", func(c *Catalog, in *tool.Input) error {
			_, err := c.CallTool(context.Background(), &tool.Call{Name: "x", Input: in})
			return err
		}},
		"StartCall": {`tool "x"`, "call it again", func(c *Catalog, in *tool.Input) error {
			ch := make(chan error, 1)
			c.StartCall(context.Background(), &tool.Call{Name: "x", Input: in}, func(_ json.RawMessage, err error) { ch <- err })
			return <-ch
		}},
		"ReadResource": {`resource "file:///x"`, "read it again", func(c *Catalog, in *tool.Input) error {
			_, err := c.ReadResource(context.Background(), &tool.Read{URI: "file:///x", Input: in})
			return err
		}},
		"GetPrompt": {`prompt "x"`, "get it again", func(c *Catalog, in *tool.Input) error {
			_, err := c.GetPrompt(context.Background(), &tool.PromptGet{Name: "x", Input: in})
			return err
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			var calls atomic.Int32
			ir := &tool.InputRequired{Requests: json.RawMessage(`{"1":{"method":"roots/list"}}`), State: "st"}
			f.cat.Set(asker("b", ir, &calls))

			err := tc.do(f.cat, nil)
			var got *tool.InputRequired
			if !errors.As(err, &got) {
				t.Fatalf("first round: error %v, want *tool.InputRequired", err)
			}
			want := tool.InputRequired{Requests: ir.Requests, State: "st", Provider: "b"}
			if diff := cmp.Diff(want, *got); diff != "" {
				t.Errorf("the InputRequired (-want +got):\n%s", diff)
			}
			if ir.Provider != "" {
				t.Errorf("the provider's own InputRequired was changed: Provider %q", ir.Provider)
			}
			if err := tc.do(f.cat, &tool.Input{State: "st", Provider: "b"}); err != nil {
				t.Errorf("a retry to the provider that asked: %v", err)
			}

			refused := func(what string, in *tool.Input, wantText string) {
				t.Helper()
				before := calls.Load()
				err := tc.do(f.cat, in)
				if !errors.Is(err, tool.ErrGone) || err.Error() != wantText {
					t.Errorf("%s: error %v, want ErrGone: %s", what, err, wantText)
				}
				if n := calls.Load() - before; n != 0 {
					t.Errorf("%s: providers were called %d times", what, n)
				}
			}
			refused("a retry naming no provider", &tool.Input{State: "st"},
				tc.what+`: the retry carries a provider's state but does not name the provider that asked for the client's input, so it cannot go to provider "b": `+tc.again)
			if err := tc.do(f.cat, &tool.Input{Responses: json.RawMessage(`{"1":{"roots":[]}}`)}); err != nil {
				t.Errorf("answers with no state and no provider (a stateless client's): %v", err)
			}

			f.cat.Remove("b")
			f.cat.Set(asker("a", ir, &calls))
			refused("another provider serves it now", &tool.Input{State: "st", Provider: "b"},
				tc.what+`: provider "b", which asked for the client's input, no longer serves it (provider "a" does): `+tc.again)

			f.cat.Remove("a")
			refused("no provider serves it", &tool.Input{State: "st", Provider: "b"},
				tc.what+`: no provider serves it any more, so the client's input cannot reach the provider that asked for it ("b")`)
		})
	}
}
