package streamable

import (
	"encoding/json"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/host/mcp/internal/mcptest"
	"github.com/plughost/plughost/host/toolsearch"
)

// searchServer is a server in tool search mode over the test catalog.
func searchServer(t *testing.T) *mcp.Server {
	t.Helper()
	x := toolsearch.New()
	cat := mcptest.NewCatalog()
	var defs []json.RawMessage
	for _, name := range mcptest.ToolNames {
		defs = append(defs, cat.Tool(name))
	}
	if err := x.Set("test", toolsearch.Provider{}, defs); err != nil {
		t.Fatal(err)
	}
	return mcp.NewServer(cat, &mcp.Options{ToolSearch: &mcp.ToolSearch{Index: x}})
}

// listedAt lists the tools of a session at path (a stateless request when
// sid is "").
func listedAt(t *testing.T, hs *httpServer, path, sid string, headers ...string) []string {
	t.Helper()
	r := req{"POST", path, postHeaders(sid, headers...), `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`}
	if sid == "" {
		r = statelessPost("tools/list", "", `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{`+meta(`{}`)+`}}`, headers...)
		r.path = path
	}
	status, _, body := hs.roundtrip(r)
	var res struct {
		Result struct {
			Tools []struct{ Name string } `json:"tools"`
		} `json:"result"`
	}
	if status != 200 || json.Unmarshal([]byte(body), &res) != nil {
		t.Fatalf("tools/list at %s: %d %s", path, status, body)
	}
	var names []string
	for _, tl := range res.Result.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// TestHTTPEndpoints: an extra endpoint serves its own server at its path,
// sessions and stateless requests alike, behind the same guards; a
// session's id is unknown at the other endpoint.
func TestHTTPEndpoints(t *testing.T) {
	t.Parallel()
	const path = "/mcp/search"
	hs := startHTTP(t, &Options{Token: "s3cret", Endpoints: map[string]*mcp.Server{path: searchServer(t)}})
	auth := []string{"Authorization", "Bearer s3cret"}
	open := func(at string) string {
		t.Helper()
		status, h, body := hs.roundtrip(req{"POST", at, postHeaders("", auth...), mcptest.InitMsg("2025-11-25")})
		if status != 200 || h.Get("Mcp-Session-Id") == "" {
			t.Fatalf("initialize at %s: %d %s", at, status, body)
		}
		return h.Get("Mcp-Session-Id")
	}
	full, search := open(PathMCP), open(path)

	if got := listedAt(t, hs, PathMCP, full, auth...); len(got) == 0 || !slices.Equal(got, mcptest.ToolNames[:len(got)]) {
		t.Errorf("tools/list at %s: %v, want the catalog's first page of %v", PathMCP, got, mcptest.ToolNames)
	}
	want := []string{mcp.SearchToolName, mcp.CallToolName}
	if got := listedAt(t, hs, path, search, auth...); !slices.Equal(got, want) {
		t.Errorf("tools/list at %s: %v, want %v", path, got, want)
	}
	if got := listedAt(t, hs, path, "", auth...); !slices.Equal(got, want) {
		t.Errorf("stateless tools/list at %s: %v, want %v", path, got, want)
	}

	ping := `{"jsonrpc":"2.0","id":7,"method":"ping"}`
	for name, tc := range map[string]struct {
		r      req
		status int
		want   string
	}{
		"a session of /mcp at the other": {req{"POST", path, postHeaders(full, auth...), ping}, 404, "session not found"},
		"a session at /mcp of the other": {req{"POST", PathMCP, postHeaders(search, auth...), ping}, 404, "session not found"},
		"GET of the other's session":     {req{"GET", path, map[string]string{"Accept": "text/event-stream", "Mcp-Session-Id": full, "Authorization": "Bearer s3cret"}, ""}, 404, "session not found"},
		"no token":                       {req{"POST", path, postHeaders(search), ping}, 401, "unauthorized"},
		"foreign Origin":                 {req{"POST", path, postHeaders(search, append(auth, "Origin", "http://evil.example")...), ping}, 403, "Origin"},
		"foreign Host":                   {req{"POST", path, postHeaders(search, append(auth, "Host", "evil.example")...), ping}, 403, "DNS rebinding"},
		"a path below":                   {req{"POST", path + "/x", postHeaders(search, auth...), ping}, 404, "not found"},
		"PUT":                            {req{"PUT", path, postHeaders(search, auth...), ping}, 405, "method not allowed"},
		"DELETE ends its session":        {req{"DELETE", path, map[string]string{"Mcp-Session-Id": search, "Authorization": "Bearer s3cret"}, ""}, 204, ""},
	} {
		t.Run(name, func(t *testing.T) {
			if status, _, body := hs.roundtrip(tc.r); status != tc.status || !strings.Contains(body, tc.want) {
				t.Errorf("%s %s: %d %q, want %d and a body containing %q", tc.r.method, tc.r.path, status, body, tc.status, tc.want)
			}
		})
	}
	if status, _, body := hs.roundtrip(req{"POST", PathMCP, postHeaders(full, auth...), ping}); status != 200 {
		t.Errorf("ping at %s after the other endpoint's session ended: %d %s", PathMCP, status, body)
	}
}

// TestEndpointPaths: Check refuses an endpoint at a path Serve serves
// itself or one that is not clean and absolute.
func TestEndpointPaths(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(mcptest.NewCatalog(), nil)
	loopback := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}
	for _, p := range []string{PathMCP, PathSSE, PathMessage, PathMetrics, PathHealthz, PathReadyz, "/", "", "mcp/search", "/mcp/search/", "/a/../b", "/a?b", "/a%2Fb"} {
		if err := (&Options{Endpoints: map[string]*mcp.Server{p: srv}}).Check(loopback); !errors.Is(err, ErrEndpointPath) || !strings.Contains(err.Error(), `"`+p+`"`) {
			t.Errorf("Check with an endpoint at %q = %v, want ErrEndpointPath naming it", p, err)
		}
	}
	if err := (&Options{Endpoints: map[string]*mcp.Server{"/mcp/search": srv}}).Check(loopback); err != nil {
		t.Errorf("Check with an endpoint at /mcp/search = %v", err)
	}
}
