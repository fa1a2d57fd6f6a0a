package device

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Type is a frame's type byte.
type Type byte

// The frame types of the protocol.
const (
	TypeAuth   Type = 0x01 // AUTH: TOKEN##voiceid:…##lang:…##format:pcm
	TypeAudio  Type = 0x02 // AUDIO: raw audio (not supported by plughost)
	TypeEnd    Type = 0x03 // END: the task is finished
	TypeText   Type = 0x04 // TEXT: a user's text, or the answer to it
	TypeStatus Type = 0x05 // STATUS: ##PING, ##INFO:…, ##ERROR:…, ##DISCONNECT
	TypeMCP    Type = 0x06 // MCP: the register / call / result JSON
	TypeSpeak  Type = 0x07 // SPEAK: text to speak (not supported by plughost)
)

// String names the type, e.g. "TEXT", or "0x09" for an unknown one.
func (t Type) String() string {
	switch t {
	case TypeAuth:
		return "AUTH"
	case TypeAudio:
		return "AUDIO"
	case TypeEnd:
		return "END"
	case TypeText:
		return "TEXT"
	case TypeStatus:
		return "STATUS"
	case TypeMCP:
		return "MCP"
	case TypeSpeak:
		return "SPEAK"
	}
	return fmt.Sprintf("0x%02x", byte(t))
}

// Known reports whether t is one of the protocol's seven types.
func (t Type) Known() bool { return t >= TypeAuth && t <= TypeSpeak }

// SystemTask is the task id reserved for system messages.
const SystemTask = "00000000"

// Frame markers and sizes.
const (
	startMarker = "##START"
	endMarker   = "##END"
	taskLen     = 8
	seqLen      = 4
	// headerLen is ##START, the type byte, the task id and a bare sequence.
	headerLen = len(startMarker) + 1 + taskLen + seqLen
)

// DefaultMaxFrame is the default limit on a frame's payload: 1 MiB.
const DefaultMaxFrame = 1 << 20

// A Frame is one message of the protocol:
//
//	##START <type byte> <task id: 8 bytes> <sequence: 4 ASCII digits> <payload> ##END
//
// There is no length field and no escaping: a payload ends at the first
// "##END", so it can never contain one.
type Frame struct {
	// Type is the type byte.
	Type Type
	// Task is the task id, exactly 8 bytes; SystemTask for system messages.
	Task string
	// Seq is the sequence number within the task, 0 to 9999.
	Seq int
	// Payload is everything between the sequence number and "##END".
	Payload []byte
}

// String shows the frame as Go-quoted bytes, for logs and test failures.
func (f Frame) String() string {
	b, err := AppendFrame(nil, f)
	if err != nil {
		return fmt.Sprintf("invalid frame (%v)", err)
	}
	return strconv.Quote(string(b))
}

// Errors of the framing.
var (
	// ErrFrameTooLarge: a frame's payload passed the decoder's limit. The
	// stream cannot be resynchronised cheaply, so the decoder stops there.
	ErrFrameTooLarge = errors.New("frame too large")
	// ErrMalformedFrame: the bytes after "##START" are not a frame header
	// (a 4-digit sequence number, bare or in brackets). The decoder skips
	// that "##START" and carries on with the next one.
	ErrMalformedFrame = errors.New("malformed frame")
	// ErrPayloadHasEnd: a payload to encode contains "##END".
	ErrPayloadHasEnd = errors.New(`payload contains "##END"`)
)

// AppendFrame appends the encoding of f to dst, with a bare sequence
// number. It fails when f.Task is not 8 bytes, f.Seq is outside 0–9999 or
// the payload contains "##END".
func AppendFrame(dst []byte, f Frame) ([]byte, error) {
	if len(f.Task) != taskLen {
		return dst, fmt.Errorf("task id %q: want exactly %d bytes", f.Task, taskLen)
	}
	if f.Seq < 0 || f.Seq > 9999 {
		return dst, fmt.Errorf("sequence number %d: want 0 to 9999", f.Seq)
	}
	if bytes.Contains(f.Payload, []byte(endMarker)) {
		return dst, ErrPayloadHasEnd
	}
	dst = append(dst, startMarker...)
	dst = append(dst, byte(f.Type))
	dst = append(dst, f.Task...)
	dst = append(dst, byte('0'+f.Seq/1000), byte('0'+f.Seq/100%10), byte('0'+f.Seq/10%10), byte('0'+f.Seq%10))
	dst = append(dst, f.Payload...)
	return append(dst, endMarker...), nil
}

// A Decoder reads frames from a byte stream incrementally: a frame may
// arrive split over many reads, or several in one; bytes before "##START"
// are skipped; the sequence number may be bare ("0000") or bracketed
// ("[0000]"). It never holds more than about MaxFrame plus one read's worth
// of bytes, however long the garbage or the frame.
type Decoder struct {
	r   io.Reader
	max int

	buf        []byte
	start, end int   // unconsumed bytes are buf[start:end]
	scanned    int   // for the frame at start: bytes of payload already searched for ##END
	partial    bool  // buf[start:end] begins with a frame whose end has not arrived
	err        error // sticky: a read error or ErrFrameTooLarge
}

// readSize is how much the decoder asks of the reader at a time.
const readSize = 4096

// NewDecoder returns a decoder reading from r that refuses payloads longer
// than maxPayload bytes (DefaultMaxFrame when maxPayload <= 0).
func NewDecoder(r io.Reader, maxPayload int) *Decoder {
	if maxPayload <= 0 {
		maxPayload = DefaultMaxFrame
	}
	return &Decoder{r: r, max: maxPayload}
}

