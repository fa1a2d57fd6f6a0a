package tasks

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/plughost/plughost/internal/jsonrpc"
)

// member is one member of a JSON object: its key, unquoted, and its raw
// value.
type member struct {
	key string
	val json.RawMessage
}

// members returns the members of the JSON object obj in order; ok is false
// when obj is not valid JSON or not an object. A nil obj has none.
func members(obj json.RawMessage) (ms []member, ok bool) {
	if obj == nil {
		return nil, true
	}
	if !json.Valid(obj) || !jsonrpc.IsObject(obj) {
		return nil, false
	}
	for k, v := range jsonrpc.Members(obj) {
		key, _ := jsonrpc.Unquote(k) // a valid object's keys are strings
		ms = append(ms, member{key, v})
	}
	return ms, true
}

// object returns the compact JSON object of ms; nil when ms is empty.
func object(ms []member) json.RawMessage {
	if len(ms) == 0 {
		return nil
	}
	b := []byte{'{'}
	for i, m := range ms {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonrpc.AppendString(b, m.key)
		b = append(b, ':')
		b, _ = jsonrpc.AppendJSON(b, m.val) // members() validated it
	}
	return append(b, '}')
}

// errorObject returns the JSON-RPC error object {"code":…,"message":…}.
func errorObject(code int, message string) json.RawMessage {
	b := append([]byte(`{"code":`), strconv.Itoa(code)...)
	b = append(b, `,"message":`...)
	b = jsonrpc.AppendString(b, message)
	return append(b, '}')
}

// now is the time a record is stamped with: UTC, to the millisecond (what
// the wire shows, so a record reads back as it was written).
func now() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

// end makes t terminal with status, dropping what only a running task
// holds.
func end(t *Task, status Status, message string) {
	t.Status, t.StatusMessage, t.Updated = status, message, now()
	t.InputRequests, t.Answers, t.State = nil, nil, ""
}

// fail makes t failed with a JSON-RPC error, whose message is the status
// message too, clipped.
func fail(t *Task, code int, message string) {
	message = clip(message)
	end(t, Failed, message)
	t.Error = errorObject(code, message)
}

// maxMessage bounds a status message a Run writes (progress, what the task
// waits for, why it failed): the record stays small whatever a plugin
// says, and so does each tasks/get.
const maxMessage = 1 << 10

// ellipsis ends a clipped message.
const ellipsis = "…"

// clip returns s when it fits in maxMessage bytes, else its longest
// prefix that ends at a UTF-8 boundary and fits with ellipsis appended.
func clip(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	i := maxMessage - len(ellipsis)
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + ellipsis
}
