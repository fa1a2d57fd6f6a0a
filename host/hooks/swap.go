package hooks

import (
	"context"
	"encoding/json"
	"sync/atomic"

	"github.com/plughost/plughost/host/tool"
)

// Swap is the hooks the catalog and the plugin manager are given once, at
// start, whose chain a reloaded configuration replaces (issue 35): each
// question is asked of the chain current when it is asked, so a new
// hooks block takes effect for the calls, reads, gets and definitions
// asked about after Set, and one asked already finishes with the chain
// it started with. The zero Swap has no hooks. It implements tool.Hooks,
// and Selects and Plugins as Chain does, for the catalog and the manager
// to use as they use a Chain.
type Swap struct {
	cur atomic.Pointer[Chain]
}

// NewSwap returns a Swap serving c (nil: no hooks).
func NewSwap(c *Chain) *Swap {
	s := &Swap{}
	s.cur.Store(c)
	return s
}

// Set makes c (nil: no hooks) the chain asked from now on.
func (s *Swap) Set(c *Chain) { s.cur.Store(c) }

// Chain is the chain asked now; nil when there are no hooks.
func (s *Swap) Chain() *Chain { return s.cur.Load() }

// Has is Chain.Has of the current chain.
func (s *Swap) Has(point tool.HookPoint) bool { return s.cur.Load().Has(point) }

// Selects is Chain.Selects of the current chain.
func (s *Swap) Selects(q *tool.HookCall) bool { return s.cur.Load().Selects(q) }

// Plugins is Chain.Plugins of the current chain.
func (s *Swap) Plugins() []string { return s.cur.Load().Plugins() }

// Apply is Chain.Apply of the current chain.
func (s *Swap) Apply(ctx context.Context, q *tool.HookCall) (json.RawMessage, error) {
	return s.cur.Load().Apply(ctx, q)
}
