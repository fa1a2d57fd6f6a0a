package argcheck_test

import (
	"strings"
	"testing"

	"github.com/plughost/plughost/host/argcheck"
)

// TestCheckArgumentsDecoding pins what a call's arguments are checked as:
// numbers exactly (a float64 would round 2^53+1 down to the maximum and let
// it pass), escapes and repeated keys as encoding/json reads them, and
// bytes that are not one JSON value refused with the Decoder's words.
func TestCheckArgumentsDecoding(t *testing.T) {
	s, err := argcheck.Compile([]byte(`{"type":"object","properties":{
		"n":{"type":"integer","maximum":9007199254740992},
		"s":{"const":"é\n"},
		"list":{"type":"array","items":{"type":"object","required":["k"]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for args, want := range map[string]string{
		`{"n":9007199254740992}`:               ``,
		`{"n":9007199254740993}`:               `invalid arguments for tool "t": /n: maximum: got …`,
		`{"n":1.5}`:                            `invalid arguments for tool "t": /n: must be integer, got number`,
		`{"s":"\u00e9\n"}`:                     ``,
		`{"n":"x","n":1}`:                      ``, // the last of a repeated key counts
		` { "list" : [ { "k" : 1 } , { } ] } `: `invalid arguments for tool "t": /list/1/k: missing required property`,
		`{"n":1} {"n":2}`:                      `invalid arguments for tool "t": not valid JSON: data after the arguments object`,
		`{"n":1`:                               `invalid arguments for tool "t": not valid JSON: unexpected EOF`,
		`{"n":01}`:                             `invalid arguments for tool "t": not valid JSON: invalid character '1' after object key:value pair`,
		`"text"`:                               `invalid arguments for tool "t": arguments must be a JSON object, got string`,
	} {
		got := s.Check("t", []byte(args))
		if prefix, ok := strings.CutSuffix(want, "…"); ok && strings.HasPrefix(got, prefix) {
			continue // the message words a big number in its own way
		}
		if got != want {
			t.Errorf("%s:\n got %q\nwant %q", args, got, want)
		}
	}
}
