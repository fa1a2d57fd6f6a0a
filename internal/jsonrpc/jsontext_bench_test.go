//go:build goexperiment.jsonv2

package jsonrpc

import (
	"bytes"
	"encoding/json/jsontext"
	"testing"
)

// BenchmarkDecodeJSONText is the same classification with the standard
// library's tokenizer (GOEXPERIMENT=jsonv2): one pass that validates and
// walks the top-level members, keeping their raw values. Run it with
//
//	GOEXPERIMENT=jsonv2 go test -run '^$' -bench Decode -benchmem ./internal/jsonrpc
//
// It decided the scanner (see the package doc).
func BenchmarkDecodeJSONText(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchMsg)))
	var r bytes.Reader
	dec := jsontext.NewDecoder(&r)
	for b.Loop() {
		r.Reset(benchMsg)
		dec.Reset(&r)
		var id, method, params []byte
		if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
			b.Fatal(err)
		}
		for dec.PeekKind() != '}' {
			k, err := dec.ReadValue() // valid until the next read
			if err != nil {
				b.Fatal(err)
			}
			var dst *[]byte
			switch string(k) {
			case `"id"`:
				dst = &id
			case `"method"`:
				dst = &method
			case `"params"`:
				dst = &params
			}
			v, err := dec.ReadValue()
			if err != nil {
				b.Fatal(err)
			}
			if dst != nil {
				*dst = append((*dst)[:0], v...) // copied: v aliases the decoder's buffer
			}
		}
		if _, err := dec.ReadToken(); err != nil {
			b.Fatal(err)
		}
		if len(id) == 0 || len(method) == 0 || len(params) == 0 {
			b.Fatalf("missing members %q %q %q", id, method, params)
		}
	}
}
