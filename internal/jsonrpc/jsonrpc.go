// Package jsonrpc reads, classifies and writes JSON-RPC 2.0 messages. It is
// the only code in the host that looks at the raw bytes of a message; it
// knows nothing of MCP, only of JSON-RPC: ids, methods, params, results and
// errors. It imports nothing of the host, so every layer may use it without
// climbing: the MCP server (host/mcp) and its transports, and the task
// store (host/tasks), which keeps results as the raw JSON they travel as.
//
// # Reading
//
// A transport hands over one JSON value: a single message or (in the one
// MCP revision that had them) a batch. [Check] makes sure it is JSON in
// UTF-8 at all; [IsBatch] and [Elements] split a batch; [Decode] classifies
// one message as a [Request], a [Notification] or a [Response] and returns
// its parts, which alias the input (nothing is copied or allocated):
//
//	if perr := jsonrpc.Check(b); perr != nil { … answer perr with a null id … }
//	m, err := jsonrpc.Decode(b)
//	if err != nil { … answer err with err.ID … }
//	switch m.Kind { case jsonrpc.Request: … m.ID, m.Method, m.Params … }
//
// Params and results stay raw JSON: [Member] and [Members] read an
// object's members, [Unquote] a string, [IsObject] checks a value's type.
//
// # Writing
//
// Messages are appended to a byte slice, compact and on one line (so they
// can be framed by newlines on stdio): [AppendResult], [AppendError],
// [AppendNotification], [AppendRequest]. Values inside them are appended
// with [AppendString], [AppendNumber], [AppendJSON] (any JSON, compacted)
// and [AppendObject] (an object its producer vouches for, spliced without
// parsing). [Classify] tells a message written here from the start of its
// bytes, for transports that frame responses and notifications apart.
// [GetBuf] and [PutBuf] pool the buffers.
//
// # Why our own scanner
//
// Decoding splits a message into byte ranges; it never builds values. The
// input has been validated once by [Check] (encoding/json's Valid, which
// does not allocate), so the walk can trust its structure, and every slice
// it returns aliases the input. The tokenizer that becomes encoding/json/v2
// (encoding/json/jsontext, in Go 1.26 only behind GOEXPERIMENT=jsonv2)
// validates and walks in one pass, but its values alias its own buffer
// (each one kept must be copied) and it allocates per message. Measured on
// a 200-byte tools/call (BenchmarkDecode and BenchmarkDecodeJSONText,
// GOEXPERIMENT=jsonv2 go test -run '^$' -bench Decode -benchmem
// ./internal/jsonrpc): this scanner 376–402 ns, 0 allocations; jsontext
// 432–495 ns, 3 allocations and 168 B. The difference is small against a
// call's cost either way; what decided it is that jsontext needs an
// experiment flag (or a second module) and copies, while this scanner is
// 150 lines, fuzzed (FuzzDecode checks it against encoding/json).
package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// JSON-RPC 2.0 error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// An Error is a JSON-RPC error object, and the answer to a message that
// could not be decoded.
type Error struct {
	Code    int
	Message string
	// Data, when not nil, is the error's data member: valid JSON.
	Data []byte
	// ID is the id to answer with when Decode failed: nil (null) when the
	// message's id could not be read.
	ID []byte
}

func (e *Error) Error() string { return e.Message }

// NewError returns an error object with code and message.
func NewError(code int, msg string) *Error { return &Error{Code: code, Message: msg} }

// Kind is what a message is.
type Kind uint8

const (
	// Invalid is the zero Kind.
	Invalid Kind = iota
	// Request has a method and an id: it is answered.
	Request
	// Notification has a method and no id: it is never answered.
	Notification
	// Response has a result or an error, and the id of the request it
	// answers.
	Response
)

// A Message is one decoded JSON-RPC message. Its slices alias the bytes it
// was decoded from.
type Message struct {
	Kind Kind
	// ID is the raw id (a JSON string or integer); nil when absent.
	ID []byte
	// Method is the method's name, unquoted (it aliases the input unless
	// the name holds escapes); nil for a response.
	Method []byte
	// Params is the raw params object; nil when absent.
	Params []byte
	// Result and Error are a response's raw result or error; nil when
	// absent.
	Result []byte
	Error  []byte
}

// Check reports, as the error to answer with, whether b is one JSON value
// in UTF-8 (RFC 8259). Every other function of this package that reads
// trusts that b passed Check.
func Check(b []byte) *Error {
	switch {
	case !json.Valid(b):
		return NewError(CodeParseError, "parse error: invalid JSON")
	case !utf8.Valid(b):
		return NewError(CodeParseError, "parse error: invalid UTF-8")
	}
	return nil
}

