package streamable

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/plughost/plughost/internal/jsonrpc"
)

// routingTools are the tools checkRoutingHeaders' tests know, by name.
var routingTools = map[string]string{
	// The first tool of the conformance suite's http-header-validation,
	// called with {}: no x-mcp-header.
	"json_schema_2020_12_tool": `{"name":"json_schema_2020_12_tool","inputSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}`,
	// The suite's http-custom-header-server-validation tool.
	"test_header_param": `{"name":"test_header_param","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}},"required":["region"]}}`,
	// One of each kind, nested, and annotations that name no header.
	"kinds": `{"name":"kinds","inputSchema":{"type":"object","properties":{` +
		`"limit":{"type":"integer","x-mcp-header":"Limit"},` +
		`"ratio":{"type":"number","x-mcp-header":"Ratio"},` +
		`"confirm":{"type":"boolean","x-mcp-header":"Confirm"},` +
		`"options":{"type":"object","properties":{"tenant":{"type":"string","x-mcp-header":"Tenant"}}},` +
		`"bad":{"type":"string","x-mcp-header":"Bad Name"},` +
		`"empty":{"type":"string","x-mcp-header":""},` +
		`"notString":{"type":"string","x-mcp-header":true},` +
		`"list":{"type":"array","items":{"type":"object","properties":{"x":{"type":"string","x-mcp-header":"X"}}}}}}}`,
}

func routingToolDef(name string) json.RawMessage {
	if d, ok := routingTools[name]; ok {
		return json.RawMessage(d)
	}
	return nil
}

func base64Header(s string) string {
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?="
}

