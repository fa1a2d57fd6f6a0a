package mcp

import (
	"encoding/json"
	"errors"
	"strconv"

	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/internal/jsonrpc"
)

// Prompts: prompts/list is answered inline (tools.go), prompts/get is a
// long call to the catalog.

// promptParams are the params of prompts/get, aliasing the message.
type promptParams struct {
	name string
	args []byte // nil when absent or null
}

func decodeGetPrompt(params []byte) (promptParams, *jsonrpc.Error) {
	var p promptParams
	var nameRaw []byte
	for k, v := range jsonrpc.Members(params) {
		switch {
		case jsonrpc.KeyIs(k, "name"):
			nameRaw = v
		case jsonrpc.KeyIs(k, "arguments"):
			p.args = v
		case jsonrpc.KeyIs(k, "_meta"):
			if err := checkMeta(v); err != nil {
				return p, err
			}
		}
	}
	var ok bool
	if p.name, ok = jsonrpc.Unquote(nameRaw); !ok {
		return p, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: prompts/get needs name, a string")
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
func checkStringMap(obj []byte, what string) *jsonrpc.Error {
	if obj == nil {
		return nil
	}
	if !jsonrpc.IsObject(obj) {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: "+what+" must be an object")
	}
	for k, v := range jsonrpc.Members(obj) {
		if _, ok := jsonrpc.Unquote(v); !ok {
			name, _ := jsonrpc.Unquote(k)
			return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: "+what+" must be an object of strings; "+
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
		args, _ = jsonrpc.AppendJSON(nil, p.args) // the transport's bytes: copy
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
	return appendAnswer(b, c, "prompts/get", res, err, func(err error) *jsonrpc.Error {
		if errors.Is(err, tool.ErrUnknownPrompt) || errors.Is(err, tool.ErrBadArguments) {
			return invalidParams(err)
		}
		return nil
	})
}
