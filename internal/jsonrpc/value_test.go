package jsonrpc

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// decodeStd is what Value stands in for: encoding/json's Decoder with
// UseNumber.
func decodeStd(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

var valueCases = []string{
	`{}`, `[]`, `null`, `true`, `false`, `0`, `-1.5e+300`, `"x"`,
	` { "a" : [ 1 , 2.50 , "three" , { } , [ ] , null , true , false ] , "b" : { "c" : -0 } } `,
	`{"path":"notes/today.txt","limit":20}`,
	`{"a":1,"a":2}`,                             // a repeated key keeps its last value
	`{"k\u00e9y":"\"esc\"\n\t\\ \ud83d\ude00"}`, // escapes in keys and values
	"{\"bad\":\"\xff\xfe\"}",                    // invalid UTF-8 becomes U+FFFD
	`[[[[[]]]],{"":{"":[0]}}]`,
	`12345678901234567890123456789012345678901234567890`, // exact, beyond float64
}

func TestValueMatchesDecoder(t *testing.T) {
	for _, c := range valueCases {
		checkValue(t, []byte(c))
	}
}

func FuzzValue(f *testing.F) {
	for _, c := range valueCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if json.Valid(b) {
			checkValue(t, b)
		}
	})
}

func checkValue(t *testing.T, b []byte) {
	t.Helper()
	want, err := decodeStd(b)
	if err != nil {
		t.Fatalf("%q: the Decoder fails: %v", b, err)
	}
	if got := Value(b); !reflect.DeepEqual(got, want) {
		t.Errorf("Value(%q) = %#v, want %#v", b, got, want)
	}
}

var benchArgs = []byte(`{"text":"0123456789012345678901234567890123456789012345678901234567890123"}`)

// BenchmarkValue is what argument validation costs to decode a 64-byte
// echo argument: json.Valid, then Value.
func BenchmarkValue(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if !json.Valid(benchArgs) || Value(benchArgs) == nil {
			b.Fatal("invalid")
		}
	}
}

// BenchmarkValueDecoder is the same with encoding/json's Decoder (and the
// token read that proves nothing follows), as argument validation did.
func BenchmarkValueDecoder(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		dec := json.NewDecoder(bytes.NewReader(benchArgs))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			b.Fatal(err)
		}
		if _, err := dec.Token(); err == nil {
			b.Fatal("data after")
		}
	}
}

// TestValueDeepNesting decodes objects and arrays nested nearly as deep
// as json.Valid allows (10,000 levels), as the Decoder does.
func TestValueDeepNesting(t *testing.T) {
	const depth = 9000
	for _, open := range []string{`{"a":`, `[`} {
		closer := map[string]string{`{"a":`: `}`, `[`: `]`}[open]
		b := []byte(strings.Repeat(open, depth) + "1" + strings.Repeat(closer, depth))
		if !json.Valid(b) {
			t.Fatalf("%s…: not valid", open)
		}
		checkValue(t, b)
	}
}
