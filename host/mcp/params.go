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

// params is what the table asks of a params type P: its decode returns
// the params of method as a P. (A value, not a pointer: the decoded
// params stay on the stack.)
type params[P any] interface {
	decode(method string, raw []byte) (P, *jsonrpc.Error)
}

// noParams are the params of a method that takes none (any are ignored).
type noParams struct{}

func (noParams) decode(string, []byte) (noParams, *jsonrpc.Error) { return noParams{}, nil }

// namedParams are the params of a request naming what it runs
// (tools/call, prompts/get): name, arguments and _meta.
type namedParams struct {
	name string
	args []byte // nil when absent; JSON null stands for absent too
	meta []byte // _meta, an object with a valid progressToken if any; nil when absent
}

func (p namedParams) decode(method string, raw []byte) (namedParams, *jsonrpc.Error) {
	var name []byte
	var err *jsonrpc.Error
	if p.meta, err = readMembers(raw, []string{"name", "arguments"}, &name, &p.args); err != nil {
		return p, err
	}
	var ok bool
	p.name, ok = jsonrpc.Unquote(name)
	switch {
	case !ok:
		return p, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: "+method+" needs name, a string")
	case p.args != nil && !jsonrpc.IsObject(p.args) && string(p.args) != "null":
		// null is "no arguments" to some clients: the catalog defaults it.
		return p, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: arguments must be an object")
	}
	return p, nil
}

// readMembers reads the members of raw named in names into the places of
// vals, in the same order (the last one of a repeated name; nil when
// absent), and checks _meta as it comes (checkMeta): it returns _meta, or
// the error to answer with.
func readMembers(raw []byte, names []string, vals ...*[]byte) (meta []byte, err *jsonrpc.Error) {
	for k, v := range jsonrpc.Members(raw) {
		if jsonrpc.KeyIs(k, "_meta") {
			if err := checkMeta(v); err != nil {
				return nil, err
			}
			meta = v
			continue
		}
		for i, name := range names {
			if jsonrpc.KeyIs(k, name) {
				*vals[i] = v
				break
			}
		}
	}
	return meta, nil
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
