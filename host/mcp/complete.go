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

const needComplete = "invalid params: completion/complete needs ref (an object) and argument (an object with name and value, strings)"

// completeParams are the params of completion/complete, checked and
// handed to the catalog as the client sent them.
type completeParams struct {
	raw json.RawMessage // a compact copy of the params
}

func (p completeParams) decode(_ string, raw []byte) (completeParams, *jsonrpc.Error) {
	var ref, arg, ctx []byte
	if _, err := readMembers(raw, []string{"ref", "argument", "context"}, &ref, &arg, &ctx); err != nil {
		return p, err
	}
	if !jsonrpc.IsObject(ref) || !jsonrpc.IsObject(arg) {
		return p, jsonrpc.NewError(jsonrpc.CodeInvalidParams, needComplete)
	}
	switch typ, _ := jsonrpc.Unquote(jsonrpc.Member(ref, "type")); typ {
	case "ref/prompt":
		if _, ok := jsonrpc.Unquote(jsonrpc.Member(ref, "name")); !ok {
			return p, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: a ref/prompt needs name, a string")
		}
	case "ref/resource":
		if _, ok := jsonrpc.Unquote(jsonrpc.Member(ref, "uri")); !ok {
			return p, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: a ref/resource needs uri, a string")
		}
	default:
		return p, jsonrpc.NewError(jsonrpc.CodeInvalidParams, `invalid params: ref.type must be "ref/prompt" or "ref/resource"`)
	}
	_, nameOK := jsonrpc.Unquote(jsonrpc.Member(arg, "name"))
	_, valueOK := jsonrpc.Unquote(jsonrpc.Member(arg, "value"))
	if !nameOK || !valueOK {
		return p, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: argument needs name and value, strings")
	}
	if ctx != nil {
		if !jsonrpc.IsObject(ctx) {
			return p, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: context must be an object")
		}
		if err := checkStringMap(jsonrpc.Member(ctx, "arguments"), "context.arguments"); err != nil {
			return p, err
		}
	}
	p.raw, _ = jsonrpc.AppendJSON(nil, raw) // the transport's bytes: copy
	return p, nil
}

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
