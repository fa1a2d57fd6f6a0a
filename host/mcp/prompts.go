package mcp

import (
	"encoding/json"
	"errors"
	"strconv"

	"github.com/plughost/plughost/host/mcp/wire"
	"github.com/plughost/plughost/host/tool"
)

// Prompts: prompts/list is answered inline (tools.go), prompts/get is a
// long call to the catalog.

// promptParams are the params of prompts/get, aliasing the message.
type promptParams struct {
	name string
	args []byte // nil when absent or null
}

func decodeGetPrompt(params []byte) (promptParams, *wire.Error) {
	var p promptParams
	var nameRaw []byte
	for k, v := range wire.Members(params) {
		switch {
		case wire.KeyIs(k, "name"):
			nameRaw = v
		case wire.KeyIs(k, "arguments"):
			p.args = v
		case wire.KeyIs(k, "_meta"):
			if err := checkMeta(v); err != nil {
				return p, err
			}
		}
	}
	var ok bool
	if p.name, ok = wire.Unquote(nameRaw); !ok {
		return p, wire.NewError(wire.CodeInvalidParams, "invalid params: prompts/get needs name, a string")
	}
	if string(p.args) == "null" {
		p.args = nil // as absent: the catalog defaults it
	}
	if err := checkStringMap(p.args, "arguments"); err != nil {
		return p, err
	}
	return p, nil
}

// checkStringMap checks that obj, when not nil, is an object of strings,
// as prompt arguments are.
func checkStringMap(obj []byte, what string) *wire.Error {
	if obj == nil {
		return nil
	}
	if !wire.IsObject(obj) {
		return wire.NewError(wire.CodeInvalidParams, "invalid params: "+what+" must be an object")
	}
	for k, v := range wire.Members(obj) {
		if _, ok := wire.Unquote(v); !ok {
			name, _ := wire.Unquote(k)
			return wire.NewError(wire.CodeInvalidParams, "invalid params: "+what+" must be an object of strings; "+
				strconv.Quote(name)+" is not a string")
		}
	}
	return nil
}

// promptOp is a prompts/get.
type promptOp struct{ g tool.PromptGet }

func (s *Session) startGetPrompt(in incoming, p promptParams) func() {
	var args json.RawMessage
	if p.args != nil {
		args, _ = wire.AppendJSON(nil, p.args) // the transport's bytes: copy
	}
	op := &promptOp{g: tool.PromptGet{Name: p.name, Arguments: args, ClientCapabilities: s.capsOf(in.st).raw,
		Caller: &s.conn.Peer.Caller, Guard: s.view.guard()}}
	return s.startRetriable(in, op, "prompts/get", p.name, func(i *tool.Input) { op.g.Input = i })
}

func (o *promptOp) exec(c *call, in *tool.Input) (json.RawMessage, error) {
	if in != nil {
		o.g.Input = in
	}
	return c.s.srv.catalog.GetPrompt(c.ctx, &o.g)
}

func (o *promptOp) answer(b []byte, c *call, res json.RawMessage, err error) []byte {
	return appendAnswer(b, c, "prompts/get", res, err, func(err error) *wire.Error {
		if errors.Is(err, tool.ErrUnknownPrompt) || errors.Is(err, tool.ErrBadArguments) {
			return invalidParams(err)
		}
		return nil
	})
}
