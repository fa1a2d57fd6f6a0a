package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/host/argcheck"
	"github.com/plughost/plughost/host/tool"
)

// Tool arguments are checked against the tool's inputSchema before the
// provider sees them.

// Local references, $defs, the draft named by $schema, and the wording of
// rules the main validation test does not cover.
func TestSchemaRules(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		schema   string
		args     string
		wantErr  string // "" when valid
		wantSkip bool
	}{
		"local $ref to $defs": {
			schema:  `{"type":"object","properties":{"n":{"$ref":"#/$defs/pos"}},"$defs":{"pos":{"type":"integer","minimum":1}}}`,
			args:    `{"n":0}`,
			wantErr: `invalid arguments for tool "t": /n: minimum: got 0, want 1`,
		},
		"draft-07 by $schema": {
			schema:  `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"type":"string"}},"definitions":{"x":{}}}`,
			args:    `{"a":1}`,
			wantErr: `invalid arguments for tool "t": /a: must be string, got number`,
		},
		"draft 2020-12 by default: prefixItems": {
			schema:  `{"type":"object","properties":{"pair":{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}]}}}`,
			args:    `{"pair":["a","b"]}`,
			wantErr: `invalid arguments for tool "t": /pair/1: must be integer, got string`,
		},
		"a rule on the arguments object itself": {
			schema:  `{"type":"object","minProperties":1}`,
			args:    `{}`,
			wantErr: `invalid arguments for tool "t": (arguments): minProperties: got 0, want 1`,
		},
		"oneOf matching two": {
			schema:  `{"type":"object","properties":{"n":{"oneOf":[{"type":"integer"},{"minimum":0}]}}}`,
			args:    `{"n":1}`,
			wantErr: `invalid arguments for tool "t": /n: must match exactly one of the alternatives (oneOf), but matched alternatives 0 and 1`,
		},
		"oneOf matching none": {
			schema: `{"type":"object","properties":{"n":{"oneOf":[{"type":"integer"},{"type":"integer","minimum":0}]}}}`,
			args:   `{"n":"x"}`,
			wantErr: "invalid arguments for tool \"t\":\n" +
				"- /n: must match exactly one of these alternatives (oneOf):\n" +
				"  - /n: must be integer, got string",
		},
		"const object": {
			schema:  `{"type":"object","properties":{"o":{"const":{"a":[1]}}}}`,
			args:    `{"o":{}}`,
			wantErr: `invalid arguments for tool "t": /o: value must be {"a":[1]}`,
		},
		"single enum value": {
			schema:  `{"type":"object","properties":{"v":{"enum":[1.5]}}}`,
			args:    `{"v":2}`,
			wantErr: `invalid arguments for tool "t": /v: value must be 1.5`,
		},
		"pointer escaping": {
			schema:  `{"type":"object","properties":{"a/b~c":{"type":"string"}}}`,
			args:    `{"a/b~c":true}`,
			wantErr: `invalid arguments for tool "t": /a~1b~0c: must be string, got boolean`,
		},
		"valid": {
			schema: `{"type":"object","properties":{"n":{"$ref":"#/$defs/pos"}},"$defs":{"pos":{"type":"integer"}}}`,
			args:   `{"n":3}`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			p := &fakeProvider{name: "p", tools: []tool.Def{toolDef("t", tc.schema)}}
			f.cat.Set(p)
			if s := f.cat.Skipped(); len(s) != 0 {
				t.Fatalf("skipped: %+v", s)
			}
			res := clientResult(t, f.cat, &tool.Call{Name: "t", Arguments: json.RawMessage(tc.args)})
			want := tool.TextResult("p:t")
			if tc.wantErr != "" {
				want = tool.ErrorResult(tc.wantErr)
			}
			if diff := cmp.Diff(string(want), string(res)); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidation(t *testing.T) {
	t.Parallel()
	const schema = `{
		"type": "object",
		"properties": {
			"filename": {"type": "string", "minLength": 1},
			"format": {"enum": ["simple", "detailed"]},
			"count": {"type": "integer", "minimum": 0},
			"options": {
				"type": "object",
				"properties": {
					"depth": {"type": "integer"},
					"tags": {"type": "array", "items": {"type": "string"}}
				},
				"required": ["depth"],
				"additionalProperties": false
			},
			"id": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
			"mode": {"const": "fast"}
		},
		"required": ["filename"]
	}`
	tests := map[string]struct {
		args string
		want string // the isError text; "" means the call goes through
	}{
		"valid":                {args: `{"filename":"a.txt","format":"simple","options":{"depth":2,"tags":["x"]}}`},
		"empty arguments":      {args: ``, want: `invalid arguments for tool "create_file": /filename: missing required property`},
		"required":             {args: `{}`, want: `invalid arguments for tool "create_file": /filename: missing required property`},
		"enum":                 {args: `{"filename":"a","format":"fancy"}`, want: `invalid arguments for tool "create_file": /format: value must be one of "simple", "detailed"`},
		"type":                 {args: `{"filename":7}`, want: `invalid arguments for tool "create_file": /filename: must be string, got number`},
		"const":                {args: `{"filename":"a","mode":"slow"}`, want: `invalid arguments for tool "create_file": /mode: value must be "fast"`},
		"nested required":      {args: `{"filename":"a","options":{}}`, want: `invalid arguments for tool "create_file": /options/depth: missing required property`},
		"nested type in array": {args: `{"filename":"a","options":{"depth":1,"tags":["x",3]}}`, want: `invalid arguments for tool "create_file": /options/tags/1: must be string, got number`},
		"nested unknown property": {
			args: `{"filename":"a","options":{"depth":1,"colour":"red"}}`,
			want: `invalid arguments for tool "create_file": /options/colour: unknown property, not allowed by the schema`,
		},
		"other rules use the library's words": {
			args: `{"filename":"","count":-1}`,
			want: "invalid arguments for tool \"create_file\":\n- /count: minimum: got -1, want 0\n- /filename: minLength: got 0, want 1",
		},
		"all violations, sorted": {
			args: `{"format":"x","count":1.5,"options":{"depth":"deep"}}`,
			want: "invalid arguments for tool \"create_file\":\n" +
				"- /count: must be integer, got number\n" +
				"- /filename: missing required property\n" +
				"- /format: value must be one of \"simple\", \"detailed\"\n" +
				"- /options/depth: must be integer, got string",
		},
		"anyOf lists its alternatives": {
			args: `{"filename":"a","id":true}`,
			want: "invalid arguments for tool \"create_file\":\n" +
				"- /id: must match at least one of these alternatives (anyOf):\n" +
				"  - /id: must be integer, got boolean\n" +
				"  - /id: must be string, got boolean",
		},
		"array":          {args: `["a.txt"]`, want: `invalid arguments for tool "create_file": arguments must be a JSON object, got array`},
		"string":         {args: `"a.txt"`, want: `invalid arguments for tool "create_file": arguments must be a JSON object, got string`},
		"null":           {args: `null`, want: `invalid arguments for tool "create_file": /filename: missing required property`},
		"number":         {args: `12`, want: `invalid arguments for tool "create_file": arguments must be a JSON object, got number`},
		"not JSON":       {args: `{"filename":`, want: `invalid arguments for tool "create_file": not valid JSON: unexpected EOF`},
		"trailing value": {args: `{"filename":"a"} {}`, want: `invalid arguments for tool "create_file": not valid JSON: data after the arguments object`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			p := &fakeProvider{name: "files", tools: []tool.Def{toolDef("create_file", schema)}}
			f.cat.Set(p)
			res := clientResult(t, f.cat, &tool.Call{Name: "create_file", Arguments: json.RawMessage(tc.args)})
			if tc.want == "" {
				if diff := cmp.Diff(string(tool.TextResult("files:create_file")), string(res)); diff != "" {
					t.Errorf("result (-want +got):\n%s", diff)
				}
				if n := len(p.received()); n != 1 {
					t.Errorf("provider called %d times, want 1", n)
				}
				return
			}
			if diff := cmp.Diff(tc.want, errorText(t, res)); diff != "" {
				t.Errorf("error text (-want +got):\n%s", diff)
			}
			if n := len(p.received()); n != 0 {
				t.Errorf("provider called %d times with invalid arguments", n)
			}
		})
	}
}

// A flood of violations is cut after argcheck.MaxViolations lines.
func TestValidationBounded(t *testing.T) {
	t.Parallel()
	var props, req []string
	for i := range 25 {
		props = append(props, fmt.Sprintf(`"p%02d":{"type":"string"}`, i))
		req = append(req, fmt.Sprintf(`"p%02d"`, i))
	}
	schema := fmt.Sprintf(`{"type":"object","properties":{%s},"required":[%s]}`, strings.Join(props, ","), strings.Join(req, ","))
	f := newFixture(t, nil)
	f.cat.Set(&fakeProvider{name: "p", tools: []tool.Def{toolDef("t", schema)}})
	text := errorText(t, clientResult(t, f.cat, &tool.Call{Name: "t", Arguments: json.RawMessage(`{}`)}))
	lines := strings.Split(text, "\n")
	if len(lines) != 1+argcheck.MaxViolations+1 {
		t.Fatalf("got %d lines, want header + %d + summary:\n%s", len(lines), argcheck.MaxViolations, text)
	}
	if lines[1] != "- /p00: missing required property" || lines[len(lines)-1] != "- … and 15 more" {
		t.Errorf("unexpected text:\n%s", text)
	}
}

// clientResult calls the catalog and returns what a client gets as the
// result: the provider's, or tool.Outcome's for invalid arguments.
func clientResult(t *testing.T, cat *Catalog, call *tool.Call) json.RawMessage {
	t.Helper()
	res, err := cat.CallTool(context.Background(), call)
	if err == nil {
		return res
	}
	if !errors.Is(err, tool.ErrBadArguments) {
		t.Fatalf("CallTool: %v, want nil or an error wrapping tool.ErrBadArguments", err)
	}
	res, rpcErr := tool.Outcome(err)
	if rpcErr != nil {
		t.Fatalf("Outcome(%v) is a JSON-RPC error %+v, want an isError result", err, rpcErr)
	}
	return res
}

// errorText returns the text of an isError CallToolResult.
func errorText(t *testing.T, res json.RawMessage) string {
	t.Helper()
	var r struct {
		Content []struct{ Type, Text string }
		IsError bool
	}
	if err := json.Unmarshal(res, &r); err != nil {
		t.Fatalf("result %s: %v", res, err)
	}
	if !r.IsError || len(r.Content) != 1 || r.Content[0].Type != "text" {
		t.Fatalf("result %s is not an isError text result", res)
	}
	return r.Content[0].Text
}
