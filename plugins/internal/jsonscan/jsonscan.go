// Package jsonscan walks the strings of a JSON document in place, for the
// bundled guardrail plugins: it reports every string (member names too,
// when asked) with its decoded value, its JSON path and its byte span, and
// replaces chosen strings while leaving every other byte of the document
// as it was (member order, numbers and spacing included). A guardrail that
// redacts one secret in a tool's result thus changes that one string and
// nothing else.
package jsonscan

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// String is one string of a document, as Walk reports it.
type String struct {
	// Value is the decoded string.
	Value string
	// Key is the member name when the string is an object member's value
	// (or, with IsKey, the member name itself); "" elsewhere.
	Key string
	// IsKey reports a member name rather than a value.
	IsKey bool
	// Start and End are the token's byte span in the document, quotes
	// included.
	Start, End int

	w *walker
}

// Path is the string's place in the document as a JSON path: $ for the
// document itself, .name or ["odd name"] for a member, [3] for an array
// element (a member name's path is the member's). Valid only inside the
// Walk callback that was handed s.
func (s *String) Path() string {
	var b strings.Builder
	b.WriteByte('$')
	for _, f := range s.w.stack {
		if f.object {
			writeMember(&b, f.key)
		} else {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(f.index))
			b.WriteByte(']')
		}
	}
	return b.String()
}

func writeMember(b *strings.Builder, name string) {
	plain := name != ""
	for i, r := range name {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			plain = false
			break
		}
	}
	if plain {
		b.WriteByte('.')
		b.WriteString(name)
		return
	}
	b.WriteByte('[')
	b.WriteString(strconv.Quote(name))
	b.WriteByte(']')
}

// ErrInvalid is wrapped by Walk's error for a document that is not JSON.
var ErrInvalid = errors.New("not valid JSON")

type frame struct {
	object    bool
	expectKey bool
	key       string
	index     int
}

type walker struct{ stack []frame }

// Walk calls fn for every string value of doc in document order, and for
// every member name too when keys is true. It stops at fn's first error
// and returns it. doc must be one valid JSON document (Walk checks).
func Walk(doc []byte, keys bool, fn func(s *String) error) error {
	if !json.Valid(doc) {
		return fmt.Errorf("jsonscan: %w", ErrInvalid)
	}
	w := &walker{stack: make([]frame, 0, 8)}
	for i := 0; i < len(doc); {
		switch c := doc[i]; c {
		case ' ', '\t', '\n', '\r', ':':
			i++
		case '{':
			w.stack = append(w.stack, frame{object: true, expectKey: true})
			i++
		case '[':
			w.stack = append(w.stack, frame{})
			i++
		case '}', ']':
			w.stack = w.stack[:len(w.stack)-1]
			i++
		case ',':
			top := &w.stack[len(w.stack)-1]
			if top.object {
				top.expectKey = true
			} else {
				top.index++
			}
			i++
		case '"':
			end := stringEnd(doc, i)
			value, err := decode(doc[i:end], i)
			if err != nil {
				return err
			}
			s := String{Value: value, Start: i, End: end, w: w}
			if n := len(w.stack); n > 0 && w.stack[n-1].object {
				top := &w.stack[n-1]
				if top.expectKey {
					top.key, top.expectKey = value, false
					s.IsKey = true
				}
				s.Key = top.key
			}
			if !s.IsKey || keys {
				if err := fn(&s); err != nil {
					return err
				}
			}
			i = end
		default: // a number, true, false or null
			for i < len(doc) && !strings.ContainsRune(" \t\n\r,]}", rune(doc[i])) {
				i++
			}
		}
	}
	return nil
}

// stringEnd is the index just past the string token starting at doc[i].
func stringEnd(doc []byte, i int) int {
	for j := i + 1; j < len(doc); j++ {
		switch doc[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(doc)
}

func decode(tok []byte, at int) (string, error) {
	body := tok[1 : len(tok)-1]
	if !slices.Contains(body, '\\') {
		return string(body), nil
	}
	b := make([]byte, 0, len(body))
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\\' {
			b = append(b, c)
			continue
		}
		i++
		switch body[i] {
		case '"', '\\', '/':
			b = append(b, body[i])
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r, n := unicodeEscape(body[i-1:])
			if n == 0 {
				return "", fmt.Errorf("jsonscan: string at byte %d: bad \\u escape", at)
			}
			b = utf8.AppendRune(b, r)
			i += n - 2
		default:
			return "", fmt.Errorf("jsonscan: string at byte %d: bad escape", at)
		}
	}
	return string(b), nil
}

// unicodeEscape decodes the \uXXXX escape (a surrogate pair: two of them)
// at the start of s; n is the bytes taken, 0 for a malformed one. A lone
// surrogate decodes to U+FFFD, as encoding/json does.
func unicodeEscape(s []byte) (r rune, n int) {
	hex4 := func(s []byte) (rune, bool) {
		if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(string(s[2:6]), 16, 32)
		return rune(v), err == nil
	}
	r, ok := hex4(s)
	if !ok {
		return 0, 0
	}
	if utf16.IsSurrogate(r) {
		if r2, ok := hex4(s[6:]); ok {
			if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
				return d, 12
			}
		}
		return utf8.RuneError, 6
	}
	return r, 6
}

// Edit replaces the string token at [Start, End) with Value, encoded.
type Edit struct {
	Start, End int
	Value      string
}

// Apply returns doc with every edit made (edits sorted by Start and not
// overlapping, as Walk's spans are). Bytes outside the edits are kept.
func Apply(doc []byte, edits []Edit) []byte {
	out := make([]byte, 0, len(doc)+16*len(edits))
	at := 0
	for _, e := range edits {
		out = append(out, doc[at:e.Start]...)
		enc, _ := json.Marshal(e.Value) // a string always marshals
		out = append(out, enc...)
		at = e.End
	}
	return append(out, doc[at:]...)
}

// BinaryContent reports whether s is the base64 bytes of an MCP result's
// binary content (an image's or audio's data, a blob resource's blob),
// which text scanners skip: they are not text, and scanning them finds
// only noise. Valid only inside the Walk callback that was handed s.
func (s *String) BinaryContent() bool {
	st := s.w.stack
	seg := func(i int) string {
		if !st[i].object {
			return ""
		}
		return st[i].key
	}
	switch n := len(st); {
	case s.IsKey || n < 3:
		return false
	case n == 3 && seg(0) == "content" && seg(2) == "data": // $.content[i].data
		return true
	case n == 3 && seg(0) == "contents" && seg(2) == "blob": // $.contents[i].blob (a read)
		return true
	default: // $.content[i].resource.blob
		return n == 4 && seg(0) == "content" && seg(2) == "resource" && seg(3) == "blob"
	}
}
