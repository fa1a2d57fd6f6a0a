package tool

import (
	"encoding/json"
	"errors"
	"fmt"
)

// ErrUnknownTool is returned (wrapped) by CallTool when no provider offers the
// named tool. The protocol layer answers it with JSON-RPC error -32602.
var ErrUnknownTool = errors.New("unknown tool")

// ErrInvalidCursor is returned (wrapped) when a tools/list cursor was not
// issued by this host. The protocol layer answers it with -32602.
var ErrInvalidCursor = errors.New("invalid cursor")

// Why a call failed. The catalog and the providers return errors that wrap
// one of these (made with Errorf), so that the protocol layer, through
// Outcome, decides in one place what the client gets. An error wrapping
// one of them names its cause completely (the tool, the provider, what
// happened): the catalog hands it on as it is. Any other error from a
// provider is wrapped by the catalog with the tool's and the provider's
// names.
var (
	// ErrGone: the provider went away during the call (the plugin died,
	// the device disconnected) or no longer offers the tool.
	ErrGone = errors.New("provider gone")
	// ErrTimedOut: the call exceeded its time limit and was cancelled.
	ErrTimedOut = errors.New("call timed out")
	// ErrRefused: the provider did not accept the call (it is stopping, or
	// the call is over one of its limits).
	ErrRefused = errors.New("call refused")
	// ErrBadArguments: the arguments are not a JSON object or break the
	// tool's inputSchema. The message names every violation.
	ErrBadArguments = errors.New("invalid arguments")
	// ErrTooLarge: the call's arguments or result are over a size limit.
	ErrTooLarge = errors.New("too large")
	// ErrInternal: the provider failed while running the call (a plugin's
	// handler panicked). A call answers it as a tool error; a task fails.
	ErrInternal = errors.New("provider failed")
)

// Errorf returns an error that matches kind (errors.Is) and whose text is
// the formatted message alone, so that what the client reads is exactly
// the message. A %w verb in format wraps a cause as fmt.Errorf does; it
// matches too.
//
//	return nil, tool.Errorf(tool.ErrTimedOut, "tool %q did not finish within %v", name, d)
func Errorf(kind error, format string, args ...any) error {
	return &kindError{kind: kind, err: fmt.Errorf(format, args...)}
}

type kindError struct {
	kind error
	err  error
}

func (e *kindError) Error() string   { return e.err.Error() }
func (e *kindError) Unwrap() []error { return []error{e.kind, e.err} }

// kinds lists the sentinels an error may wrap to name its cause itself.
var kinds = []error{ErrGone, ErrTimedOut, ErrRefused, ErrBadArguments, ErrTooLarge, ErrInternal}

// Typed reports whether err wraps one of ErrGone, ErrTimedOut, ErrRefused,
// ErrBadArguments, ErrTooLarge or ErrInternal, and so names its cause itself, or is an
// *InputRequired (not a failure: it passes the catalog, which only names
// the provider in it) or a *CapabilityRequired.
func Typed(err error) bool {
	var ir *InputRequired
	var cr *CapabilityRequired
	if errors.As(err, &ir) || errors.As(err, &cr) {
		return true
	}
	for _, k := range kinds {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}

// RPCError is a JSON-RPC error object: its code and message.
type RPCError struct {
	Code    int
	Message string
}

// CodeInvalidParams is JSON-RPC's "invalid params" error code.
const CodeInvalidParams = -32602

// Outcome maps the error of a tools/call (Catalog.CallTool's) to what the
// client gets: exactly one of result, an MCP CallToolResult, and rpcErr is
// not nil. It is the one place where a failed call becomes a protocol
// error or a tool error:
//
//   - ErrUnknownTool, ErrInvalidCursor: JSON-RPC error -32602 with the
//     message "invalid params: " + err.Error() (a malformed request);
//   - everything else, ErrBadArguments included: an isError result whose
//     only text is err.Error(). Invalid arguments are a tool error, not a
//     protocol error, so that the model can correct itself (MCP SEP-1303);
//     the message names every violation.
//
// A cancelled call (the client's notifications/cancelled, a closed
// session) gets no response at all: the protocol layer checks that before
// calling Outcome, which maps a context error like any other. err must not
// be nil.
func Outcome(err error) (result json.RawMessage, rpcErr *RPCError) {
	if errors.Is(err, ErrUnknownTool) || errors.Is(err, ErrInvalidCursor) {
		return nil, &RPCError{Code: CodeInvalidParams, Message: "invalid params: " + err.Error()}
	}
	return ErrorResult(err.Error()), nil
}

// CapabilityRequired is a provider's answer when a call needs a client
// capability the client did not declare (sampling, say): the request
// cannot be served for this client at all. MCP 2026-07-28 answers it with
// error -32021 (MissingRequiredClientCapability) whose data names
// Capabilities; a session, whose revisions have no such error, gets an
// isError result carrying Message. It passes the catalog as it is (Typed).
type CapabilityRequired struct {
	// Capabilities is a JSON object in the shape of MCP ClientCapabilities
	// naming what is required, e.g. {"sampling":{}}.
	Capabilities json.RawMessage
	// Message says what the call needed and why.
	Message string
}

func (e *CapabilityRequired) Error() string { return e.Message }
