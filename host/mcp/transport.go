package mcp

import "github.com/plughost/plughost/internal/jsonrpc"

// ErrMessageTooLarge is returned (wrapped) by [Transport.Read] for an
// incoming message over the size limit. The transport has skipped the
// message and stays usable; the server answers with a JSON-RPC error.
var ErrMessageTooLarge = jsonrpc.ErrTooLarge

// A Sink receives outgoing JSON-RPC messages, one complete message per call.
// Write must be safe for concurrent use, must not interleave messages and
// must not retain msg after it returns.
type Sink interface {
	Write(msg []byte) error
}

// A Transport carries JSON-RPC messages between one client and
// [Server.Serve]: incoming messages through Read, outgoing ones through
// Write (its [Sink]).
type Transport interface {
	// Read returns the next incoming message: one JSON value, a single
	// message or a batch. The bytes are valid until the next Read. Read
	// returns io.EOF when the client is gone, and an error wrapping
	// ErrMessageTooLarge (staying usable) for a message over its limit.
	// Read is called from one goroutine at a time.
	Read() ([]byte, error)
	Sink
}

// DefaultMaxMessageSize is the default limit of one incoming message (4 MiB).
const DefaultMaxMessageSize = 4 << 20
