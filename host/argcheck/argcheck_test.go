package argcheck_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/plughost/plughost/host/argcheck"
)

func Example() {
	s, err := argcheck.Compile([]byte(`{"type":"object",
		"properties":{"format":{"enum":["simple","detailed"]}},"required":["format"]}`))
	if err != nil {
		panic(err)
	}
	fmt.Printf("%q\n", s.Check("get_current_time", []byte(`{"format":"simple"}`)))
	fmt.Println(s.Check("get_current_time", []byte(`{}`)))
	fmt.Println(s.Check("get_current_time", []byte(`{"format":"roman"}`)))
	fmt.Println(s.Check("get_current_time", []byte(`[1]`)))
	// Output:
	// ""
	// invalid arguments for tool "get_current_time": /format: missing required property
	// invalid arguments for tool "get_current_time": /format: value must be one of "simple", "detailed"
	// invalid arguments for tool "get_current_time": arguments must be a JSON object, got array
}

// A schema must be self-contained: references to other documents are
// refused when compiling, so no tool can make the host fetch a URL or read
// a file.
func TestCompileRefusesOtherDocuments(t *testing.T) {
	t.Parallel()
	for name, ref := range map[string]string{
		"url":  "https://example.com/schema.json",
		"file": "file:///etc/passwd",
		"path": "other.json",
	} {
		_, err := argcheck.Compile([]byte(`{"type":"object","properties":{"x":{"$ref":"` + ref + `"}}}`))
		if err == nil || !strings.Contains(err.Error(), "references to other documents are not allowed") {
			t.Errorf("%s: Compile = %v, want the reference refused", name, err)
		}
	}
}

// The three checks of a tool, as the host's catalog and the SDK's test
// helper (pluginproto/plugintest) apply them: its definition when it is
// published, each call's arguments, each result.
func ExampleCheckTool() {
	t, err := argcheck.CheckTool("convert", []byte(`{"name":"convert",
		"inputSchema":{"type":"object","properties":{"km":{"type":"number","minimum":0}},"required":["km"]},
		"outputSchema":{"type":"object","properties":{"miles":{"type":"number"},"unit":{"const":"mi"}},"required":["miles"]}}`))
	if err != nil {
		panic(err)
	}
	args, msg := t.CheckArguments("convert", nil)
	fmt.Printf("%s %s\n", args, msg)
	_, msg = t.CheckArguments("convert", []byte(`{"km":-5}`))
	fmt.Println(msg)
	fmt.Printf("%q\n", t.CheckResult("convert", []byte(`{"content":[],"structuredContent":{"miles":3.1}}`)))
	fmt.Println(t.CheckResult("convert", []byte(`{"content":[],"structuredContent":{"miles":"3.1","unit":"km"}}`)))
	fmt.Println(t.CheckResult("convert", []byte(`{"content":[{"type":"text","text":"3.1 mi"}]}`)))
	fmt.Printf("%q\n", t.CheckResult("convert", []byte(`{"content":[{"type":"text","text":"no"}],"isError":true}`)))

	_, err = argcheck.CheckTool("convert", []byte(`{"inputSchema":{},"outputSchema":{"type":"integr"}}`))
	fmt.Println(err)
	// Output:
	// {} invalid arguments for tool "convert": /km: missing required property
	// invalid arguments for tool "convert": /km: minimum: got -5, want 0
	// ""
	// tool "convert" returned a result that breaks its outputSchema:
	// - structuredContent/miles: must be number, got string
	// - structuredContent/unit: value must be "mi"
	// tool "convert" returned no structuredContent, but its outputSchema requires structured results
	// ""
	// outputSchema does not compile: breaks the rules of JSON Schema:
	// - /type: must match at least one of these alternatives (anyOf):
	//   - /type: must be array, got string
	//   - /type: value must be one of "array", "boolean", "integer", "null", "number", "object", "string"
}

