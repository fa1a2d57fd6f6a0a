package manager

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/time/rate"
)

// A plugin's own output: everything it writes to stdout after the go-plugin
// handshake line and everything it writes to stderr is logged under its
// provider name, line by line. A plugin built on go-plugin (every Go plugin
// of pluginproto) has its os.Stdout and os.Stderr replaced by go-plugin once
// it serves, and their writes reach the host over go-plugin's stdio stream
// (ClientConfig.SyncStdout and SyncStderr) rather than the process's pipes;
// both paths end here.
//
//   - A line that is an hclog JSON entry (go-plugin's own format: "@level",
//     "@message" and fields) is logged at its level, with its fields.
//   - A line starting with [TRACE], [DEBUG], [INFO], [WARN] or [ERROR] is
//     logged at that level.
//   - On stderr, a line starting "panic: " or "fatal error: " (a Go crash)
//     and every later line of that stream are logged at ERROR.
//   - Any other line is logged at INFO, with stream=stdout or stream=stderr.
//
// Bounds: a line longer than maxOutputLine bytes is cut there and logged
// with a marker saying how many bytes were cut; blank lines are skipped;
// the lines logged (those at or above the logger's level) are limited to
// outputBurst at once and outputRate per second after that, per process:
// the lines over the limit are dropped and counted, and the count is logged
// at WARN with the next line that passes (or when the process ends). The
// memory held is one line buffer per stream.

const (
	// maxOutputLine is the longest line logged whole.
	maxOutputLine = 4 << 10
	// outputRate and outputBurst limit the lines logged per process.
	outputRate  = 100
	outputBurst = 1000
)

// pluginOutput logs the output of one plugin process and keeps the excerpt
// of its stderr that load errors quote.
type pluginOutput struct {
	log     hclog.Logger // named after the plugin
	excerpt *excerpt     // the plugin's stderr, head and tail
	limit   *rate.Limiter
	dropped atomic.Int64 // lines dropped since the last report

	// The writers of go-plugin's stdio stream (a Go plugin's os.Stdout and
	// os.Stderr once it serves).
	syncStdout, syncStderr *lineWriter
}

// newPluginOutput returns the output of the plugin name, logged under
// log.Named(name).
func newPluginOutput(log hclog.Logger, name string) *pluginOutput {
	o := &pluginOutput{
		log:     pluginLogger{Logger: log}.Named(name),
		excerpt: &excerpt{},
		limit:   rate.NewLimiter(outputRate, outputBurst),
	}
	o.syncStdout = o.writer("stdout")
	o.syncStderr = o.writer("stderr")
	return o
}

// writer returns a writer that logs each line written to it as a line of
// the plugin's stream ("stdout" or "stderr"); the lines of stderr also go
// to the excerpt.
func (o *pluginOutput) writer(stream string) *lineWriter {
	s := &outStream{name: stream}
	return &lineWriter{emit: func(line []byte, cut int) { o.line(s, line, cut) }}
}

// outStream is the state of one stream between its lines.
type outStream struct {
	name    string
	inPanic bool // a Go crash began: the rest is logged at ERROR
}

// copyStdout reads the plugin's stdout until it ends: its first line (the
// go-plugin handshake) goes to handshake, the rest is logged.
func (o *pluginOutput) copyStdout(r io.Reader, handshake *handshakeReader) {
	defer handshake.finish(nil) // no line: go-plugin reads EOF
	s := &outStream{name: "stdout"}
	first := true
	w := &lineWriter{emit: func(line []byte, cut int) {
		if first {
			first = false
			handshake.finish(append(slices.Clip(line), '\n'))
			return
		}
		o.line(s, line, cut)
	}}
	copyLines(w, r)
}

// copyStderr reads the plugin's stderr until it ends and logs it.
func (o *pluginOutput) copyStderr(r io.Reader) {
	copyLines(o.writer("stderr"), r)
}

func copyLines(w *lineWriter, r io.Reader) {
	_, _ = io.Copy(w, bufio.NewReaderSize(r, maxOutputLine))
	w.Flush()
}

// finish logs what is left: a last line without a newline on go-plugin's
// stdio stream, and the lines dropped since the last report.
func (o *pluginOutput) finish() {
	o.syncStdout.Flush()
	o.syncStderr.Flush()
	o.reportDropped()
}

