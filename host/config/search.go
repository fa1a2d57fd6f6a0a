package config

import (
	"fmt"
	"slices"

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
	// Embeddings is the embeddings block: rank by meaning as well; nil
	// when absent (by words only).
	Embeddings *Embeddings
}

// maxSearchLimit is host/mcp's MaxSearchLimit: a search returns at most
// that many full definitions.
const maxSearchLimit = 50

var searchSchema = hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "pinned"}, {Name: "limit"}},
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
