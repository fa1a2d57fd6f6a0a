package mcp

import (
	"errors"

	"github.com/plughost/plughost/host/mcp/wire"
	"github.com/plughost/plughost/host/tool"
)

func decodeListTools(params []byte) (cursor string, err *wire.Error) {
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

// listTools answers one page of the catalog's tools, spliced as they are.
func (s *Session) listTools(in incoming, cursor string) func() {
	tools, next, err := s.srv.catalog.ListTools(cursor)
	switch {
	case errors.Is(err, tool.ErrInvalidCursor):
		s.respondError(in.rp, in.msg.ID, wire.NewError(wire.CodeInvalidParams, "invalid params: "+err.Error()))
		return nil
	case err != nil:
		s.srv.log.Error("tools/list failed", "error", err)
		s.respondError(in.rp, in.msg.ID, wire.NewError(wire.CodeInternalError, "internal error: tools/list: "+err.Error()))
		return nil
	}
	// The response is built in one buffer of the right size: a page of a
	// thousand tools is a few hundred KiB, too big for the pool.
	size := len(in.msg.ID) + len(next) + 64
	for _, t := range tools {
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
	b = append(b, `{"tools":[`...)
	n := 0
	for _, t := range tools {
		mark := len(b)
		if n > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = wire.AppendObject(b, t); !ok {
			b = b[:mark]
			s.srv.log.Error("tools/list: dropped a tool that is not a JSON object", "tool", string(t))
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
	return nil
}
