// Package stdio is the MCP stdio transport: newline-delimited JSON-RPC
// messages, one per line, read from the client's pipe and written to ours.
// It knows framing only, not the protocol: the server reads with Read and
// writes with Write.
//
// Reading never holds more than the limit of one message: a longer line is
// discarded as it streams past. Writing coalesces: messages that become
// ready while a write is in progress go out together in the next one, so a
// burst of responses costs one syscall, with no goroutine of its own.
package stdio

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"sync"

	"github.com/plughost/plughost/internal/jsonrpc"
)

// Transport is the newline-delimited transport of the MCP stdio binding: one
// message per line, no embedded newlines.
type Transport struct {
	r     *bufio.Reader
	limit int
	long  []byte // accumulates a line longer than r's buffer

	out io.Writer
	w   coalescer
}

// New returns the transport reading messages from in and writing them
// to out. A line longer than limit bytes is skipped as it streams past,
// never held in memory whole, and Read reports it with an error wrapping
// jsonrpc.ErrTooLarge.
func New(in io.Reader, out io.Writer, limit int) *Transport {
	size := 64 << 10
	if limit < size {
		size = max(limit, 16)
	}
	t := &Transport{
		r:     bufio.NewReaderSize(in, size),
		limit: limit,
		out:   out,
	}
	t.w.cond.L = &t.w.mu
	return t
}

// Read returns the next non-blank line without its line ending. A line over
// the limit is discarded as it streams past, never held in memory whole.
func (t *Transport) Read() ([]byte, error) {
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

func (t *Transport) readLine() ([]byte, error) {
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
func (t *Transport) trim(line []byte) ([]byte, error) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	if len(line) > t.limit {
		return nil, t.tooLarge()
	}
	return line, nil
}

// discard skips the rest of the current line.
func (t *Transport) discard() error {
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

func (t *Transport) tooLarge() error {
	return fmt.Errorf("%w: a line exceeds the limit of %d bytes", jsonrpc.ErrTooLarge, t.limit)
}

// Write writes msg and a newline. It may return before msg is written,
// when another Write is in progress: that one writes msg (see coalescer).
func (t *Transport) Write(msg []byte) error { return t.w.write(t.out, msg, '\n') }

// Flushed reports whether every message handed to Write has been written
// (no write in progress, none waiting for one). Tests that await a quiet
// session check it: a Write that returned may not have reached the writer
// yet.
func (t *Transport) Flushed() bool {
	t.w.mu.Lock()
	defer t.w.mu.Unlock()
	return !t.w.writing && len(t.w.next) == 0
}

// A coalescer writes messages to an io.Writer so that those ready together
// go out in one write (one syscall on a pipe), with no goroutine of its
// own: a writer that finds a write in progress appends its message to the
// next batch and returns; the writer in progress writes that batch when
// its own write returns. Under load, responses finishing together cost one
// syscall; alone, a message is written at once by its own goroutine.
//
// The next batch holds at most maxBatch bytes (beyond one message): a
// writer that would grow it further waits for the write in progress, so a
// client that stops reading holds the writers back instead of making the
// batch grow without bound.
type coalescer struct {
	mu      sync.Mutex
	cond    sync.Cond // signalled when a batch is taken or the writing ends
	next    []byte    // the messages waiting for the write in progress
	spare   []byte    // the buffer of the previous batch, reused
	writing bool      // a writer is in w.Write
	err     error     // the first write error; every later write returns it
}

// maxBatch bounds the bytes waiting for the write in progress.
const maxBatch = 1 << 20

// write writes msg followed by end. It returns the first write error, which
// may be that of an earlier batch: a message handed to a batch whose write
// failed is lost with the connection.
func (c *coalescer) write(w io.Writer, msg []byte, end byte) error {
	c.mu.Lock()
	for c.writing && len(c.next) > 0 && len(c.next)+len(msg) > maxBatch && c.err == nil {
		c.cond.Wait()
	}
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return err
	}
	c.next = append(c.next, msg...)
	c.next = append(c.next, end)
	if c.writing {
		c.mu.Unlock()
		return nil // the writer in progress takes it
	}
	c.writing = true
	for len(c.next) > 0 && c.err == nil {
		batch := c.next
		c.next = c.spare[:0]
		c.cond.Broadcast()
		c.mu.Unlock()
		_, err := w.Write(batch)
		c.mu.Lock()
		if cap(batch) <= maxBatch {
			c.spare = batch[:0]
		} else {
			c.spare = nil // do not pin the memory of one large batch
		}
		if err != nil {
			c.err = err
		}
	}
	c.writing = false
	c.cond.Broadcast()
	err := c.err
	c.mu.Unlock()
	return err
}