// line logs one line of a stream.
func (o *pluginOutput) line(s *outStream, line []byte, cut int) {
	if s.name == "stderr" {
		o.excerpt.add(line, cut)
	}
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	level, msg, args := s.parse(line, cut)
	if level < o.log.GetLevel() {
		return
	}
	if !o.limit.Allow() {
		o.dropped.Add(1)
		return
	}
	o.reportDropped()
	o.log.Log(level, msg, args...)
}

func (o *pluginOutput) reportDropped() {
	if n := o.dropped.Swap(0); n > 0 {
		o.log.Warn("lines of the plugin's output were dropped: it wrote faster than the limit",
			"dropped", n, "limit", fmt.Sprintf("%d lines, then %d a second", outputBurst, outputRate))
	}
}

// parse decides the level, message and fields of a line.
func (s *outStream) parse(line []byte, cut int) (hclog.Level, string, []any) {
	if cut == 0 && len(line) > 0 && line[0] == '{' {
		if level, msg, args, ok := parseHCLogJSON(line); ok {
			return level, msg, args
		}
	}
	text := cutText(line, cut)
	if s.name == "stderr" && (strings.HasPrefix(text, "panic: ") || strings.HasPrefix(text, "fatal error: ")) {
		s.inPanic = true
	}
	if s.inPanic {
		return hclog.Error, text, []any{"stream", s.name}
	}
	for _, p := range []struct {
		prefix string
		level  hclog.Level
	}{{"[TRACE]", hclog.Trace}, {"[DEBUG]", hclog.Debug}, {"[INFO]", hclog.Info}, {"[WARN]", hclog.Warn}, {"[ERROR]", hclog.Error}} {
		if strings.HasPrefix(text, p.prefix) {
			return p.level, text, []any{"stream", s.name}
		}
	}
	return hclog.Info, text, []any{"stream", s.name}
}

// parseHCLogJSON parses an hclog JSON entry: an object with a string
// "@message" and a known "@level"; its other members become fields, in
// key order ("@timestamp" as "timestamp"; the logger renames the other "@"
// keys).
func parseHCLogJSON(line []byte) (hclog.Level, string, []any, bool) {
	var entry map[string]any
	if json.Unmarshal(line, &entry) != nil {
		return 0, "", nil, false
	}
	msg, ok1 := entry["@message"].(string)
	lvl, ok2 := entry["@level"].(string)
	level := hclog.LevelFromString(lvl)
	if !ok1 || !ok2 || level == hclog.NoLevel || level == hclog.Off {
		return 0, "", nil, false
	}
	delete(entry, "@message")
	delete(entry, "@level")
	keys := make([]string, 0, len(entry))
	for k := range entry {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	args := make([]any, 0, 2*len(keys))
	for _, k := range keys {
		name := k
		if k == "@timestamp" {
			name = "timestamp"
		}
		args = append(args, name, entry[k])
	}
	return level, msg, args, true
}

// cutText is line as text, with a marker when cut bytes were cut from it.
func cutText(line []byte, cut int) string {
	if cut == 0 {
		return string(line)
	}
	// Do not end on part of a character.
	for i := 0; i < utf8.UTFMax-1 && len(line) > 0; i++ {
		if r, size := utf8.DecodeLastRune(line); r != utf8.RuneError || size != 1 {
			break
		}
		cut++
		line = line[:len(line)-1]
	}
	return fmt.Sprintf("%s … [%d more bytes cut]", line, cut)
}

// lineWriter splits what is written to it into lines and hands each to
// emit, without its "\n" (or "\r\n"), and cut to at most maxOutputLine
// bytes (cut says how many bytes were dropped). emit must not keep line.
type lineWriter struct {
	mu   sync.Mutex
	buf  []byte
	cut  int
	emit func(line []byte, cut int)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if room := maxOutputLine - len(w.buf); len(chunk) > room {
			w.buf = append(w.buf, chunk[:room]...)
			w.cut += len(chunk) - room
		} else {
			w.buf = append(w.buf, chunk...)
		}
		if i < 0 {
			break
		}
		w.emitLocked()
		p = p[i+1:]
	}
	return n, nil
}

// Flush emits the last line if it had no newline.
func (w *lineWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 || w.cut > 0 {
		w.emitLocked()
	}
}

