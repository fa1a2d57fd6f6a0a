package mcp

import (
	"encoding/json"
	"errors"

	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/internal/jsonrpc"
)

// Prompts: prompts/list is answered inline (tools.go), prompts/get is a
// long call to the catalog.

// promptParams are the params of prompts/get: namedParams whose arguments
// are strings.
type promptParams struct{ namedParams }

func (p promptParams) decode(method string, raw []byte) (promptParams, *jsonrpc.Error) {
	var err *jsonrpc.Error
	if p.namedParams, err = p.namedParams.decode(method, raw); err != nil {
		return p, err
	}
	if string(p.args) == "null" {
		p.args = nil // as absent: the catalog defaults it
	}
	return p, checkStringMap(p.args, "arguments")
}

// promptOp is a prompts/get.
type promptOp struct{ g tool.PromptGet }

func (h catalogRequests) startGetPrompt(in incoming, p promptParams) func() {
	var args json.RawMessage
	if p.args != nil {
		args, _ = jsonrpc.AppendJSON(nil, p.args) // the transport's bytes: copy
	}
	op := &promptOp{g: tool.PromptGet{Name: p.name, Arguments: args, ClientCapabilities: h.calls.capsOf(in.st).raw,
		Caller: h.caller, Guard: h.view.guard()}}
	return h.calls.startRetriable(in, op, "prompts/get", p.name, func(i *tool.Input) { op.g.Input = i })
}

func (o *promptOp) exec(c *call, in *tool.Input) (json.RawMessage, error) {
	if in != nil {
		o.g.Input = in
	}
	return c.s.srv.catalog.GetPrompt(c.ctx, &o.g)
}

func (o *promptOp) answer(b []byte, c *call, res json.RawMessage, err error) []byte {
	return appendAnswer(b, c, "prompts/get", res, err, func(err error) *jsonrpc.Error {
		if errors.Is(err, tool.ErrUnknownPrompt) || errors.Is(err, tool.ErrBadArguments) {
			return invalidParams(err)
		}
		return nil
	})
}
