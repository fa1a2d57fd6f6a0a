package toolsearch

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// The fields of a tool's document. A term's weight depends on the field it
// is found in (see ranking).
const (
	fName   = iota // the tool's name
	fTitle         // its title (and annotations.title)
	fDesc          // its description
	fParams        // its input parameters' names, titles and descriptions
	nFields
)

// A provider's own document uses fName (its name), fTitle (its title) and
// fDesc (its description). A tool's document holds nothing of its
// provider: the provider's match is scored once, among providers, and
// added to each of its tools (see ranking).

// maxSchemaDepth bounds how deep nested parameters are read, counted in
// schemas: the input schema is 1, its properties' schemas 2, and so on
// (an "items" or "anyOf" schema is one step too); the properties of a
// schema up to that depth are read. Depth 3 reaches the fields of an
// array-of-objects parameter ({"items": {"properties": …}}).
// Deeper parts of a schema describe data shapes rather than what the tool
// is for, and a bound keeps a pathological schema cheap.
const maxSchemaDepth = 3

// maxSchemaProperties bounds how many properties of one tool are read.
const maxSchemaProperties = 256

// toolText is what the index reads of one MCP Tool object.
type toolText struct {
	name   string
	fields [nFields][]string // texts of each field
}

// ErrInvalidTool is returned (wrapped) by Set for a definition that is not
// a JSON object with a non-empty string "name".
var ErrInvalidTool = errors.New("invalid tool definition")

// readTool reads the searchable texts of an MCP Tool object.
func readTool(def json.RawMessage) (toolText, error) {
	var t struct {
		Name        string `json:"name"`
		Title       string `json:"title"`
		Description string `json:"description"`
		InputSchema any    `json:"inputSchema"`
		Annotations struct {
			Title string `json:"title"`
		} `json:"annotations"`
	}
	if err := json.Unmarshal(def, &t); err != nil {
		return toolText{}, fmt.Errorf("%w: %v", ErrInvalidTool, err)
	}
	if t.Name == "" {
		return toolText{}, fmt.Errorf("%w: no name", ErrInvalidTool)
	}
	var tt toolText
	tt.name = t.Name
	tt.fields[fName] = []string{t.Name}
	tt.fields[fTitle] = []string{t.Title, t.Annotations.Title}
	tt.fields[fDesc] = []string{t.Description}
	budget := maxSchemaProperties
	tt.fields[fParams] = schemaTexts(nil, t.InputSchema, 1, &budget)
	return tt, nil
}

// schemaTexts appends the names, titles and descriptions of the
// properties of a JSON Schema object, and of the schemas nested in them
// (properties, items, anyOf, oneOf, allOf) down to maxSchemaDepth.
func schemaTexts(dst []string, schema any, depth int, budget *int) []string {
	s, ok := schema.(map[string]any)
	if !ok || depth > maxSchemaDepth {
		return dst
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for _, name := range slices.Sorted(maps.Keys(props)) {
			if *budget <= 0 {
				return dst
			}
			*budget--
			p := props[name]
			dst = append(dst, name)
			if ps, ok := p.(map[string]any); ok {
				dst = appendString(dst, ps["title"])
				dst = appendString(dst, ps["description"])
			}
			dst = schemaTexts(dst, p, depth+1, budget)
		}
	}
	dst = schemaTexts(dst, s["items"], depth+1, budget)
	for _, k := range [...]string{"anyOf", "oneOf", "allOf"} {
		if alts, ok := s[k].([]any); ok {
			for _, alt := range alts {
				dst = schemaTexts(dst, alt, depth+1, budget)
			}
		}
	}
	return dst
}

func appendString(dst []string, v any) []string {
	if s, ok := v.(string); ok && s != "" {
		dst = append(dst, s)
	}
	return dst
}
