package mcp

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/plughost/plughost/internal/jsonrpc"
)

// What the long calls other than tools/call share: answering with the
// catalog's result or a JSON-RPC error.

// catalogRequests serves the long calls that ask the catalog on the
// client's behalf, as the caller: resources/read (resources.go),
// prompts/get (prompts.go) and completion/complete (complete.go).
type catalogRequests struct {
	calls  sessionCalls
	caller *Caller // the session's
	view   *view   // what the caller may see
}

func catalogRequestsOf(s *Session) catalogRequests {
	return catalogRequests{calls: callsOf(s), caller: &s.conn.Peer.Caller, view: &s.view}
}

// appendAnswer appends the response of a long call of method that ended
// with res or err. A result is spliced (one not framed as a JSON object is
// -32603); an error over the session's limit of calls waiting for the
// client (errInputLimit) is -32602 naming it; any other error becomes
// what fault says, or -32603 naming it when fault says nothing (fault may
// be nil).
func appendAnswer(b []byte, c *call, method string, res json.RawMessage, err error, fault func(error) *jsonrpc.Error) []byte {
	if err == nil {
		mark := len(b)
		b = jsonrpc.AppendResultHead(b, c.id)
		var ok bool
		if b, ok = jsonrpc.AppendObject(b, res); ok {
			if c.st != nil && !c.own {
				members := resultTypeComplete
				if _, read := c.op.(*readOp); read {
					members = readResultMembers
				}
				b = insertMembers(b, mark+len(jsonrpc.AppendResultHead(nil, c.id)), members)
			}
			return append(b, '}')
		}
		b = b[:mark]
		c.s.srv.log.Error("a provider returned an invalid result", "method", method, "result", string(res))
		err = fmt.Errorf("the provider returned an invalid result (not a JSON object)")
	}
	var e *jsonrpc.Error
	switch {
	case c.st != nil && missingCapability(err) != nil:
		e = missingCapability(err)
	case errors.Is(err, errInputLimit):
		e = invalidParams(err)
	case fault != nil:
		e = fault(err)
	}
	if e == nil {
		c.s.srv.log.Debug("request failed", "method", method, "error", err)
		e = jsonrpc.NewError(jsonrpc.CodeInternalError, "internal error: "+method+": "+err.Error())
	}
	return jsonrpc.AppendError(b, c.id, e)
}

// invalidParams is the -32602 error naming err.
func invalidParams(err error) *jsonrpc.Error {
	return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: "+err.Error())
}