// IsBatch reports whether the checked value b is an array: a batch.
func IsBatch(b []byte) bool {
	i := skipWS(b, 0)
	return i < len(b) && b[i] == '['
}

// Elements returns the raw elements of a checked JSON array.
func Elements(b []byte) [][]byte {
	var elems [][]byte
	i := skipWS(b, 0) // at '['
	for {
		i = skipWS(b, i+1)
		if b[i] == ']' {
			return elems
		}
		e := valueEnd(b, i)
		elems = append(elems, b[i:e])
		i = skipWS(b, e) // at ',' or ']'
		if b[i] == ']' {
			return elems
		}
	}
}

// Decode classifies one checked message and returns its parts. A message
// that is not a valid JSON-RPC 2.0 request, notification or response gives
// the error to answer with (its ID set when the message's id could be
// read). A response is returned whether or not it is well formed beyond
// its id: responses are never answered, so their checking is the reader's.
func Decode(b []byte) (Message, *Error) {
	var m Message
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return m, NewError(CodeInvalidRequest, "invalid request: a message must be a JSON object")
	}
	var jsonrpc, method []byte
	var seenID, seenMethod, seenParams, seenJSONRPC bool
	it := objIter{b: b, i: i}
	for {
		key, val, ok := it.next()
		if !ok {
			break
		}
		var seen *bool
		switch {
		case keyIs(key, "jsonrpc"):
			seen, jsonrpc = &seenJSONRPC, val
		case keyIs(key, "id"):
			seen, m.ID = &seenID, val
		case keyIs(key, "method"):
			seen, method = &seenMethod, val
		case keyIs(key, "params"):
			seen, m.Params = &seenParams, val
		case keyIs(key, "result"):
			m.Result = val
		case keyIs(key, "error"):
			m.Error = val
		}
		if seen != nil {
			if *seen {
				return m, NewError(CodeInvalidRequest, "invalid request: duplicate member "+string(key))
			}
			*seen = true
		}
	}
	if method == nil && (m.Result != nil || m.Error != nil) {
		m.Kind = Response
		return m, nil
	}
	// From here on the id is echoed when it is well formed.
	if m.ID != nil && !ValidID(m.ID) {
		return m, NewError(CodeInvalidRequest, "invalid request: id must be a string or an integer")
	}
	fail := func(code int, msg string) (Message, *Error) {
		return m, &Error{Code: code, Message: msg, ID: m.ID}
	}
	switch {
	case !bytes.Equal(jsonrpc, []byte(`"2.0"`)):
		return fail(CodeInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`)
	case method == nil:
		return fail(CodeInvalidRequest, "invalid request: missing method")
	case method[0] != '"':
		return fail(CodeInvalidRequest, "invalid request: method must be a string")
	case m.Params != nil && m.Params[0] != '{':
		return fail(CodeInvalidParams, "invalid params: params must be an object")
	}
	m.Method = method[1 : len(method)-1]
	if bytes.IndexByte(m.Method, '\\') >= 0 {
		s, _ := Unquote(method)
		m.Method = []byte(s)
	}
	m.Kind = Request
	if m.ID == nil {
		m.Kind = Notification
	}
	return m, nil
}

// ValidID reports whether raw is an MCP request id: a string or an integer
// (MCP forbids null ids; JSON-RPC discourages fractions).
func ValidID(raw []byte) bool {
	if len(raw) == 0 {
		return false
	}
	switch c := raw[0]; {
	case c == '"':
		return true
	case c == '-' || c >= '0' && c <= '9':
		return bytes.IndexAny(raw, ".eE") < 0
	}
	return false
}

// IDKey returns a map key for a valid id: equal ids (by value, not by
// spelling) give equal keys, and a string id never equals an integer. A
// string's key is a quote followed by its decoded text; an integer's is its
// digits (valid JSON has no leading zeros; "-0" is 0).
func IDKey(raw []byte) string {
	if raw[0] != '"' {
		if len(raw) == 2 && raw[0] == '-' && raw[1] == '0' {
			return "0"
		}
		return string(raw)
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[:len(raw)-1])
	}
	s, _ := Unquote(raw)
	return `"` + s
}

// ErrTooLarge is returned (wrapped) by a transport's read of an incoming
// message over its size limit. The transport has skipped the message and
// stays usable; the server answers with a JSON-RPC error.
var ErrTooLarge = errors.New("message too large")