func (w *lineWriter) emitLocked() {
	line := w.buf
	if w.cut == 0 {
		line = bytes.TrimSuffix(line, []byte("\r"))
	}
	w.emit(line, w.cut)
	w.buf, w.cut = w.buf[:0], 0
}

// handshakeReader is the plugin's stdout as go-plugin reads it: the first
// line only (the handshake), then EOF. It never blocks the reading of the
// plugin's stdout.
type handshakeReader struct {
	once  sync.Once
	ready chan struct{}
	r     *bytes.Reader
}

func newHandshakeReader() *handshakeReader { return &handshakeReader{ready: make(chan struct{})} }

// finish sets what go-plugin reads; later calls do nothing.
func (h *handshakeReader) finish(line []byte) {
	h.once.Do(func() {
		h.r = bytes.NewReader(line)
		close(h.ready)
	})
}

// endedEmpty reports whether the plugin's stdout ended before it wrote a
// line: the process closed it, or died, before its handshake.
func (h *handshakeReader) endedEmpty() bool {
	select {
	case <-h.ready:
		return h.r.Size() == 0
	default:
		return false
	}
}

func (h *handshakeReader) Read(p []byte) (int, error) {
	<-h.ready
	return h.r.Read(p)
}

// Close does nothing: the reaper closes the pipe.
func (h *handshakeReader) Close() error { return nil }

// excerpt keeps the head and the tail of a plugin's stderr for error
// messages: its first excerptHead bytes and its last excerptTail bytes,
// with the number of bytes left out between them.
type excerpt struct {
	mu    sync.Mutex
	head  []byte
	tail  []byte // the last bytes after head; at most 2*excerptTail before trimming
	total int64  // bytes written
}

const (
	excerptHead = 1 << 10
	excerptTail = 2 << 10
)

// add appends a line (with its marker if it was cut) and a newline.
func (e *excerpt) add(line []byte, cut int) {
	if cut > 0 {
		line = []byte(cutText(line, cut))
	}
	_, _ = e.Write(line)
	_, _ = e.Write([]byte{'\n'})
}

func (e *excerpt) Write(p []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := len(p)
	e.total += int64(n)
	if room := excerptHead - len(e.head); room > 0 {
		k := min(room, len(p))
		e.head = append(e.head, p[:k]...)
		p = p[k:]
	}
	if len(p) >= excerptTail {
		e.tail = append(e.tail[:0], p[len(p)-excerptTail:]...)
		return n, nil
	}
	e.tail = append(e.tail, p...)
	if len(e.tail) > 2*excerptTail {
		e.tail = append(e.tail[:0], e.tail[len(e.tail)-excerptTail:]...)
	}
	return n, nil
}

// String returns the excerpt without its final newline: the whole stderr
// when it fits, else its head, "… N bytes elided …" on a line of its own,
// and its tail. The head ends and the tail starts at a line boundary when
// one is in the half of each next to the elision.
func (e *excerpt) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	tail := e.tail
	if len(tail) > excerptTail {
		tail = tail[len(tail)-excerptTail:]
	}
	elided := e.total - int64(len(e.head)) - int64(len(tail))
	if elided == 0 {
		return strings.TrimRight(string(e.head)+string(tail), "\n")
	}
	head := e.head
	if i := bytes.LastIndexByte(head, '\n'); i >= len(head)/2 {
		head = head[:i+1]
	}
	if i := bytes.IndexByte(tail, '\n'); i >= 0 && i < len(tail)/2 {
		tail = tail[i+1:]
	}
	head, tail = trimPartialRunes(head, tail)
	elided = e.total - int64(len(head)) - int64(len(tail))
	sep := "\n"
	if bytes.HasSuffix(head, []byte("\n")) {
		sep = ""
	}
	return strings.TrimRight(fmt.Sprintf("%s%s… %d bytes elided …\n%s", head, sep, elided, tail), "\n")
}

// trimPartialRunes drops a character cut in two at the end of head and at
// the start of tail.
func trimPartialRunes(head, tail []byte) ([]byte, []byte) {
	for i := 0; i < utf8.UTFMax-1 && len(head) > 0; i++ {
		if r, size := utf8.DecodeLastRune(head); r != utf8.RuneError || size != 1 {
			break
		}
		head = head[:len(head)-1]
	}
	for i := 0; i < utf8.UTFMax-1 && len(tail) > 0 && !utf8.RuneStart(tail[0]); i++ {
		tail = tail[1:]
	}
	return head, tail
}
