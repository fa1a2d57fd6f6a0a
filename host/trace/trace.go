// Package trace checks the W3C trace context (https://www.w3.org/TR/trace-context/)
// that a client may send in the _meta of an MCP request, so that the host
// can carry it to the provider that serves the call and name it in its own
// logs: an OpenTelemetry collector then stitches the client's span, the
// host's log lines and the plugin's (or wrapped server's) spans together.
//
// A traceparent has four fields separated by "-", all lowercase hex:
//
//	00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
//	version trace-id (32)                parent-id (16) flags
//
// The trace id and the parent id must not be all zeros, and version ff is
// invalid. A version above 00 may carry more fields after the flags (the
// specification's forward compatibility); version 00 must not. A
// tracestate is passed on only beside a valid traceparent, only when it is
// short (MaxStateLen) and printable ASCII: this package does not parse its
// members (the host never reads them), it only keeps a client from
// smuggling something else through.
package trace

import (
	"errors"
	"fmt"
)

// MaxStateLen bounds a tracestate, in bytes: 32 list members as the
// specification allows, each at most 256 bytes, would be more, but the
// specification asks vendors to keep it under 512 and lets a receiver drop
// what is longer.
const MaxStateLen = 512

// Context is a checked trace context.
type Context struct {
	// Parent is the traceparent, as received.
	Parent string
	// State is the tracestate; "" when none came or it was dropped.
	State string
}

// ErrInvalid is wrapped by Parse's errors.
var ErrInvalid = errors.New("invalid trace context")

// Parse checks a traceparent and the tracestate beside it. An invalid
// traceparent is an error wrapping ErrInvalid that says what is wrong (the
// caller drops the context). An invalid tracestate beside a valid
// traceparent is dropped alone, and reported as a non-nil stateErr.
func Parse(parent, state string) (c Context, stateErr, err error) {
	if err := checkParent(parent); err != nil {
		return Context{}, nil, fmt.Errorf("%w: traceparent %.80q: %v", ErrInvalid, parent, err)
	}
	c.Parent = parent
	if state == "" {
		return c, nil, nil
	}
	if err := checkState(state); err != nil {
		return c, fmt.Errorf("%w: tracestate dropped: %v", ErrInvalid, err), nil
	}
	c.State = state
	return c, nil, nil
}

// TraceID returns the trace id of c's traceparent (32 hex digits), or ""
// for the zero Context.
func (c Context) TraceID() string {
	if len(c.Parent) < 35 {
		return ""
	}
	return c.Parent[3:35]
}

// checkParent checks the traceparent's shape.
func checkParent(p string) error {
	const v00Len = 2 + 1 + 32 + 1 + 16 + 1 + 2
	if len(p) < v00Len {
		return fmt.Errorf("%d bytes, want %d", len(p), v00Len)
	}
	if p[2] != '-' || p[35] != '-' || p[52] != '-' {
		return errors.New(`want four fields separated by "-"`)
	}
	version, traceID, parentID, flags := p[0:2], p[3:35], p[36:52], p[53:55]
	for _, f := range []struct{ name, v string }{{"version", version}, {"trace-id", traceID}, {"parent-id", parentID}, {"flags", flags}} {
		if !lowerHex(f.v) {
			return fmt.Errorf("%s %q is not lowercase hex", f.name, f.v)
		}
	}
	switch {
	case version == "ff":
		return errors.New("version ff is invalid")
	case allZeros(traceID):
		return errors.New("trace-id is all zeros")
	case allZeros(parentID):
		return errors.New("parent-id is all zeros")
	case len(p) > v00Len && (version == "00" || p[v00Len] != '-'):
		return errors.New("unexpected data after the flags")
	case len(p) > MaxStateLen:
		return fmt.Errorf("longer than %d bytes", MaxStateLen)
	}
	return nil
}

// checkState checks that s is short printable ASCII, the alphabet of a
// tracestate's keys, values and separators.
func checkState(s string) error {
	if len(s) > MaxStateLen {
		return fmt.Errorf("%d bytes, more than %d", len(s), MaxStateLen)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return fmt.Errorf("byte %#x at %d is not printable ASCII", c, i)
		}
	}
	return nil
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func allZeros(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '0' {
			return false
		}
	}
	return true
}
