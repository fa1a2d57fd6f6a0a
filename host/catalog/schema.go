package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/plughost/plughost/host/argcheck"
	"github.com/plughost/plughost/host/naming"
)

// def is one accepted tool of a provider: its JSON, ready to have its name
// rewritten, and its compiled input schema.
type def struct {
	name   string // the provider's tool name
	orig   []byte // Def.JSON as given, to recognise an unchanged tool
	json   []byte // compact Def.JSON
	nameAt [2]int // span of the top-level "name" value in json; {0,0} when absent
	schema *argcheck.Schema
	desc   string // "description", for Exposed
}

// parseDef checks one tool definition and compiles its input schema.
// The error says what is wrong, for a warning naming provider and tool.
func parseDef(name string, raw []byte) (*def, error) {
	if err := naming.CheckName(naming.Tool, name); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, fmt.Errorf("tool definition is not valid JSON: %w", err)
	}
	d := &def{name: name, orig: bytes.Clone(raw), json: buf.Bytes()}
	if len(d.json) == 0 || d.json[0] != '{' {
		return nil, errors.New("tool definition is not a JSON object")
	}

	// Walk the top-level members: find "name" (to rewrite in place, so
	// member order and unknown fields survive) and "inputSchema".
	dec := json.NewDecoder(bytes.NewReader(d.json))
	if _, err := dec.Token(); err != nil { // '{'
		return nil, fmt.Errorf("tool definition: %w", err)
	}
	var schemaRaw json.RawMessage
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("tool definition: %w", err)
		}
		key := tok.(string) // object keys are always strings
		if seen[key] {
			return nil, fmt.Errorf("tool definition has member %q twice", key)
		}
		seen[key] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("tool definition: %w", err)
		}
		end := int(dec.InputOffset()) // compact JSON: v ends exactly here
		switch key {
		case "name":
			d.nameAt = [2]int{end - len(v), end}
		case "inputSchema":
			schemaRaw = v
		case "description":
			_ = json.Unmarshal(v, &d.desc) // a non-string description is the client's problem
		}
	}
	if schemaRaw == nil {
		return nil, errors.New(`tool definition has no "inputSchema"`)
	}
	if schemaRaw[0] != '{' {
		return nil, errors.New(`"inputSchema" is not a JSON object`)
	}
	sch, err := argcheck.Compile(schemaRaw)
	if err != nil {
		return nil, fmt.Errorf("inputSchema does not compile: %w", err)
	}
	d.schema = sch
	return d, nil
}

// encode returns the tool's JSON with "name" set to exposed.
func (d *def) encode(exposed string) []byte {
	q := strconv.Quote(exposed) // exposed names are plain ASCII: Go and JSON quoting agree
	if d.nameAt[1] == 0 {
		out := make([]byte, 0, len(d.json)+len(q)+9)
		out = append(out, `{"name":`...)
		out = append(out, q...)
		if len(d.json) > 2 { // not "{}"
			out = append(out, ',')
		}
		return append(out, d.json[1:]...)
	}
	out := make([]byte, 0, len(d.json)-(d.nameAt[1]-d.nameAt[0])+len(q))
	out = append(out, d.json[:d.nameAt[0]]...)
	out = append(out, q...)
	return append(out, d.json[d.nameAt[1]:]...)
}