// Every case of the conformance suite's http-header-validation and
// http-custom-header-server-validation scenarios (MCP 2026-07-28), and the
// rules around them.
func TestRoutingHeaders(t *testing.T) {
	t.Parallel()
	type hdr = [2]string // name, value as sent (net/http canonicalizes the name)
	call := func(tool, args string) string {
		return `{"name":"` + tool + `","arguments":` + args + `}`
	}
	region := func(v string) string { return call("test_header_param", `{"region":`+v+`}`) }
	std := []hdr{{"Mcp-Method", "tools/call"}, {"Mcp-Name", "test_header_param"}}
	withRegion := func(v string) []hdr { return append(std[:2:2], hdr{"Mcp-Param-Region", v}) }
	kinds := []hdr{{"Mcp-Method", "tools/call"}, {"Mcp-Name", "kinds"}}
	with := func(hs ...hdr) []hdr { return append(kinds[:2:2], hs...) }
	const jsonTool = "json_schema_2020_12_tool"
	jsonToolHdrs := func(name string) []hdr { return []hdr{{"Mcp-Method", "tools/call"}, {"Mcp-Name", name}} }

	tests := map[string]struct {
		method  string
		params  string // "" for none
		headers []hdr
		wantErr string // a part of the message; "" to accept
	}{
		// http-header-validation (§5).
		"suite: mismatched method header": {
			method: "tools/list", headers: []hdr{{"Mcp-Method", "prompts/list"}},
			wantErr: `the Mcp-Method header is "prompts/list" but the request's method is "tools/list"`,
		},
		"suite: missing method header": {
			method: "tools/list", params: `{}`,
			wantErr: `the Mcp-Method header is required: it must be the request's method "tools/list"`,
		},
		"suite: mismatched name header": {
			method: "tools/call", params: call(jsonTool, `{}`), headers: jsonToolHdrs("wrong_tool_name"),
			wantErr: `the Mcp-Name header is "wrong_tool_name" but params.name is "json_schema_2020_12_tool"`,
		},
		"suite: whitespace around the name header": {
			method: "tools/call", params: call(jsonTool, `{}`), headers: jsonToolHdrs("  " + jsonTool + "  "),
		},
		"suite: missing name header": {
			method: "tools/call", params: call(jsonTool, `{}`), headers: []hdr{{"Mcp-Method", "tools/call"}},
			wantErr: `the Mcp-Name header is required on tools/call: it must be params.name "json_schema_2020_12_tool"`,
		},
		"suite: lowercase header name": {method: "tools/list", headers: []hdr{{"mcp-method", "tools/list"}}},
		"suite: uppercase header name": {method: "tools/list", headers: []hdr{{"MCP-METHOD", "tools/list"}}},
		"suite: value case differs": {
			method: "tools/list", headers: []hdr{{"Mcp-Method", "TOOLS/LIST"}},
			wantErr: `the Mcp-Method header is "TOOLS/LIST" but the request's method is "tools/list"`,
		},

		// http-custom-header-server-validation (§6).
		"suite: valid base64": {method: "tools/call", params: region(`"Hello"`), headers: withRegion("=?base64?SGVsbG8=?=")},
		"a member named the same up to case": {
			method: "tools/call", params: call("test_header_param", `{"region":"us","REGION":"eu"}`), headers: withRegion("us"),
			wantErr: `argument "region" is ambiguous`,
		},
		"the same member twice": {
			method: "tools/call", params: call("test_header_param", `{"region":"us","region":"eu"}`), headers: withRegion("eu"),
			wantErr: `argument "region" is ambiguous`,
		},
		"suite: base64 without padding": {
			method: "tools/call", params: region(`"Hello"`), headers: withRegion("=?base64?SGVsbG8?="),
			wantErr: `the Mcp-Param-Region header "=?base64?SGVsbG8?=" is not valid Base64`,
		},
		"suite: base64 with invalid characters": {
			method: "tools/call", params: region(`"Hello"`), headers: withRegion("=?base64?SGVs!!!bG8=?="),
			wantErr: `the Mcp-Param-Region header "=?base64?SGVs!!!bG8=?=" is not valid Base64`,
		},
		"suite: no prefix is literal":  {method: "tools/call", params: region(`"SGVsbG8="`), headers: withRegion("SGVsbG8=")},
		"suite: no suffix is literal":  {method: "tools/call", params: region(`"=?base64?SGVsbG8="`), headers: withRegion("=?base64?SGVsbG8=")},
		"suite: missing custom header": {method: "tools/call", params: region(`"test-value"`), headers: std, wantErr: `the Mcp-Param-Region header is required: argument "region" is "test-value"`},

		// Mcp-Method and Mcp-Name.
		"method header trimmed":             {method: "tools/list", headers: []hdr{{"Mcp-Method", " \ttools/list \t"}}},
		"method header is never base64":     {method: "tools/list", headers: []hdr{{"Mcp-Method", base64Header("tools/list")}}, wantErr: "but the request's method is"},
		"method header given twice":         {method: "tools/list", headers: []hdr{{"Mcp-Method", "tools/list"}, {"Mcp-Method", "tools/list"}}, wantErr: "the Mcp-Method header is given 2 times"},
		"method header empty":               {method: "tools/list", headers: []hdr{{"Mcp-Method", ""}}, wantErr: `the Mcp-Method header is "" but`},
		"a name header where none is asked": {method: "tools/list", headers: []hdr{{"Mcp-Method", "tools/list"}, {"Mcp-Name", "whatever"}}},
		"prompts/get name":                  {method: "prompts/get", params: `{"name":"p"}`, headers: []hdr{{"Mcp-Method", "prompts/get"}, {"Mcp-Name", "p"}}},
		"prompts/get without name header": {
			method: "prompts/get", params: `{"name":"p"}`, headers: []hdr{{"Mcp-Method", "prompts/get"}},
			wantErr: `the Mcp-Name header is required on prompts/get: it must be params.name "p"`,
		},
		"resources/read uri": {method: "resources/read", params: `{"uri":"test://static-text"}`, headers: []hdr{{"Mcp-Method", "resources/read"}, {"Mcp-Name", "test://static-text"}}},
		"resources/read uri mismatch": {
			method: "resources/read", params: `{"uri":"test://static-text"}`, headers: []hdr{{"Mcp-Method", "resources/read"}, {"Mcp-Name", "test://static-binary"}},
			wantErr: `the Mcp-Name header is "test://static-binary" but params.uri is "test://static-text"`,
		},
		"resources/read base64 uri": {
			method: "resources/read", params: `{"uri":"file:///tmp/caf\u00e9.txt"}`,
			headers: []hdr{{"Mcp-Method", "resources/read"}, {"Mcp-Name", base64Header("file:///tmp/café.txt")}},
		},
		"name header raw non-ASCII": {
			method: "resources/read", params: `{"uri":"file:///tmp/café.txt"}`,
			headers: []hdr{{"Mcp-Method", "resources/read"}, {"Mcp-Name", "file:///tmp/café.txt"}},
			wantErr: "holds a character other than visible ASCII, spaces and tabs (such a value is sent as =?base64?…?=)",
		},
		"no name in the body is the method's to answer": {method: "tools/call", params: `{"arguments":{}}`, headers: []hdr{{"Mcp-Method", "tools/call"}}},
		"no params at all": {method: "resources/read", headers: []hdr{{"Mcp-Method", "resources/read"}}},

		// Mcp-Param-*: strings.
		"literal":                {method: "tools/call", params: region(`"us-west1"`), headers: withRegion("us-west1")},
		"literal trimmed":        {method: "tools/call", params: region(`"us-west1"`), headers: withRegion(" \tus-west1\t ")},
		"lowercase param header": {method: "tools/call", params: region(`"us-west1"`), headers: append(std[:2:2], hdr{"mcp-param-region", "us-west1"})},
		"literal mismatch": {
			method: "tools/call", params: region(`"us-west1"`), headers: withRegion("eu-west1"),
			wantErr: `the Mcp-Param-Region header is "eu-west1" but argument "region" is "us-west1"`,
		},
		"literal case differs":            {method: "tools/call", params: region(`"us-west1"`), headers: withRegion("US-WEST1"), wantErr: `header is "US-WEST1" but`},
		"base64 keeps spaces":             {method: "tools/call", params: region(`"  padded "`), headers: withRegion(base64Header("  padded "))},
		"base64 of a sentinel literal":    {method: "tools/call", params: region(`"=?base64?literal?="`), headers: withRegion("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=")},
		"base64 non-ASCII":                {method: "tools/call", params: region(`"Hello, 世界"`), headers: withRegion("=?base64?SGVsbG8sIOS4lueVjA==?=")},
		"base64 of the empty string":      {method: "tools/call", params: region(`""`), headers: withRegion("=?base64??=")},
		"base64 mismatch":                 {method: "tools/call", params: region(`"Hello"`), headers: withRegion(base64Header("Hallo")), wantErr: `header is "Hallo" but argument "region" is "Hello"`},
		"base64 trimmed around":           {method: "tools/call", params: region(`"Hello"`), headers: withRegion("  =?base64?SGVsbG8=?= ")},
		"base64 prefix is case-sensitive": {method: "tools/call", params: region(`"Hello"`), headers: withRegion("=?BASE64?SGVsbG8=?="), wantErr: `header is "=?BASE64?SGVsbG8=?=" but`},
		"base64 not UTF-8": {
			method: "tools/call", params: region(`"Hello"`), headers: withRegion("=?base64?/w==?="),
			wantErr: `the Mcp-Param-Region header "=?base64?/w==?=" decodes to bytes that are not UTF-8 text`,
		},
		"base64 URL alphabet":       {method: "tools/call", params: region(`"??>"`), headers: withRegion("=?base64?Pz8-?="), wantErr: "is not valid Base64"},
		"base64 space inside":       {method: "tools/call", params: region(`"Hello"`), headers: withRegion("=?base64?SGVs bG8=?="), wantErr: "is not valid Base64"},
		"base64 non-zero pad bits":  {method: "tools/call", params: region(`"Hello"`), headers: withRegion("=?base64?SGVsbG9=?="), wantErr: "is not valid Base64"},
		"raw non-ASCII":             {method: "tools/call", params: region(`"Hello, 世界"`), headers: withRegion("Hello, 世界"), wantErr: "holds a character other than visible ASCII"},
		"control character":         {method: "tools/call", params: region(`"a\u0001b"`), headers: withRegion("a\x01b"), wantErr: "holds a character other than visible ASCII"},
		"escaped argument":          {method: "tools/call", params: region(`"a\"b\\c\u0041"`), headers: withRegion(`a"b\cA`)},
		"param header given twice":  {method: "tools/call", params: region(`"x"`), headers: append(withRegion("x"), hdr{"Mcp-Param-Region", "x"}), wantErr: "the Mcp-Param-Region header is given 2 times"},
		"null argument, no header":  {method: "tools/call", params: region(`null`), headers: std},
		"absent argument no header": {method: "tools/call", params: call("test_header_param", `{}`), headers: std},
		"no arguments, no header":   {method: "tools/call", params: `{"name":"test_header_param"}`, headers: std},
		"null argument with header": {
			method: "tools/call", params: region(`null`), headers: withRegion("null"),
			wantErr: `the Mcp-Param-Region header is "null" but argument "region" has no value`,
		},
		"absent argument with header": {
			method: "tools/call", params: call("test_header_param", `{}`), headers: withRegion("us-west1"),
			wantErr: `the Mcp-Param-Region header is "us-west1" but argument "region" has no value`,
		},
		"unknown tool: no business of this check": {
			method: "tools/call", params: call("nope", `{"region":"x"}`),
			headers: []hdr{{"Mcp-Method", "tools/call"}, {"Mcp-Name", "nope"}, {"Mcp-Param-Region", "y"}},
		},
		"undeclared param headers are ignored": {method: "tools/call", params: region(`"x"`), headers: append(withRegion("x"), hdr{"Mcp-Param-Other", "y"})},
		"param headers off tools/call are ignored": {
			method: "prompts/get", params: `{"name":"test_header_param","arguments":{"region":"x"}}`,
			headers: []hdr{{"Mcp-Method", "prompts/get"}, {"Mcp-Name", "test_header_param"}},
		},

		// Mcp-Param-*: numbers, booleans, nesting, what names no header.
		"integer":               {method: "tools/call", params: call("kinds", `{"limit":42}`), headers: with(hdr{"Mcp-Param-Limit", "42"})},
		"integer as a fraction": {method: "tools/call", params: call("kinds", `{"limit":42}`), headers: with(hdr{"Mcp-Param-Limit", "42.0"})},
		"integer as exponent":   {method: "tools/call", params: call("kinds", `{"limit":42}`), headers: with(hdr{"Mcp-Param-Limit", "4.2e1"})},
		"integer base64":        {method: "tools/call", params: call("kinds", `{"limit":42}`), headers: with(hdr{"Mcp-Param-Limit", base64Header("42")})},
		"integer trimmed":       {method: "tools/call", params: call("kinds", `{"limit":42}`), headers: with(hdr{"Mcp-Param-Limit", " 42 "})},
		"negative zero":         {method: "tools/call", params: call("kinds", `{"limit":0}`), headers: with(hdr{"Mcp-Param-Limit", "-0"})},
		"integer mismatch": {
			method: "tools/call", params: call("kinds", `{"limit":42}`), headers: with(hdr{"Mcp-Param-Limit", "43"}),
			wantErr: `the Mcp-Param-Limit header is "43" but argument "limit" is the number "42"`,
		},
		"integer not a number":       {method: "tools/call", params: call("kinds", `{"limit":42}`), headers: with(hdr{"Mcp-Param-Limit", "forty-two"}), wantErr: `header is "forty-two" but argument "limit" is the number "42"`},
		"integer with leading zero":  {method: "tools/call", params: call("kinds", `{"limit":42}`), headers: with(hdr{"Mcp-Param-Limit", "042"}), wantErr: `header is "042" but`},
		"integer with plus":          {method: "tools/call", params: call("kinds", `{"limit":42}`), headers: with(hdr{"Mcp-Param-Limit", "+42"}), wantErr: `header is "+42" but`},
		"integer spelled in hex":     {method: "tools/call", params: call("kinds", `{"limit":42}`), headers: with(hdr{"Mcp-Param-Limit", "0x2a"}), wantErr: `header is "0x2a" but`},
		"integer missing header":     {method: "tools/call", params: call("kinds", `{"limit":42}`), headers: kinds, wantErr: `the Mcp-Param-Limit header is required: argument "limit" is "42"`},
		"zero still needs a header":  {method: "tools/call", params: call("kinds", `{"limit":0}`), headers: kinds, wantErr: "the Mcp-Param-Limit header is required"},
		"largest safe integer":       {method: "tools/call", params: call("kinds", `{"limit":-9007199254740991}`), headers: kinds, wantErr: "the Mcp-Param-Limit header is required"},
		"unsafe integer, no header":  {method: "tools/call", params: call("kinds", `{"limit":9007199254740993}`), headers: kinds},
		"unsafe integer, its header": {method: "tools/call", params: call("kinds", `{"limit":-9007199254740993}`), headers: with(hdr{"Mcp-Param-Limit", "-9007199254740993"})},
		"unsafe integer, exactly": {
			method: "tools/call", params: call("kinds", `{"limit":9007199254740993}`), headers: with(hdr{"Mcp-Param-Limit", "9007199254740992"}),
			wantErr: `header is "9007199254740992" but argument "limit" is the number "9007199254740993"`,
		},
		"number":          {method: "tools/call", params: call("kinds", `{"ratio":1.5}`), headers: with(hdr{"Mcp-Param-Ratio", "1.50"})},
		"number exponent": {method: "tools/call", params: call("kinds", `{"ratio":1e21}`), headers: with(hdr{"Mcp-Param-Ratio", "1e+21"})},
		"number mismatch": {method: "tools/call", params: call("kinds", `{"ratio":1.5}`), headers: with(hdr{"Mcp-Param-Ratio", "1.25"}), wantErr: `header is "1.25" but argument "ratio" is the number "1.5"`},
		"true":            {method: "tools/call", params: call("kinds", `{"confirm":true}`), headers: with(hdr{"Mcp-Param-Confirm", "true"})},
		"false":           {method: "tools/call", params: call("kinds", `{"confirm":false}`), headers: with(hdr{"Mcp-Param-Confirm", "false"})},
		"boolean base64":  {method: "tools/call", params: call("kinds", `{"confirm":false}`), headers: with(hdr{"Mcp-Param-Confirm", base64Header("false")})},
		"boolean case":    {method: "tools/call", params: call("kinds", `{"confirm":true}`), headers: with(hdr{"Mcp-Param-Confirm", "True"}), wantErr: `the Mcp-Param-Confirm header is "True" but argument "confirm" is true`},
		"boolean as 1":    {method: "tools/call", params: call("kinds", `{"confirm":true}`), headers: with(hdr{"Mcp-Param-Confirm", "1"}), wantErr: `header is "1" but argument "confirm" is true`},
		"false needs its header": {
			method: "tools/call", params: call("kinds", `{"confirm":false}`), headers: kinds,
			wantErr: `the Mcp-Param-Confirm header is required: argument "confirm" is false`,
		},
		"nested":            {method: "tools/call", params: call("kinds", `{"options":{"tenant":"acme"}}`), headers: with(hdr{"Mcp-Param-Tenant", "acme"})},
		"nested missing":    {method: "tools/call", params: call("kinds", `{"options":{"tenant":"acme"}}`), headers: kinds, wantErr: `the Mcp-Param-Tenant header is required: argument "options.tenant" is "acme"`},
		"nested null":       {method: "tools/call", params: call("kinds", `{"options":null}`), headers: kinds},
		"nested not obj":    {method: "tools/call", params: call("kinds", `{"options":"acme"}`), headers: kinds},
		"nested stray":      {method: "tools/call", params: call("kinds", `{"options":{}}`), headers: with(hdr{"Mcp-Param-Tenant", "acme"}), wantErr: `argument "options.tenant" has no value`},
		"nested null value": {method: "tools/call", params: call("kinds", `{"options":{"tenant":null}}`), headers: kinds},
		"object where a value is annotated": {
			method: "tools/call", params: call("test_header_param", `{"region":{"a":1}}`), headers: withRegion(`{"a":1}`),
			wantErr: `argument "region" is not a string, number or boolean`,
		},
		"object where a value is annotated, no header":   {method: "tools/call", params: call("test_header_param", `{"region":["a"]}`), headers: std},
		"an annotation that is no token names no header": {method: "tools/call", params: call("kinds", `{"bad":"x","empty":"y","notString":"z"}`), headers: kinds},
		"annotations under items are not reachable":      {method: "tools/call", params: call("kinds", `{"list":[{"x":"v"}]}`), headers: kinds},
		"the first failure in schema order": {
			method: "tools/call", params: call("kinds", `{"confirm":true,"limit":1}`), headers: kinds,
			wantErr: "the Mcp-Param-Limit header is required",
		},
		"all of them": {
			method: "tools/call", params: call("kinds", `{"options":{"tenant":"a c"},"confirm":true,"ratio":0.1,"limit":-3,"bad":"x"}`),
			headers: with(hdr{"Mcp-Param-Limit", "-3"}, hdr{"Mcp-Param-Ratio", "0.1"}, hdr{"Mcp-Param-Confirm", "true"}, hdr{"Mcp-Param-Tenant", "a c"}),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			body := `{"jsonrpc":"2.0","id":7,"method":"` + tc.method + `"`
			if tc.params != "" {
				body += `,"params":` + tc.params
			}
			body += "}"
			if perr := jsonrpc.Check([]byte(body)); perr != nil {
				t.Fatalf("bad test body %s: %s", body, perr.Message)
			}
			m, derr := jsonrpc.Decode([]byte(body))
			if derr != nil {
				t.Fatalf("bad test body %s: %s", body, derr.Message)
			}
			r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
			for _, h := range tc.headers {
				r.Header.Add(h[0], h[1])
			}
			werr := checkRoutingHeaders(r, m, routingToolDef)
			switch {
			case tc.wantErr == "" && werr != nil:
				t.Fatalf("refused: %d %s", werr.Code, werr.Message)
			case tc.wantErr == "":
				return
			case werr == nil:
				t.Fatalf("accepted, want an error containing %q", tc.wantErr)
			}
			if werr.Code != -32020 {
				t.Errorf("code %d, want -32020", werr.Code)
			}
			if string(werr.ID) != "7" {
				t.Errorf("ID %q, want the request's, 7", werr.ID)
			}
			if !strings.HasPrefix(werr.Message, "header mismatch: ") || !strings.Contains(werr.Message, tc.wantErr) {
				t.Errorf("message %q\nwant one starting %q and containing %q", werr.Message, "header mismatch: ", tc.wantErr)
			}
		})
	}
}