func TestCheckTool(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		name, def string
		want      string // the error; "" for accepted
		output    bool   // HasOutputSchema
	}{
		"minimal":                 {name: "t", def: `{"inputSchema":{}}`},
		"with outputSchema":       {name: "t", def: `{"inputSchema":{},"outputSchema":{"type":"object"}}`, output: true},
		"white space":             {name: "t", def: ` { "inputSchema" : { } , "outputSchema" : { } } `, output: true},
		"invalid name":            {name: "a b", def: `{"inputSchema":{}}`, want: `invalid tool name "a b": want 1 to 128 of [A-Za-z0-9_.-]`},
		"empty name":              {name: "", def: `{"inputSchema":{}}`, want: `invalid tool name "": want 1 to 128 of [A-Za-z0-9_.-]`},
		"not JSON":                {name: "t", def: `{"inputSchema":`, want: "tool definition is not valid JSON: unexpected end of JSON input"},
		"not an object":           {name: "t", def: `[]`, want: "tool definition is not a JSON object"},
		"member twice":            {name: "t", def: `{"inputSchema":{},"inputSchema":{}}`, want: `tool definition has member "inputSchema" twice`},
		"no inputSchema":          {name: "t", def: `{"name":"t"}`, want: `tool definition has no "inputSchema"`},
		"inputSchema not object":  {name: "t", def: `{"inputSchema":[]}`, want: `"inputSchema" is not a JSON object`},
		"inputSchema breaks":      {name: "t", def: `{"inputSchema":{"minimum":"0"}}`, want: "inputSchema does not compile: breaks the rules of JSON Schema: /minimum: must be number, got string"},
		"outputSchema null":       {name: "t", def: `{"inputSchema":{},"outputSchema":null}`, want: `"outputSchema" is not a JSON object`},
		"outputSchema not object": {name: "t", def: `{"inputSchema":{},"outputSchema":true}`, want: `"outputSchema" is not a JSON object`},
		"outputSchema dangling":   {name: "t", def: `{"inputSchema":{},"outputSchema":{"$ref":"#/$defs/x"}}`, want: `outputSchema does not compile: json-pointer in "#/$defs/x" not found`},
		"outputSchema remote":     {name: "t", def: `{"inputSchema":{},"outputSchema":{"$ref":"https://example.com/x"}}`, want: "outputSchema does not compile: references to other documents are not allowed (https://example.com/x)"},
		"execution not an object": {name: "t", def: `{"inputSchema":{},"execution":null}`, want: `"execution" is not a JSON object`},
		"taskSupport unknown":     {name: "t", def: `{"inputSchema":{},"execution":{"taskSupport":"always"}}`, want: `"execution.taskSupport" is "always", want "forbidden", "optional" or "required"`},
		"taskSupport not string":  {name: "t", def: `{"inputSchema":{},"execution":{"taskSupport":true}}`, want: `"execution.taskSupport" is true, want "forbidden", "optional" or "required"`},
	}
	for name, tc := range tests {
		tool, err := argcheck.CheckTool(tc.name, []byte(tc.def))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%s: CheckTool = %q, want %q", name, got, tc.want)
		}
		if err == nil && tool.HasOutputSchema() != tc.output {
			t.Errorf("%s: HasOutputSchema = %v", name, tool.HasOutputSchema())
		}
	}
}

// A call's offer of a task reaches the provider only for a tool that
// declares task support, and a tool that runs only as a task refuses a
// call without one.
func TestCheckTasks(t *testing.T) {
	t.Parallel()
	const refused = `tool "x" runs only as a task: the client must declare the io.modelcontextprotocol/tasks extension`
	tests := map[string]struct {
		execution   string // "" for none
		support     argcheck.TaskSupport
		offer, want bool // the client's offer; what the provider gets
		msg         string
	}{
		"no execution, offered":        {"", argcheck.TaskForbidden, true, false, ""},
		"no taskSupport":               {`{}`, argcheck.TaskForbidden, true, false, ""},
		"forbidden, offered":           {`{"taskSupport":"forbidden"}`, argcheck.TaskForbidden, true, false, ""},
		"optional, offered":            {`{"taskSupport":"optional"}`, argcheck.TaskOptional, true, true, ""},
		"optional, not offered":        {`{"taskSupport":"optional"}`, argcheck.TaskOptional, false, false, ""},
		"required, offered":            {`{"taskSupport":"required"}`, argcheck.TaskRequired, true, true, ""},
		"required, not offered":        {`{"taskSupport":"required"}`, argcheck.TaskRequired, false, false, refused},
		"other members are left as is": {`{"taskSupport":"optional","later":1}`, argcheck.TaskOptional, true, true, ""},
	}
	for name, tc := range tests {
		def := `{"inputSchema":{}}`
		if tc.execution != "" {
			def = `{"inputSchema":{},"execution":` + tc.execution + `}`
		}
		tool, err := argcheck.CheckTool("t", []byte(def))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := tool.TaskSupport(); got != tc.support {
			t.Errorf("%s: TaskSupport = %q, want %q", name, got, tc.support)
		}
		if got, msg := tool.CheckTasks("x", tc.offer); got != tc.want || msg != tc.msg {
			t.Errorf("%s: CheckTasks = %v, %q; want %v, %q", name, got, msg, tc.want, tc.msg)
		}
	}
}

