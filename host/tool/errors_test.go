package tool

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestErrorf(t *testing.T) {
	t.Parallel()
	cause := errors.New("exit status 3")
	err := Errorf(ErrGone, "plugin %s exited: %w", "echo", cause)
	if got := err.Error(); got != "plugin echo exited: exit status 3" {
		t.Errorf("text = %q, want the message alone", got)
	}
	if !errors.Is(err, ErrGone) || !errors.Is(err, cause) || errors.Is(err, ErrTimedOut) {
		t.Errorf("errors.Is: want ErrGone and the cause only")
	}
	if !Typed(err) || !Typed(fmt.Errorf("wrapped: %w", err)) || Typed(cause) {
		t.Errorf("Typed: want true for the error and its wrappings, false for the cause")
	}
}

// Outcome keeps what clients got before it existed: -32602 for an unknown
// tool or cursor, an isError result with the error's text for the rest.
func TestOutcome(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		err    error
		result string // the isError text; "" when a JSON-RPC error
		rpc    *RPCError
	}{
		"unknown tool": {
			err: fmt.Errorf("%w: %q", ErrUnknownTool, "nope"),
			rpc: &RPCError{Code: -32602, Message: `invalid params: unknown tool: "nope"`},
		},
		"invalid cursor": {
			err: fmt.Errorf("%w: tools/list cursor %q was not issued by this server", ErrInvalidCursor, "x"),
			rpc: &RPCError{Code: -32602, Message: `invalid params: invalid cursor: tools/list cursor "x" was not issued by this server`},
		},
		"bad arguments": {
			err:    Errorf(ErrBadArguments, "invalid arguments for tool %q:\n- /a: missing required property\n- /b: must be string, got number", "t"),
			result: "invalid arguments for tool \"t\":\n- /a: missing required property\n- /b: must be string, got number",
		},
		"timed out":            {err: Errorf(ErrTimedOut, "tool %q of plugin p did not finish within its timeout of 1s and was cancelled", "t"), result: `tool "t" of plugin p did not finish within its timeout of 1s and was cancelled`},
		"gone":                 {err: Errorf(ErrGone, "plugin p exited: exit status 3"), result: "plugin p exited: exit status 3"},
		"refused":              {err: Errorf(ErrRefused, "plugin p was unloaded"), result: "plugin p was unloaded"},
		"too large":            {err: Errorf(ErrTooLarge, "result over 4 MiB"), result: "result over 4 MiB"},
		"untyped":              {err: errors.New(`tool "x" of provider "p": boom`), result: `tool "x" of provider "p": boom`},
		"cancelled":            {err: fmt.Errorf("plugin p: %w", context.Canceled), result: "plugin p: context canceled"},
		"wrapped unknown tool": {err: fmt.Errorf("catalog: %w", fmt.Errorf("%w: %q", ErrUnknownTool, "y")), rpc: &RPCError{Code: -32602, Message: `invalid params: catalog: unknown tool: "y"`}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res, rpcErr := Outcome(tc.err)
			if diff := cmp.Diff(tc.rpc, rpcErr); diff != "" {
				t.Errorf("JSON-RPC error (-want +got):\n%s", diff)
			}
			if tc.rpc != nil {
				if res != nil {
					t.Errorf("result %s beside a JSON-RPC error", res)
				}
				return
			}
			if diff := cmp.Diff(string(ErrorResult(tc.result)), string(res)); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}
