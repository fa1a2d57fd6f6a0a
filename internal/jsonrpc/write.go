package jsonrpc

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"sync"
	"unicode/utf8"
)

// AppendResult appends a whole success response whose result is compact,
// valid JSON.
func AppendResult(buf, id, result []byte) []byte {
	buf = appendHead(buf, id)
	buf = append(buf, `,"result":`...)
	buf = append(buf, result...)
	return append(buf, '}')
}

// AppendResultHead appends a success response up to its result, for
// callers that build the result in place; close it with '}'.
func AppendResultHead(buf, id []byte) []byte {
	buf = appendHead(buf, id)
	return append(buf, `,"result":`...)
}

// AppendError appends a whole error response; a nil id is sent as null.
func AppendError(buf, id []byte, e *Error) []byte {
	if id == nil {
		id = null
	}
	buf = appendHead(buf, id)
	buf = append(buf, `,"error":{"code":`...)
	buf = strconv.AppendInt(buf, int64(e.Code), 10)
	buf = append(buf, `,"message":`...)
	buf = AppendString(buf, e.Message)
	if e.Data != nil {
		buf = append(buf, `,"data":`...)
		buf, _ = AppendJSON(buf, e.Data)
	}
	return append(buf, "}}"...)
}

var null = []byte("null")

func appendHead(buf, id []byte) []byte {
	buf = append(buf, idHead...)
	return append(buf, id...)
}

// AppendNotification appends a notification; params, when not nil, must be
// a compact JSON object.
func AppendNotification(buf []byte, method string, params []byte) []byte {
	buf = AppendNotificationHead(buf, method)
	if params == nil {
		return append(buf, '}')
	}
	buf = append(buf, `,"params":`...)
	buf = append(buf, params...)
	return append(buf, '}')
}

// AppendNotificationHead appends a notification up to its method, for
// callers that build the params in place: go on with `,"params":{…}}`, or
// close it with '}'.
func AppendNotificationHead(buf []byte, method string) []byte {
	buf = append(buf, notificationHead...)
	return AppendString(buf, method)
}

// AppendRequest appends a request; params must be a compact JSON object.
func AppendRequest(buf, id []byte, method string, params []byte) []byte {
	buf = appendHead(buf, id)
	buf = append(buf, `,"method":`...)
	buf = AppendString(buf, method)
	buf = append(buf, `,"params":`...)
	buf = append(buf, params...)
	return append(buf, '}')
}

// Classify tells the kind of a message written by this package from its
// first bytes, without parsing it: a batch (an array of responses) is a
// Response; anything not written here is Invalid.
func Classify(msg []byte) Kind {
	switch {
	case len(msg) > 0 && msg[0] == '[':
		return Response
	case bytes.HasPrefix(msg, notificationHead):
		return Notification
	}
	rest, ok := bytes.CutPrefix(msg, idHead)
	if !ok || len(rest) == 0 {
		return Invalid
	}
	if bytes.HasPrefix(rest[valueEnd(rest, 0):], []byte(`,"method":`)) {
		return Request
	}
	return Response
}

var (
	idHead           = []byte(`{"jsonrpc":"2.0","id":`)
	notificationHead = []byte(`{"jsonrpc":"2.0","method":`)
)

// AppendString appends s as a JSON string.
func AppendString(buf []byte, s string) []byte {
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

// AppendNumber appends f as encoding/json would. f must be finite.
func AppendNumber(b []byte, f float64) []byte {
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	return strconv.AppendFloat(b, f, format, -1, 64)
}

// AppendJSON appends the JSON value v on one line. It reports false,
// appending nothing, if v is not valid JSON. Bytes that are not UTF-8
// (which encoding/json lets pass inside strings, and a client may refuse
// the whole message for) become U+FFFD.
func AppendJSON(buf, v []byte) ([]byte, bool) {
	if !json.Valid(v) {
		return buf, false
	}
	if !utf8.Valid(v) { // only inside strings: json.Valid refuses them elsewhere
		v = bytes.ToValidUTF8(v, []byte("\uFFFD"))
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

// AppendObject appends v, a JSON object its producer vouches is valid, on
// one line. It parses nothing on the way: it checks that v is framed as an
// object ('{' … '}'), reporting false and appending nothing otherwise, and
// compacts v (which validates it) only when it holds a line break, which
// would end a stdio message early.
func AppendObject(buf, v []byte) ([]byte, bool) {
	v = bytes.TrimSpace(v)
	if len(v) < 2 || v[0] != '{' || v[len(v)-1] != '}' {
		return buf, false
	}
	if bytes.IndexByte(v, '\n') >= 0 || bytes.IndexByte(v, '\r') >= 0 {
		return AppendJSON(buf, v)
	}
	return append(buf, v...), true
}

// AppendObjectWithout appends the checked JSON object obj, compact, without
// the members named.
func AppendObjectWithout(b, obj []byte, names ...string) []byte {
	b = append(b, '{')
	first := true
	for k, v := range Members(obj) {
		skip := false
		for _, n := range names {
			skip = skip || keyIs(k, n)
		}
		if skip {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b, _ = AppendJSON(b, k)
		b = append(b, ':')
		b, _ = AppendJSON(b, v)
	}
	return append(b, '}')
}

// bufPool holds message buffers. Buffers that grew past MaxPooled are
// dropped so one large result does not pin memory.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// MaxPooled is the largest buffer PutBuf keeps.
const MaxPooled = 64 << 10

// GetBuf returns an empty buffer from the pool.
func GetBuf() *[]byte { return bufPool.Get().(*[]byte) }

// PutBuf gives a buffer back; b must not be used afterwards.
func PutBuf(b *[]byte) {
	if cap(*b) > MaxPooled {
		return
	}
	*b = (*b)[:0]
	bufPool.Put(b)
}