func TestCheckResult(t *testing.T) {
	t.Parallel()
	const missing = `tool "t" returned no structuredContent, but its outputSchema requires structured results`
	tool, err := argcheck.CheckTool("t", []byte(`{"inputSchema":{},"outputSchema":{"type":"object","required":["a"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct{ result, want string }{
		"conforms":                   {`{"content":[],"structuredContent":{"a":1}}`, ""},
		"white space":                {` { "structuredContent" : { "a" : 1 } } `, ""},
		"isError exempts":            {`{"content":[],"isError" : true}`, ""},
		"isError false":              {`{"content":[],"isError":false}`, missing},
		"isError not a boolean":      {`{"content":[],"isError":"true"}`, missing},
		"names are case-sensitive":   {`{"StructuredContent":{"a":1}}`, missing},
		"null":                       {`{"structuredContent":null}`, missing},
		"violation":                  {`{"structuredContent":{}}`, `tool "t" returned a result that breaks its outputSchema: structuredContent/a: missing required property`},
		"not an object":              {`{"structuredContent":"a"}`, `tool "t" returned a result that breaks its outputSchema: structuredContent: must be object, got string`},
		"result not JSON":            {`{"content":`, `tool "t" returned an invalid result: the result is not valid JSON: unexpected end of JSON input`},
		"result not an object":       {`[]`, `tool "t" returned an invalid result: the result is not a JSON object`},
		"result with a member twice": {`{"structuredContent":{"a":1},"structuredContent":{}}`, `tool "t" returned an invalid result: the result has member "structuredContent" twice`},
	}
	for name, tc := range tests {
		if got := tool.CheckResult("t", []byte(tc.result)); got != tc.want {
			t.Errorf("%s: CheckResult = %q, want %q", name, got, tc.want)
		}
	}
	// Without an outputSchema nothing is checked, not even the JSON.
	plain, err := argcheck.CheckTool("t", []byte(`{"inputSchema":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := plain.CheckResult("t", []byte(`not JSON`)); got != "" {
		t.Errorf("a tool without outputSchema: CheckResult = %q", got)
	}
}

// A schema text seen before is not compiled again: the same compiled
// schema, or the same refusal, comes back (the warm start of many plugins
// whose tools share a schema pays one compilation).
func TestCompileRemembersSchemas(t *testing.T) {
	t.Parallel()
	schema := []byte(`{"type":"object","properties":{"remembered":{"type":"string"}},"required":["remembered"]}`)
	a, err := argcheck.Compile(schema)
	if err != nil {
		t.Fatal(err)
	}
	b, err := argcheck.Compile(append([]byte(nil), schema...))
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Error("the same schema text was compiled twice")
	}
	other, err := argcheck.Compile([]byte(`{"type":"object","properties":{"remembered":{"type":"integer"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if other == a {
		t.Error("another schema text got the first one's compiled schema")
	}
	if msg := other.Check("t", []byte(`{"remembered":"x"}`)); !strings.Contains(msg, "/remembered: must be integer") {
		t.Errorf("the other schema checks %q", msg)
	}
	invalid := []byte(`{"type":"object","properties":{"n":{"type":"integr"}}}`)
	_, err1 := argcheck.Compile(invalid)
	_, err2 := argcheck.Compile(invalid)
	if err1 == nil || err2 == nil || err1.Error() != err2.Error() {
		t.Errorf("an invalid schema compiled twice: %v, then %v; want the same refusal", err1, err2)
	}
}

// Tools published at once (a warm start publishes every cached plugin
// together) share remembered schemas; their calls are checked at once
// too. Run with -race.
func TestCheckToolConcurrent(t *testing.T) {
	t.Parallel()
	def := []byte(`{"name":"echo","inputSchema":{"type":"object","properties":{"concurrent":{"type":"string"}},"required":["concurrent"]}}`)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			tl, err := argcheck.CheckTool(fmt.Sprintf("echo%d", i), def)
			if err != nil {
				t.Error(err)
				return
			}
			if _, msg := tl.CheckArguments("echo", []byte(`{"concurrent":"x"}`)); msg != "" {
				t.Errorf("valid arguments refused: %s", msg)
			}
			if _, msg := tl.CheckArguments("echo", []byte(`{}`)); !strings.Contains(msg, "/concurrent: missing required property") {
				t.Errorf("missing argument: %q", msg)
			}
		})
	}
	wg.Wait()
}
