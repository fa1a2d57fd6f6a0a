package mcp

import (
	"encoding/json"
	"errors"

	"github.com/plughost/plughost/host/mcp/wire"
	"github.com/plughost/plughost/host/tool"
)

// completion/complete: the server checks the shape of the params and
// hands them to the catalog as the client sent them, on a long call.

const needComplete = "invalid params: completion/complete needs ref (an object) and argument (an object with name and value, strings)"

// decodeComplete checks the params of completion/complete and returns a
// compact copy of them.
func decodeComplete(params []byte) (json.RawMessage, *wire.Error) {
	var ref, arg, ctx []byte
	for k, v := range wire.Members(params) {
		switch {
		case wire.KeyIs(k, "ref"):
			ref = v
		case wire.KeyIs(k, "argument"):
			arg = v
		case wire.KeyIs(k, "context"):
			ctx = v
		case wire.KeyIs(k, "_meta"):
			if err := checkMeta(v); err != nil {
				return nil, err
			}
		}
	}
	if !wire.IsObject(ref) || !wire.IsObject(arg) {
		return nil, wire.NewError(wire.CodeInvalidParams, needComplete)
	}
	switch typ, _ := wire.Unquote(wire.Member(ref, "type")); typ {
	case "ref/prompt":
		if _, ok := wire.Unquote(wire.Member(ref, "name")); !ok {
			return nil, wire.NewError(wire.CodeInvalidParams, "invalid params: a ref/prompt needs name, a string")
		}
	case "ref/resource":
		if _, ok := wire.Unquote(wire.Member(ref, "uri")); !ok {
			return nil, wire.NewError(wire.CodeInvalidParams, "invalid params: a ref/resource needs uri, a string")
		}
	default:
		return nil, wire.NewError(wire.CodeInvalidParams, `invalid params: ref.type must be "ref/prompt" or "ref/resource"`)
	}
	_, nameOK := wire.Unquote(wire.Member(arg, "name"))
	_, valueOK := wire.Unquote(wire.Member(arg, "value"))
	if !nameOK || !valueOK {
		return nil, wire.NewError(wire.CodeInvalidParams, "invalid params: argument needs name and value, strings")
	}
	if ctx != nil {
		if !wire.IsObject(ctx) {
			return nil, wire.NewError(wire.CodeInvalidParams, "invalid params: context must be an object")
		}
		if err := checkStringMap(wire.Member(ctx, "arguments"), "context.arguments"); err != nil {
			return nil, err
		}
	}
	p, _ := wire.AppendJSON(nil, params) // the transport's bytes: copy
	return p, nil
}

// completeOp is a completion/complete.
type completeOp struct{ params json.RawMessage }

func (s *Session) startComplete(in incoming, params json.RawMessage) func() {
	return s.startOp(in, &completeOp{params: params})
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
	return appendAnswer(b, c, "completion/complete", res, err, func(err error) *wire.Error {
		if errors.Is(err, tool.ErrUnknownPrompt) || errors.Is(err, tool.ErrUnknownResource) || errors.Is(err, tool.ErrBadArguments) {
			return invalidParams(err)
		}
		return nil
	})
}