// SetMaxPayload changes the limit for the frames Next has not returned
// yet (DefaultMaxFrame when n <= 0). The device server reads a device's
// first frames under a small limit and raises it once the device is
// admitted.
func (d *Decoder) SetMaxPayload(n int) {
	if n <= 0 {
		n = DefaultMaxFrame
	}
	d.max = n
}

// Partial reports whether the decoder holds the beginning of a frame
// ("##START" and more) whose "##END" has not arrived: the reader is in the
// middle of a frame rather than between two.
func (d *Decoder) Partial() bool { return d.partial }

// Next returns the next frame. Its Payload is a fresh copy.
//
// Errors: a malformed header gives an error wrapping ErrMalformedFrame,
// and the next call goes on after it; a payload over the limit gives an
// error wrapping ErrFrameTooLarge, and so does every later call; at the end
// of the stream Next returns io.EOF, or io.ErrUnexpectedEOF when it ends
// inside a frame; any other read error is returned as is, and again by
// every later call.
func (d *Decoder) Next() (Frame, error) {
	for {
		f, ok, err := d.parse()
		if err != nil || ok {
			return f, err
		}
		if d.err != nil {
			return Frame{}, d.err
		}
		if err := d.fill(); err != nil {
			if err == io.EOF && d.inFrame() {
				err = io.ErrUnexpectedEOF
			}
			d.err = err
			return Frame{}, err
		}
	}
}

// inFrame reports whether the unconsumed bytes hold the start of a frame
// (as opposed to nothing, or garbage that could not become one).
func (d *Decoder) inFrame() bool {
	rest := d.buf[d.start:d.end]
	if i := bytes.Index(rest, []byte(startMarker)); i >= 0 {
		return true
	}
	// A partial "##START" at the very end.
	for n := min(len(startMarker)-1, len(rest)); n > 0; n-- {
		if bytes.HasPrefix([]byte(startMarker), rest[len(rest)-n:]) {
			return true
		}
	}
	return false
}

// parse tries to take one frame from the buffer. ok is false when more
// bytes are needed.
func (d *Decoder) parse() (f Frame, ok bool, err error) {
	d.partial = false
	rest := d.buf[d.start:d.end]
	i := bytes.Index(rest, []byte(startMarker))
	if i < 0 {
		// Keep only what could be the beginning of "##START".
		keep := min(len(rest), len(startMarker)-1)
		d.start = d.end - keep
		d.scanned = 0
		return f, false, nil
	}
	if i > 0 {
		d.start += i
		d.scanned = 0
		rest = rest[i:]
	}
	if len(rest) < headerLen {
		d.partial = true
		return f, false, nil
	}
	h := rest[len(startMarker):]
	f.Type = Type(h[0])
	f.Task = string(h[1 : 1+taskLen])
	seq := h[1+taskLen:]
	bracketed := seq[0] == '['
	if bracketed {
		if len(seq) < seqLen+2 {
			d.partial = true
			return f, false, nil
		}
		if seq[seqLen+1] != ']' {
			return d.malformed(seq[:seqLen+2])
		}
		seq = seq[1:]
	}
	n := 0
	for _, c := range seq[:seqLen] {
		if c < '0' || c > '9' {
			return d.malformed(seq[:seqLen])
		}
		n = n*10 + int(c-'0')
	}
	f.Seq = n
	payloadAt := headerLen
	if bracketed {
		payloadAt += 2
	}
	payload := rest[payloadAt:]
	from := max(d.scanned-len(endMarker)+1, 0)
	j := bytes.Index(payload[from:], []byte(endMarker))
	if j < 0 {
		d.scanned = len(payload)
		// The last 4 bytes could begin "##END"; everything before them is
		// certainly payload.
		if len(payload)-(len(endMarker)-1) > d.max {
			d.err = fmt.Errorf("%w: payload longer than %d bytes", ErrFrameTooLarge, d.max)
			return Frame{}, false, d.err
		}
		d.partial = true
		return Frame{}, false, nil
	}
	j += from
	if j > d.max {
		d.err = fmt.Errorf("%w: payload longer than %d bytes", ErrFrameTooLarge, d.max)
		return Frame{}, false, d.err
	}
	f.Payload = bytes.Clone(payload[:j])
	if f.Payload == nil {
		f.Payload = []byte{}
	}
	d.start += payloadAt + j + len(endMarker)
	d.scanned = 0
	return f, true, nil
}

// malformed skips the "##START" at d.start and reports the bad header.
func (d *Decoder) malformed(seq []byte) (Frame, bool, error) {
	d.start += len(startMarker)
	d.scanned = 0
	return Frame{}, false, fmt.Errorf("%w: sequence number %q is not 4 digits", ErrMalformedFrame, seq)
}

// fill reads more bytes, compacting or growing the buffer as needed.
func (d *Decoder) fill() error {
	if d.start > 0 && (d.start == d.end || d.end+readSize > cap(d.buf)) {
		n := copy(d.buf[:cap(d.buf)], d.buf[d.start:d.end])
		d.start, d.end = 0, n
	}
	if d.end+readSize > cap(d.buf) {
		// A frame never needs more than its header, the limit, "##END" and
		// one read: parse refuses it before that.
		limit := headerLen + 2 + d.max + len(endMarker) + readSize
		nb := make([]byte, max(min(2*cap(d.buf), limit), d.end-d.start+readSize))
		copy(nb, d.buf[d.start:d.end])
		d.end -= d.start
		d.start = 0
		d.buf = nb
	}
	d.buf = d.buf[:cap(d.buf)]
	for range 100 {
		n, err := d.r.Read(d.buf[d.end : d.end+readSize])
		d.end += n
		if n > 0 {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return io.ErrNoProgress
}
