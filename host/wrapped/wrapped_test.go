package wrapped

import (
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/plughost/plughost/pluginproto"
)

// What the host makes of the server's errors.
func TestServerError(t *testing.T) {
	other := errors.New("connection reset")
	cases := []struct {
		in      error
		is      error
		message string
	}{
		{&jsonrpc.Error{Code: codeResourceNotFound, Message: "no file:///x"}, pluginproto.ErrUnknownResource, "unknown resource: no file:///x"},
		{&jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad q"}, pluginproto.ErrInvalidArguments, "invalid arguments: bad q"},
		{&jsonrpc.Error{Code: -32000, Message: "busy"}, nil, "the server answered with error -32000: busy"},
		{other, other, "connection reset"},
	}
	for _, c := range cases {
		err := serverError(c.in)
		if err.Error() != c.message || (c.is != nil && !errors.Is(err, c.is)) {
			t.Errorf("serverError(%v) = %v, want %q (is %v)", c.in, err, c.message, c.is)
		}
		if c.is == nil && (errors.Is(err, pluginproto.ErrUnknownResource) || errors.Is(err, pluginproto.ErrInvalidArguments)) {
			t.Errorf("serverError(%v) = %v: typed", c.in, err)
		}
	}
}

// A list that never ends (a server paging forever) fails at maxListed
// instead of growing without end.
func TestAllIsBounded(t *testing.T) {
	endless := func(yield func(int, error) bool) {
		for i := 0; ; i++ {
			if !yield(i, nil) {
				return
			}
		}
	}
	if _, err := all(endless); err == nil || !strings.Contains(err.Error(), "over 10000 items") {
		t.Errorf("all(endless) = %v, want the bound", err)
	}
	few := func(yield func(int, error) bool) {
		for i := range 3 {
			if !yield(i, nil) {
				return
			}
		}
	}
	if got, err := all(few); err != nil || len(got) != 3 || string(got[2]) != "2" {
		t.Errorf("all(few) = %q, %v", got, err)
	}
}
