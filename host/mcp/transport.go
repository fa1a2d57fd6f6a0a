package mcp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
)

// ErrMessageTooLarge is returned (wrapped) by [Transport.Read] for an
// incoming message over the size limit. The transport has skipped the
// message and stays usable; the server answers with a JSON-RPC error.
var ErrMessageTooLarge = errors.New("message too large")

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

// stdio is the newline-delimited transport of the MCP stdio binding: one
// message per line, no embedded newlines.
type stdio struct {
	r     *bufio.Reader
	limit int
	long  []byte // accumulates a line longer than r's buffer

	mu sync.Mutex
	w  *bufio.Writer
}

var _ Transport = (*stdio)(nil)

func newStdio(in io.Reader, out io.Writer, limit int) *stdio {
	size := 64 << 10
	if limit < size {
		size = max(limit, 16)
	}
	return &stdio{
		r:     bufio.NewReaderSize(in, size),
		limit: limit,
		w:     bufio.NewWriterSize(out, 64<<10),
	}
}

// Read returns the next non-blank line without its line ending. A line over
// the limit is discarded as it streams past, never held in memory whole.
func (t *stdio) Read() ([]byte, error) {
	for {
		line, err := t.readLine()
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(line)) > 0 {
			return line, nil
		}
	}
}

func (t *stdio) readLine() ([]byte, error) {
	if cap(t.long) > 1<<20 {
		t.long = nil // do not pin the memory of one long line
	}
	line, err := t.r.ReadSlice('\n')
	if err == nil || (err == io.EOF && len(line) > 0) {
		return t.trim(line)
	}
	if err != bufio.ErrBufferFull {
		return nil, err
	}
	// A line longer than the buffer: gather it up to the limit.
	t.long = append(t.long[:0], line...)
	for {
		if len(t.long) > t.limit+2 { // +2: a line ending does not count
			return nil, t.discard()
		}
		line, err = t.r.ReadSlice('\n')
		t.long = append(t.long, line...)
		switch {
		case err == nil || (err == io.EOF && len(t.long) > 0):
			return t.trim(t.long)
		case err != bufio.ErrBufferFull:
			return nil, err
		}
	}
}

// trim strips the line ending and enforces the limit.
func (t *stdio) trim(line []byte) ([]byte, error) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	if len(line) > t.limit {
		return nil, t.tooLarge()
	}
	return line, nil
}

// discard skips the rest of the current line.
func (t *stdio) discard() error {
	t.long = t.long[:0]
	for {
		_, err := t.r.ReadSlice('\n')
		switch err {
		case nil, io.EOF:
			return t.tooLarge()
		case bufio.ErrBufferFull:
		default:
			return err
		}
	}
}

func (t *stdio) tooLarge() error {
	return fmt.Errorf("%w: a line exceeds the limit of %d bytes", ErrMessageTooLarge, t.limit)
}

// Write writes msg and a newline, then flushes.
func (t *stdio) Write(msg []byte) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.w.Write(msg)
	t.w.WriteByte('\n')
	return t.w.Flush() // reports any earlier write error too
}
