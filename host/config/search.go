package config

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/plughost/plughost/host/naming"
)

// Search holds the settings of the search block: its presence serves the
// tools in tool search mode (host/mcp's ToolSearch).
type Search struct {
	// Pinned is pinned: the exposed names of the tools listed in full
	// beside search_tools and call_tool, in the file's order; nil when
	// not set.
	Pinned []string
	// Limit is limit: how many tools a search returns when the query
	// says no number; 0 when not set, for the server's default (8).
	Limit int
	// AddFound is add_found: how many of the tools a session's searches
	// found join its own tools/list (the least recently found leave
	// first); 0 when not set: none.
	AddFound int
	// Path is path: the path of serve --http's listener that serves tool
	// search mode, besides /mcp serving every tool (and stdio, every
	// tool); "" when not set: the mode applies to the whole server.
	Path string
	// Embeddings is the embeddings block: rank by meaning as well; nil
	// when absent (by words only).
	Embeddings *Embeddings
	// Description is description: search_tools' own description, in
	// place of the host's; "" when not set.
	Description string
}

// Bounds of the search block's numbers: host/mcp's MaxSearchLimit (a
// search returns at most that many full definitions) and MaxAddFound (a
// session lists at most that many found tools).
const (
	maxSearchLimit = 50
	maxAddFound    = 64
	// maxSearchDescription bounds description, in bytes (as an
	// override's description is bounded).
	maxSearchDescription = maxOverrideDescription
)

// reservedPaths are the paths host/mcp/streamable serves by itself: the
// Streamable HTTP endpoint, the legacy HTTP+SSE pair, the metrics and
// the health endpoints. A search block's path must be another.
var reservedPaths = []string{"/mcp", "/sse", "/message", "/metrics", "/healthz", "/readyz"}

var searchSchema = hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "pinned"}, {Name: "limit"}, {Name: "add_found"}, {Name: "path"}, {Name: "description"}},
	Blocks:     []hcl.BlockHeaderSchema{{Type: "embeddings"}},
}

// decode reads the search block; dir is the configuration file's.
func (s *Search) decode(body hcl.Body, dir string) error {
	content, err := attributes(body, &searchSchema, func(name string, a *hcl.Attribute, v cty.Value) (err error) {
		switch name {
		case "limit":
			s.Limit, err = wholeIn(a, v, 1, maxSearchLimit)
		case "pinned":
			s.Pinned, err = pinnedNames(a, v)
		case "add_found":
			s.AddFound, err = wholeIn(a, v, 0, maxAddFound)
		case "path":
			s.Path, err = searchPath(a, v)
		case "description":
			s.Description, err = searchDescription(a, v)
		}
		return err
	})
	if err != nil {
		return err
	}
	for _, b := range content.Blocks {
		if s.Embeddings != nil {
			return diag(b.DefRange, "Duplicate embeddings block", "the search block may have one embeddings block")
		}
		s.Embeddings = &Embeddings{}
		if err := s.Embeddings.decode(b.Body, dir); err != nil {
			return err
		}
	}
	return nil
}

// pinnedNames reads pinned: a list of distinct exposed tool names.
func pinnedNames(a *hcl.Attribute, v cty.Value) ([]string, error) {
	bad := func(why string) error { return diag(a.Expr.Range(), "Invalid pinned", why) }
	if !v.Type().IsListType() && !v.Type().IsTupleType() {
		return nil, bad(`pinned must be a list of tool names, such as ["echo", "fetch"]`)
	}
	names := []string{}
	for _, e := range v.AsValueSlice() {
		if e.IsNull() || !e.IsKnown() || e.Type() != cty.String {
			return nil, bad(`pinned must be a list of tool names, such as ["echo", "fetch"]`)
		}
		n := e.AsString()
		switch {
		case !naming.ValidExposed(n):
			return nil, bad(fmt.Sprintf("%q is no tool name clients see: 1 to 64 of a-z, A-Z, 0-9, _ and - (as tools/list shows it)", n))
		case slices.Contains(names, n):
			return nil, bad(fmt.Sprintf("%q is pinned twice", n))
		}
		names = append(names, n)
	}
	return names, nil
}

// searchPath reads path: an absolute, clean URL path of letters, digits
// and -._~/ that host/mcp/streamable does not serve already.
func searchPath(a *hcl.Attribute, v cty.Value) (string, error) {
	bad := func(why string) error { return diag(a.Expr.Range(), "Invalid path", why) }
	if v.Type() != cty.String {
		return "", bad(`path must be a string such as "/mcp/search"`)
	}
	p := v.AsString()
	switch {
	case !strings.HasPrefix(p, "/") || path.Clean(p) != p:
		return "", bad(fmt.Sprintf(`%q is no clean absolute path: write it as "/mcp/search" is written (a leading /, no trailing /, no . or .. parts)`, p))
	case len(p) > 256 || strings.IndexFunc(p, func(r rune) bool { return !strings.ContainsRune(pathChars, r) }) >= 0:
		return "", bad(fmt.Sprintf("%q: a path is at most 256 of a-z, A-Z, 0-9 and -._~/", p))
	case p == "/":
		return "", bad(`"/" names no endpoint: choose a path of its own, such as "/mcp/search"`)
	case slices.Contains(reservedPaths, p):
		return "", bad(fmt.Sprintf(`%q is served already (the HTTP listener serves %s); choose another, such as "/mcp/search"`, p, strings.Join(reservedPaths, ", ")))
	}
	return p, nil
}

// searchDescription reads description: a string of 1 to
// maxSearchDescription bytes that says something.
func searchDescription(a *hcl.Attribute, v cty.Value) (string, error) {
	if v.Type() != cty.String || strings.TrimSpace(v.AsString()) == "" || len(v.AsString()) > maxSearchDescription {
		return "", diag(a.Expr.Range(), "Invalid description",
			fmt.Sprintf("description must be search_tools' description: a string of 1 to %d bytes that says what it does", maxSearchDescription))
	}
	return v.AsString(), nil
}

// pathChars are the characters a search path may hold: URL path
// characters that need no escaping.
const pathChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~/"
