package hooks

import (
	"context"
	"errors"
	"testing"

	"github.com/plughost/plughost/host/tool"
)

// A Swap asks the chain current when a question is asked: a question
// asked before Set finishes with the old chain (its hook refuses), the
// next one meets the new chain (no refusing hook), and Set(nil) leaves
// no hook at all.
func TestSwap(t *testing.T) {
	t.Parallel()
	asked := make(chan struct{})
	release := make(chan struct{})
	a := &asker{answers: map[string]func(context.Context, *tool.HookCall) (*tool.HookAnswer, error){
		"deny": func(context.Context, *tool.HookCall) (*tool.HookAnswer, error) {
			close(asked)
			<-release
			return &tool.HookAnswer{Decision: tool.HookRefuse, Reason: "old chain"}, nil
		},
	}}
	old, _ := newChain(t, a, block("deny", "g", "before_call"))
	next, _ := newChain(t, a, block("log", "g", "before_call", "after_call"))
	s := NewSwap(old)
	if !s.Has(tool.BeforeCall) || s.Has(tool.AfterCall) {
		t.Fatal("Has of the old chain")
	}
	inFlight := make(chan error, 1)
	go func() {
		_, err := s.Apply(context.Background(), call(tool.BeforeCall, "files", `{}`))
		inFlight <- err
	}()
	<-asked
	s.Set(next)
	close(release)
	if err := <-inFlight; !errors.Is(err, tool.ErrRefused) {
		t.Errorf("the question asked before the swap: %v, want the old chain's refusal", err)
	}
	if got, err := s.Apply(context.Background(), call(tool.BeforeCall, "files", `{"a":1}`)); err != nil || string(got) != `{"a":1}` {
		t.Errorf("the question asked after the swap: %s, %v; want a pass", got, err)
	}
	if !s.Has(tool.AfterCall) || s.Chain() != next || len(s.Plugins()) != 1 || !s.Selects(call(tool.AfterCall, "files", `{}`)) {
		t.Error("Has, Chain, Plugins or Selects do not answer from the new chain")
	}
	s.Set(nil)
	if s.Has(tool.BeforeCall) || s.Selects(call(tool.BeforeCall, "files", `{}`)) || s.Plugins() != nil {
		t.Error("a Swap set to nil still has hooks")
	}
	if got, err := s.Apply(context.Background(), call(tool.BeforeCall, "files", `{"b":2}`)); err != nil || string(got) != `{"b":2}` {
		t.Errorf("Apply with no chain: %s, %v; want the arguments unchanged", got, err)
	}
}
