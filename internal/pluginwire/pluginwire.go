// Package pluginwire holds the rules both ends of the plugin contract apply
// to its messages, so that a plugin's in-process helpers (pluginproto's
// Plugin.CallTool, ReadResource, ...) answer exactly as the host's client
// (host/pluginclient) does: which JSON is an object, how large a request a
// plugin accepts, what input requests a plugin may send, and the errors
// both return for the same failure.
//
// It knows the generated messages (internal/pluginpb) and nothing of either
// end's types; pluginproto and host/pluginclient re-export the errors under
// their own names (the same values, so errors.Is matches across them).
package pluginwire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// The errors both ends return for the same failure. pluginproto and
// host/pluginclient document them under their own names.
var (
	ErrUnknownTool      = errors.New("unknown tool")
	ErrPluginClosed     = errors.New("the plugin closed the call (it died or dropped the connection)")
	ErrPluginFailed     = errors.New("the plugin failed running the call")
	ErrNoResult         = errors.New("plugin ended the call without a result")
	ErrInvalidResult    = errors.New("plugin sent an invalid result")
	ErrUnknownResource  = errors.New("unknown resource")
	ErrUnknownPrompt    = errors.New("unknown prompt")
	ErrUnknownReference = errors.New("unknown prompt or resource template")
	ErrInvalidArguments = errors.New("invalid arguments")
)

// EmptyObject is the JSON a missing object stands for.
var EmptyObject = json.RawMessage("{}")

// IsObject reports whether b is one valid JSON object (leading blanks
// allowed) in valid UTF-8.
func IsObject(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '{' && json.Valid(b) && utf8.Valid(b)
}

// Capabilities is what the host sends as the client's capabilities: {}
// when it has none.
func Capabilities(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return EmptyObject
	}
	return b
}

// MaxPluginMessage is the largest message a plugin is sure to accept:
// gRPC's default receive limit, which go-plugin's servers keep. (The host
// accepts anything up to 2 GiB from a plugin: go-plugin dials with that
// limit, for tool results and every other answer alike.)
const MaxPluginMessage = 4 << 20

// CheckSize refuses a request the plugin would refuse: one over the 4 MiB
// a gRPC server accepts by default. Only requests carrying the client's
// input or its capabilities can get there.
func CheckSize(what string, m proto.Message) error {
	if n := proto.Size(m); n > MaxPluginMessage {
		return fmt.Errorf("%s: the request takes %d bytes with the client's input and capabilities, over the %d a plugin accepts", what, n, MaxPluginMessage)
	}
	return nil
}

// Result checks a plugin's answer to a request: present, and a JSON
// object. what names the request ("read resource \"x\"").
func Result(what string, result []byte) (json.RawMessage, error) {
	switch {
	case result == nil:
		return nil, fmt.Errorf("%s: %w", what, ErrNoResult)
	case !IsObject(result):
		return nil, fmt.Errorf("%s: %w: not a JSON object: %.80q", what, ErrInvalidResult, result)
	}
	return result, nil
}

// PluginFailed is the error of a call the plugin failed running (a
// CallError INTERNAL, or an in-process handler's panic): msg is the
// plugin's message.
func PluginFailed(tool, msg string) error {
	return fmt.Errorf("call %q: %w: %s", tool, ErrPluginFailed, msg)
}

// RPCError wraps an RPC failure; a broken connection or stream becomes
// ErrPluginClosed. exited is the plugin process's lifetime (nil when
// unknown).
func RPCError(ctx, exited context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", what, ctx.Err())
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.Canceled:
		if exited != nil && exited.Err() != nil {
			return fmt.Errorf("%s: %w: the plugin process has exited", what, ErrPluginClosed)
		}
		return fmt.Errorf("%s: %w: %v", what, ErrPluginClosed, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}
