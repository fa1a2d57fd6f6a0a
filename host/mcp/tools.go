package mcp

import (
	"encoding/json"
	"errors"

	"github.com/plughost/plughost/host/mcp/wire"
	"github.com/plughost/plughost/host/tool"
)

// The lists: tools/list, resources/list, resources/templates/list and
// prompts/list page through the catalog (the cursor is the catalog's) and
// are answered inline, spliced as the catalog holds them.

// decodeCursor reads the cursor of a list request ("" when absent).
func decodeCursor(params []byte) (cursor string, err *wire.Error) {
	raw := wire.Member(params, "cursor")
	if raw == nil {
		return "", nil
	}
	c, ok := wire.Unquote(raw)
	if !ok {
		return "", wire.NewError(wire.CodeInvalidParams, "invalid params: cursor must be a string")
	}
	return c, nil
}

// listTools answers one page of the catalog's tools.
func (s *Session) listTools(in incoming, cursor string) func() {
	tools, next, err := s.srv.catalog.ListTools(cursor)
	s.answerList(in, "tools/list", "tools", tools, next, err)
	return nil
}

func (s *Session) listResources(in incoming, cursor string) func() {
	resources, next, err := s.srv.catalog.ListResources(cursor)
	s.answerList(in, "resources/list", "resources", resources, next, err)
	return nil
}

func (s *Session) listResourceTemplates(in incoming, cursor string) func() {
	templates, next, err := s.srv.catalog.ListResourceTemplates(cursor)
	s.answerList(in, "resources/templates/list", "resourceTemplates", templates, next, err)
	return nil
}

func (s *Session) listPrompts(in incoming, cursor string) func() {
	prompts, next, err := s.srv.catalog.ListPrompts(cursor)
	s.answerList(in, "prompts/list", "prompts", prompts, next, err)
	return nil
}

// answerList answers a list request with one page: the items under
// member, and nextCursor when there is a next page. An unknown cursor is
// -32602; any other failure -32603. An item not framed as a JSON object is
// dropped with an error log.
func (s *Session) answerList(in incoming, method, member string, items []json.RawMessage, next string, err error) {
	switch {
	case errors.Is(err, tool.ErrInvalidCursor):
		s.respondError(in.rp, in.msg.ID, wire.NewError(wire.CodeInvalidParams, "invalid params: "+err.Error()))
		return
	case err != nil:
		s.srv.log.Error(method+" failed", "error", err)
		s.respondError(in.rp, in.msg.ID, wire.NewError(wire.CodeInternalError, "internal error: "+method+": "+err.Error()))
		return
	}
	// The response is built in one buffer of the right size: a page of a
	// thousand tools is a few hundred KiB, too big for the pool.
	size := len(in.msg.ID) + len(next) + len(member) + 64
	for _, t := range items {
		size += len(t) + 1
	}
	var bp *[]byte
	var b []byte
	if size <= wire.MaxPooled {
		bp = wire.GetBuf()
		b = *bp
	} else {
		b = make([]byte, 0, size)
	}
	b = wire.AppendResultHead(b, in.msg.ID)
	b = append(b, `{"`...)
	b = append(b, member...)
	b = append(b, `":[`...)
	n := 0
	for _, t := range items {
		mark := len(b)
		if n > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = wire.AppendObject(b, t); !ok {
			b = b[:mark]
			s.srv.log.Error(method+": dropped an item that is not a JSON object", "item", string(t))
			continue
		}
		n++
	}
	b = append(b, ']')
	if next != "" {
		b = append(b, `,"nextCursor":`...)
		b = wire.AppendString(b, next)
	}
	b = append(b, "}}"...)
	s.respond(in.rp, b)
	if bp != nil {
		*bp = b
		wire.PutBuf(bp)
	}
}
