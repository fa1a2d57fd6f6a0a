package mcp

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

func (s *Session) setLevel(in incoming, p levelParams) func() {
	s.level.Store(int32(p.level))
	s.respondResult(in.rp, in.msg.ID, []byte("{}"))
	return nil
}
