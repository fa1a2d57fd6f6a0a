package mcp

import (
	"strconv"

	"github.com/plughost/plughost/internal/jsonrpc"
)

// Params: each entry of the method table names its method's params type
// (request[callParams], notification[cancelParams]), and the table decodes
// and checks the params once, before the handler runs, handing it a typed
// value. A params type decodes itself: its decode reads the raw params
// object (nil when absent; an object otherwise, which jsonrpc.Decode
// checked) and returns the error to answer with, -32602 naming what is
// wrong, in the order its checks make them. What decode keeps aliases the
// message, unless it says it copies. Each type sits beside its handler
// (callParams in call.go, uriParams in resources.go, ...); here are the
// contract and the rules several share: a name with its arguments
// (tools/call, prompts/get), _meta, an object of strings.

// params is what the table asks of a params type P: a *P decodes the
// params of method into itself.
type params[P any] interface {
	*P
	decode(method string, raw []byte) *jsonrpc.Error
}

// noParams are the params of a method that takes none (any are ignored).
type noParams struct{}

func (*noParams) decode(string, []byte) *jsonrpc.Error { return nil }

// namedParams are the params of a request naming what it runs
// (tools/call, prompts/get): name, arguments and _meta.
type namedParams struct {
	name string
	args []byte // nil when absent; JSON null stands for absent too
	meta []byte // _meta, an object with a valid progressToken if any; nil when absent
}

func (p *namedParams) decode(method string, raw []byte) *jsonrpc.Error {
	var name []byte
	for k, v := range jsonrpc.Members(raw) {
		switch {
		case jsonrpc.KeyIs(k, "name"):
			name = v
		case jsonrpc.KeyIs(k, "arguments"):
			p.args = v
		case jsonrpc.KeyIs(k, "_meta"):
			if err := checkMeta(v); err != nil {
				return err
			}
			p.meta = v
		}
	}
	var ok bool
	p.name, ok = jsonrpc.Unquote(name)
	switch {
	case !ok:
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: "+method+" needs name, a string")
	case p.args != nil && !jsonrpc.IsObject(p.args) && string(p.args) != "null":
		// null is "no arguments" to some clients: the catalog defaults it.
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: arguments must be an object")
	}
	return nil
}

// checkMeta checks a request's _meta: an object, whose progressToken, if
// any, is a string or an integer.
func checkMeta(meta []byte) *jsonrpc.Error {
	if !jsonrpc.IsObject(meta) {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: _meta must be an object")
	}
	if tok := jsonrpc.Member(meta, "progressToken"); tok != nil && !jsonrpc.ValidID(tok) {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: progressToken must be a string or an integer")
	}
	return nil
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
