package wrapped

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/plughost/plughost/host/wrapped/wire"

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
		{&wire.Error{Code: codeResourceNotFound, Message: "no file:///x"}, pluginproto.ErrUnknownResource, "unknown resource: no file:///x"},
		{&wire.Error{Code: wire.CodeInvalidParams, Message: "bad q"}, pluginproto.ErrInvalidArguments, "invalid arguments: bad q"},
		{&wire.Error{Code: -32000, Message: "busy"}, nil, "the server answered with error -32000: busy"},
		{other, other, "connection reset"},
		{&url.Error{Op: "Post", URL: "https://mcp.example", Err: errors.New("login needed")}, nil, "the request to the server failed: login needed"},
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
// items or maxPages pages instead of growing, or running, without end.
func TestAllIsBounded(t *testing.T) {
	endless := func(cursor string) ([]json.RawMessage, string, error) {
		return make([]json.RawMessage, 100), "more", nil
	}
	if _, err := all(endless); err == nil || !strings.Contains(err.Error(), "over 10000 items") {
		t.Errorf("all(endless) = %v, want the bound", err)
	}
	empty := func(cursor string) ([]json.RawMessage, string, error) { return nil, "again", nil }
	if _, err := all(empty); err == nil || !strings.Contains(err.Error(), "over 1000 pages") {
		t.Errorf("all(empty pages without end) = %v, want the bound", err)
	}
	pages := func(cursor string) ([]json.RawMessage, string, error) {
		if cursor == "" {
			return []json.RawMessage{json.RawMessage(`0`), json.RawMessage(`1`)}, "2", nil
		}
		return []json.RawMessage{json.RawMessage(fmt.Sprint(cursor))}, "", nil
	}
	if got, err := all(pages); err != nil || len(got) != 3 || string(got[2]) != "2" {
		t.Errorf("all(pages) = %q, %v", got, err)
	}
}