// Header names as a client writes them on the wire, in any case, reach the
// check as net/http's server reads them.
func TestRoutingHeaderNamesOnTheWire(t *testing.T) {
	t.Parallel()
	body := `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"test_header_param","arguments":{"region":"us-west1"}}}`
	m, derr := jsonrpc.Decode([]byte(body))
	if derr != nil {
		t.Fatal(derr.Message)
	}
	for _, names := range [][3]string{
		{"Mcp-Method", "Mcp-Name", "Mcp-Param-Region"},
		{"mcp-method", "mcp-name", "mcp-param-region"},
		{"MCP-METHOD", "MCP-NAME", "MCP-PARAM-REGION"},
		{"mCP-mEthod", "mcp-NAME", "Mcp-Param-REGION"},
	} {
		for _, region := range []string{"us-west1", "eu-west1"} {
			raw := "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n" +
				names[0] + ":   tools/call  \r\n" + names[1] + ": test_header_param\r\n" + names[2] + ": " + region + "\r\n" +
				"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
			r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
			if err != nil {
				t.Fatal(err)
			}
			werr := checkRoutingHeaders(r, m, routingToolDef)
			if region == "us-west1" && werr != nil {
				t.Errorf("%v: refused: %s", names, werr.Message)
			}
			if region != "us-west1" && (werr == nil || string(werr.ID) != `"a"`) {
				t.Errorf("%v: a mismatched Mcp-Param-Region gave %+v, want a -32020 with id \"a\"", names, werr)
			}
		}
	}
}
