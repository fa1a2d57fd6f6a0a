package jsonrpc

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// Member returns the raw value of obj's member called name (the last one,
// should it repeat), or nil when obj is nil, not an object or has none.
func Member(obj []byte, name string) []byte {
	var val []byte
	for k, v := range Members(obj) {
		if keyIs(k, name) {
			val = v
		}
	}
	return val
}

// Members iterates over the raw keys (quoted) and raw values of a checked
// JSON object; over nothing when obj is nil or not an object.
func Members(obj []byte) func(yield func(key, val []byte) bool) {
	return func(yield func(key, val []byte) bool) {
		if !IsObject(obj) {
			return
		}
		it := objIter{b: obj, i: skipWS(obj, 0)}
		for {
			k, v, ok := it.next()
			if !ok || !yield(k, v) {
				return
			}
		}
	}
}

// KeyIs reports whether the raw JSON string key (as Members yields it)
// spells name.
func KeyIs(key []byte, name string) bool { return keyIs(key, name) }

// IsObject reports whether the checked JSON value v is an object.
func IsObject(v []byte) bool {
	i := skipWS(v, 0)
	return i < len(v) && v[i] == '{'
}

// Unquote decodes a raw JSON string. ok is false if raw is not a string.
func Unquote(raw []byte) (s string, ok bool) {
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

// objIter walks the members of a checked JSON object.
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

func keyIs(key []byte, name string) bool {
	if len(key) == len(name)+2 && string(key[1:len(key)-1]) == name {
		return true
	}
	if bytes.IndexByte(key, '\\') < 0 {
		return false
	}
	s, _ := Unquote(key)
	return s == name
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
