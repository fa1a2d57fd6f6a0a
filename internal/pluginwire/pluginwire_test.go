package pluginwire

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plughost/plughost/internal/pluginpb"
)

func TestIsObject(t *testing.T) {
	t.Parallel()
	tests := map[string]bool{
		`{}`:               true,
		" \n{\"a\":1}":     true,
		`[]`:               false,
		`{`:                false,
		`"x"`:              false,
		"":                 false,
		"{\"a\":\"\xff\"}": false, // not UTF-8
	}
	for in, want := range tests {
		if got := IsObject([]byte(in)); got != want {
			t.Errorf("IsObject(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestCapabilitiesDefaultsToEmptyObject(t *testing.T) {
	t.Parallel()
	if got := string(Capabilities(nil)); got != "{}" {
		t.Errorf("Capabilities(nil) = %s, want {}", got)
	}
	if got := string(Capabilities([]byte(`{"roots":{}}`))); got != `{"roots":{}}` {
		t.Errorf("Capabilities kept %s", got)
	}
}

func TestCheckRequests(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		requests string
		want     string // a part of the error; "" for none
	}{
		"one of each method":  {`{"a":{"method":"elicitation/create","params":{}},"b":{"method":"roots/list"},"c":{"method":"sampling/createMessage","params":{}}}`, ""},
		"not an object":       {`[]`, "not a JSON object"},
		"empty":               {`{}`, "requests is empty"},
		"empty key":           {`{"":{"method":"roots/list"}}`, "empty key"},
		"a key twice":         {`{"a":{"method":"roots/list"},"a":{"method":"roots/list"}}`, `"a" appears twice`},
		"unknown method":      {`{"a":{"method":"tools/call","params":{}}}`, "none of sampling/createMessage"},
		"params missing":      {`{"a":{"method":"elicitation/create"}}`, "has no params"},
		"params not object":   {`{"a":{"method":"elicitation/create","params":[]}}`, "params is not a JSON object"},
		"method not a string": {`{"a":{"method":1}}`, "method is not a string"},
		"too many":            {`{` + manyRequests(MaxInputRequests+1) + `}`, "more than 16 requests"},
	}
	for name, tc := range tests {
		err := CheckRequests([]byte(tc.requests))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error with %q", name, err, tc.want)
		}
	}
}

// manyRequests is n distinct roots/list requests, as object members.
func manyRequests(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"k` + strings.Repeat("x", i) + `":{"method":"roots/list"}`)
	}
	return b.String()
}

func TestCheckInputRequiredBoundsTheState(t *testing.T) {
	t.Parallel()
	ok := `{"a":{"method":"roots/list"}}`
	if err := CheckInputRequired("call", &pluginpb.InputRequired{Requests: []byte(ok), RequestState: "s"}); err != nil {
		t.Error(err)
	}
	err := CheckInputRequired("call", &pluginpb.InputRequired{Requests: []byte(ok), RequestState: strings.Repeat("s", MaxRequestState+1)})
	if !errors.Is(err, ErrInvalidResult) {
		t.Errorf("a state over the bound: %v, want ErrInvalidResult", err)
	}
}

func TestResult(t *testing.T) {
	t.Parallel()
	if _, err := Result("read", nil); !errors.Is(err, ErrNoResult) {
		t.Errorf("no result: %v", err)
	}
	if _, err := Result("read", []byte(`[]`)); !errors.Is(err, ErrInvalidResult) {
		t.Errorf("not an object: %v", err)
	}
	if res, err := Result("read", []byte(`{}`)); err != nil || string(res) != "{}" {
		t.Errorf("an object: %s, %v", res, err)
	}
}

func TestUnaryError(t *testing.T) {
	t.Parallel()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	tests := map[string]struct {
		ctx  context.Context
		err  error
		is   error  // what the error wraps; nil for nothing checked
		text string // a part of its text
	}{
		"not found":        {context.Background(), status.Error(codes.NotFound, "no x"), ErrUnknownResource, "no x"},
		"invalid argument": {context.Background(), status.Error(codes.InvalidArgument, "bad a"), ErrInvalidArguments, "bad a"},
		"unavailable":      {context.Background(), status.Error(codes.Unavailable, "gone"), ErrPluginClosed, "gone"},
		"too large":        {context.Background(), status.Error(codes.ResourceExhausted, "big"), nil, "over the size limit"},
		"other":            {context.Background(), status.Error(codes.Unknown, "boom"), nil, "the plugin failed (Unknown): boom"},
		"ctx ended":        {ended, status.Error(codes.NotFound, "no x"), context.Canceled, "read"},
	}
	for name, tc := range tests {
		err := UnaryError(tc.ctx, nil, "read", tc.err, ErrUnknownResource)
		if tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("%s: %v, want it to wrap %v", name, err, tc.is)
		}
		if !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%s: %v, want %q in it", name, err, tc.text)
		}
	}
}

func TestRPCErrorSaysThePluginExited(t *testing.T) {
	t.Parallel()
	exited, cancel := context.WithCancel(context.Background())
	cancel()
	err := RPCError(context.Background(), exited, "describe", status.Error(codes.Unavailable, "eof"))
	if !errors.Is(err, ErrPluginClosed) || !strings.Contains(err.Error(), "the plugin process has exited") {
		t.Errorf("RPCError = %v", err)
	}
}
