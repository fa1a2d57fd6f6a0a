package mcp

import (
	"bytes"
	"encoding/json"
	"strconv"
	"sync"
	"unicode/utf8"
)

// JSON-RPC 2.0 error codes used by the server.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
	codeInternalError  = -32603
)

// rpcError is a JSON-RPC error object on its way to the client.
type rpcError struct {
	code int
	msg  string
}

// envelope is one decoded JSON-RPC message. Every slice aliases the message
// it was decoded from; id, params and method are raw JSON (method keeps its
// quotes).
type envelope struct {
	id     []byte // raw string or integer; nil when absent
	method []byte // raw JSON string; nil when absent
	params []byte // raw JSON object; nil when absent
	result []byte // raw result of a response; nil when absent
	errv   []byte // raw error of a response; nil when absent
}

// decodeEnvelope decodes one JSON-RPC message. b must be valid JSON (the
// caller checks with json.Valid once per line, batch or not). On failure it
// returns the error to send and the id to send it with (nil means null: the
// id could not be read).
func decodeEnvelope(b []byte) (env envelope, badID []byte, err *rpcError) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return env, nil, &rpcError{codeInvalidRequest, "invalid request: a message must be a JSON object"}
	}
	var jsonrpc []byte
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
			seen, env.id = &seenID, val
		case keyIs(key, "method"):
			seen, env.method = &seenMethod, val
		case keyIs(key, "params"):
			seen, env.params = &seenParams, val
		case keyIs(key, "result"):
			env.result = val
		case keyIs(key, "error"):
			env.errv = val
		}
		if seen != nil {
			if *seen {
				return env, nil, &rpcError{codeInvalidRequest, "invalid request: duplicate member " + string(key)}
			}
			*seen = true
		}
	}
	if env.method == nil && (env.result != nil || env.errv != nil) {
		return env, nil, nil // a response from the client: never answered
	}
	// From here on the id is echoed when it is well formed.
	if env.id != nil && !validID(env.id) {
		return env, nil, &rpcError{codeInvalidRequest, "invalid request: id must be a string or an integer"}
	}
	if !bytes.Equal(jsonrpc, []byte(`"2.0"`)) {
		return env, env.id, &rpcError{codeInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`}
	}
	if env.method == nil {
		return env, env.id, &rpcError{codeInvalidRequest, "invalid request: missing method"}
	}
	if env.method[0] != '"' {
		return env, env.id, &rpcError{codeInvalidRequest, "invalid request: method must be a string"}
	}
	if env.params != nil && env.params[0] != '{' {
		return env, env.id, &rpcError{codeInvalidParams, "invalid params: params must be an object"}
	}
	return env, nil, nil
}

// validID reports whether raw is an MCP request id: a string or an integer
// (MCP forbids null ids; JSON-RPC discourages fractions).
func validID(raw []byte) bool {
	switch c := raw[0]; {
	case c == '"':
		return true
	case c == '-' || c >= '0' && c <= '9':
		return bytes.IndexAny(raw, ".eE") < 0
	}
	return false
}

// idKey returns the in-flight map key of a request id: equal ids (by value,
// not by spelling) give equal keys, and a string id never equals an integer.
// A string's key is a quote followed by its decoded text; an integer's is
// its digits (valid JSON has no leading zeros; "-0" is 0).
func idKey(raw []byte) string {
	if raw[0] != '"' {
		if len(raw) == 2 && raw[0] == '-' && raw[1] == '0' {
			return "0"
		}
		return string(raw)
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[:len(raw)-1])
	}
	s, _ := unquote(raw)
	return `"` + s
}

// objIter walks the members of a valid JSON object.
type objIter struct {
	b []byte
	i int // index of '{' before the first call, then of ',' or '}'
}

// next returns the raw key (with quotes) and raw value of the next member.
func (it *objIter) next() (key, val []byte, ok bool) {
	if it.b[it.i] == '}' {
		return nil, nil, false
	}
	// Step past '{' or ','.
	i := skipWS(it.b, it.i+1)
	if it.b[i] == '}' { // an empty object
		it.i = i
		return nil, nil, false
	}
	ke := stringEnd(it.b, i)
	key = it.b[i:ke]
	vs := skipWS(it.b, skipWS(it.b, ke)+1) // past ':'
	ve := valueEnd(it.b, vs)
	it.i = skipWS(it.b, ve)
	return key, it.b[vs:ve], true
}

// member returns the raw value of obj's member called name (the last one,
// should it repeat), or nil when obj is nil or has none.
func member(obj []byte, name string) []byte {
	var val []byte
	if obj == nil {
		return nil
	}
	it := objIter{b: obj}
	for {
		k, v, ok := it.next()
		if !ok {
			return val
		}
		if keyIs(k, name) {
			val = v
		}
	}
}

// arrayElems returns the raw elements of a valid JSON array.
func arrayElems(b []byte) [][]byte {
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

// keyIs reports whether the raw JSON string key spells name.
func keyIs(key []byte, name string) bool {
	if len(key) == len(name)+2 && string(key[1:len(key)-1]) == name {
		return true
	}
	if bytes.IndexByte(key, '\\') < 0 {
		return false
	}
	s, _ := unquote(key)
	return s == name
}

// unquote decodes a raw JSON string. ok is false if raw is not a string.
func unquote(raw []byte) (s string, ok bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner), true
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// stringEnd returns the index after the JSON string starting at b[i].
func stringEnd(b []byte, i int) int {
	for j := i + 1; ; j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
}

// valueEnd returns the index after the JSON value starting at b[i].
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; ; j++ {
			switch b[j] {
			case '"':
				j = stringEnd(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
	}
	j := i
	for j < len(b) {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j
		}
		j++
	}
	return j
}

// appendString appends s as a JSON string.
func appendString(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			q, _ := json.Marshal(s) // strings always marshal
			return append(buf, q...)
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}

// appendJSON appends the valid JSON value v on one line. It reports false,
// appending nothing, if v is not valid JSON.
func appendJSON(buf, v []byte) ([]byte, bool) {
	if !json.Valid(v) {
		return buf, false
	}
	if bytes.IndexByte(v, '\n') < 0 && bytes.IndexByte(v, '\r') < 0 {
		return append(buf, bytes.TrimSpace(v)...), true
	}
	w := bytes.NewBuffer(buf)
	if err := json.Compact(w, v); err != nil {
		return buf, false
	}
	return w.Bytes(), true
}

// appendObject appends v, a JSON object its producer vouches is valid (see
// Catalog), on one line. It parses nothing on the way: it checks that v is
// framed as an object ('{' … '}'), reporting false and appending nothing
// otherwise, and compacts v (which validates it) only when it holds a line
// break, which would end a stdio message early.
func appendObject(buf, v []byte) ([]byte, bool) {
	v = bytes.TrimSpace(v)
	if len(v) < 2 || v[0] != '{' || v[len(v)-1] != '}' {
		return buf, false
	}
	if bytes.IndexByte(v, '\n') >= 0 || bytes.IndexByte(v, '\r') >= 0 {
		return appendJSON(buf, v)
	}
	return append(buf, v...), true
}

// isObject reports whether the valid JSON value v is an object.
func isObject(v []byte) bool {
	i := skipWS(v, 0)
	return i < len(v) && v[i] == '{'
}

func appendResponseHead(buf, id []byte) []byte {
	buf = append(buf, `{"jsonrpc":"2.0","id":`...)
	return append(buf, id...)
}

// appendResult appends a whole success response whose result is already
// compact, valid JSON.
func appendResult(buf, id, result []byte) []byte {
	buf = appendResponseHead(buf, id)
	buf = append(buf, `,"result":`...)
	buf = append(buf, result...)
	return append(buf, '}')
}

// appendError appends a whole error response; a nil id is sent as null.
func appendError(buf, id []byte, e *rpcError) []byte {
	if id == nil {
		id = []byte("null")
	}
	buf = appendResponseHead(buf, id)
	buf = append(buf, `,"error":{"code":`...)
	buf = strconv.AppendInt(buf, int64(e.code), 10)
	buf = append(buf, `,"message":`...)
	buf = appendString(buf, e.msg)
	return append(buf, "}}"...)
}

// bufPool holds message buffers. Buffers that grew past maxPooled are
// dropped so one large result does not pin memory.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// maxPooled is the largest buffer kept in bufPool.
const maxPooled = 64 << 10

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

func putBuf(b *[]byte) {
	if cap(*b) > maxPooled {
		return
	}
	*b = (*b)[:0]
	bufPool.Put(b)
}
