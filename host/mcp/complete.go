package mcp

import (
	"encoding/json"
	"errors"

	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/internal/jsonrpc"
)

// completion/complete: the server checks the shape of the params
// (completeParams) and hands them to the catalog as the client sent them,
// on a long call.

// completeOp is a completion/complete.
type completeOp struct{ params json.RawMessage }

func (h catalogRequests) startComplete(in incoming, p completeParams) func() {
	return h.calls.startOp(in, &completeOp{params: p.raw})
}

func (o *completeOp) exec(c *call, _ *tool.Input) (json.RawMessage, error) {
	var res json.RawMessage
	var err error
	if g := c.s.view.guard(); g != nil {
		res, err = c.s.srv.guarded.CompleteFor(c.ctx, g, o.params)
	} else {
		res, err = c.s.srv.catalog.Complete(c.ctx, o.params)
	}
	if err != nil && needsInput(err) {
		err = errors.New("the provider asked for the client's input, which completion cannot carry")
	}
	return res, err
}

func (o *completeOp) answer(b []byte, c *call, res json.RawMessage, err error) []byte {
	return appendAnswer(b, c, "completion/complete", res, err, func(err error) *jsonrpc.Error {
		if errors.Is(err, tool.ErrUnknownPrompt) || errors.Is(err, tool.ErrUnknownResource) || errors.Is(err, tool.ErrBadArguments) {
			return invalidParams(err)
		}
		return nil
	})
}
