package mcp

import (
	"strconv"
	"strings"

	"github.com/plughost/plughost/internal/jsonrpc"
)

// levels are the MCP logging levels, least severe first.
var levels = [...]string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// defaultLevel is the threshold before any logging/setLevel: info and above.
const defaultLevel = 1

func levelIndex(name string) int {
	for i, l := range levels {
		if l == name {
			return i
		}
	}
	return -1
}

// levelParams are the params of logging/setLevel.
type levelParams struct {
	level int // an index into levels
}

func (p levelParams) decode(_ string, raw []byte) (levelParams, *jsonrpc.Error) {
	name, ok := jsonrpc.Unquote(jsonrpc.Member(raw, "level"))
	if p.level = levelIndex(name); ok && p.level >= 0 {
		return p, nil
	}
	m := "invalid params: level must be a string"
	if ok {
		m = "invalid params: unknown level " + strconv.Quote(name)
	}
	return p, jsonrpc.NewError(jsonrpc.CodeInvalidParams, m+"; want one of "+strings.Join(levels[:], ", "))
}

func (s *Session) setLevel(in incoming, p levelParams) func() {
	s.level.Store(int32(p.level))
	s.respondResult(in.rp, in.msg.ID, []byte("{}"))
	return nil
}
