package pluginproto

import (
	"fmt"
	"strings"
)

// Level is the severity of a log message to the client (Request.Log): one
// of MCP's logging levels, which are RFC 5424's severities. Levels are
// ordered, LevelDebug the least severe; the client sets the least severe
// level it wants (logging/setLevel), and the host drops the rest.
//
// Level is an integer, so that only its constants can be written where a
// Level is expected: req.Log("warn", …) does not compile. A level read
// from text (a configuration file, say) goes through ParseLevel, which
// refuses a name MCP does not know.
type Level uint8

// The MCP logging levels, least severe first. String returns MCP's name
// for each ("debug", …, "emergency"), which is what the client receives.
const (
	LevelDebug     Level = iota // debug: detailed information for debugging
	LevelInfo                   // info: normal operation
	LevelNotice                 // notice: normal but significant
	LevelWarning                // warning: something may be wrong (MCP's name is "warning", not "warn")
	LevelError                  // error: an operation failed
	LevelCritical               // critical: a component failed
	LevelAlert                  // alert: action must be taken now
	LevelEmergency              // emergency: the system is unusable
)

// levelNames are MCP's names of the levels, by Level.
var levelNames = [...]string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// levelAliases are names of other logging systems that MCP spells
// otherwise, for ParseLevel's error to suggest the MCP name.
var levelAliases = map[string]Level{
	"warn": LevelWarning, "err": LevelError, "crit": LevelCritical,
	"fatal": LevelCritical, "emerg": LevelEmergency, "trace": LevelDebug,
}

// String returns MCP's name of the level. A Level above LevelEmergency
// (only a conversion, Level(n), makes one) is "emergency": Request.Log
// sends it so, the most severe level there is, rather than failing.
func (l Level) String() string {
	return levelNames[min(int(l), len(levelNames)-1)]
}

// ParseLevel returns the Level MCP names s (debug, info, notice, warning,
// error, critical, alert or emergency; case-insensitive). Any other name is
// an error, never a panic; for a name of another logging system that MCP
// spells otherwise ("warn", "err", "crit", "fatal", "emerg", "trace") the
// error says which MCP name to use: ParseLevel does not guess.
func ParseLevel(s string) (Level, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	for i, n := range levelNames {
		if n == name {
			return Level(i), nil
		}
	}
	if l, ok := levelAliases[name]; ok {
		return 0, fmt.Errorf("pluginproto: unknown log level %q: MCP calls it %q", s, l)
	}
	return 0, fmt.Errorf("pluginproto: unknown log level %q; want one of %s", s, strings.Join(levelNames[:], ", "))
}

// MarshalText returns the level's MCP name, so that a Level field reads
// and writes as text (JSON, TOML, flags).
func (l Level) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText sets l to the level MCP names text, as ParseLevel does; an
// unknown name is an error and leaves l as it was.
func (l *Level) UnmarshalText(text []byte) error {
	v, err := ParseLevel(string(text))
	if err != nil {
		return err
	}
	*l = v
	return nil
}
