package streamable

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/internal/jsonrpc"
)

// Routing headers (SEP-2243). A stateless POST mirrors parts of its body
// into HTTP headers so that intermediaries can route it without reading
// the body; the server, which acts on the body, refuses a request whose
// headers say anything else, lest the two act on different values.
const (
	hdrMethod     = "Mcp-Method"
	hdrName       = "Mcp-Name"
	hdrParamStart = "Mcp-Param-"
)

// maxSchemaDepth bounds the walk of a tool's nested "properties" for
// x-mcp-header annotations.
const maxSchemaDepth = 32

// checkRoutingHeaders checks a stateless request's routing headers against
// its body (SEP-2243), and returns nil when they agree, else the error to
// answer with (code -32020, HTTP 400; its ID is m.ID):
//
//   - Mcp-Method is required on every request and must be the body's
//     method;
//   - Mcp-Name is required on tools/call and prompts/get, where it must be
//     params.name, on resources/read, where it must be params.uri, and on
//     tasks/get, tasks/update and tasks/cancel, where it must be
//     params.taskId;
//   - on tools/call, each property of the tool's inputSchema annotated
//     "x-mcp-header": "H" (through "properties" alone, at any depth) is
//     mirrored in the header Mcp-Param-H: when the argument has a value
//     (not null), the header is required and must equal it; when it has
//     none, the header must be absent.
//
// Header names are case-insensitive (net/http canonicalizes them); values
// are compared case-sensitively after trimming spaces and tabs around
// them. A header given more than once is refused. Mcp-Name and Mcp-Param-*
// values may be Base64 (=?base64?…?=: standard alphabet, padded, of UTF-8
// text); any other value is literal and must be visible ASCII (with spaces
// and tabs inside). Mcp-Method is always literal. A string argument must
// equal the decoded text exactly; a number must be a JSON number of the
// same value (1.0 matches 1); a boolean must be "true" or "false". An
// integer beyond ±(2^53−1), which clients may leave out, does not need its
// header; an object or array argument has none to send.
//
// m is the decoded request. toolDef returns the exposed tool's definition
// (an MCP Tool object, compact, trusted JSON) or nil when no tool has that
// name: an unknown tool, or a body without the name, is not this check's
// business (the call answers -32602) beyond Mcp-Name. MCP-Protocol-Version
// is checked elsewhere.
func checkRoutingHeaders(r *http.Request, m jsonrpc.Message, toolDef func(name string) json.RawMessage) *jsonrpc.Error {
	fail := func(msg string) *jsonrpc.Error {
		return &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: "header mismatch: " + msg, ID: m.ID}
	}
	method := string(m.Method)
	hv, problem := routingHeader(r, hdrMethod, false)
	switch {
	case problem != "":
		return fail(problem)
	case hv == nil:
		return fail("the " + hdrMethod + " header is required: it must be the request's method " + quoteValue(method))
	case *hv != method:
		return fail("the " + hdrMethod + " header is " + quoteValue(*hv) + " but the request's method is " + quoteValue(method))
	}

	var member string // what Mcp-Name mirrors
	switch method {
	case "tools/call", "prompts/get":
		member = "name"
	case "resources/read":
		member = "uri"
	case "tasks/get", "tasks/update", "tasks/cancel": // the tasks extension's (SEP-2663)
		member = "taskId"
	default:
		return nil
	}
	name, ok := jsonrpc.Unquote(jsonrpc.Member(m.Params, member))
	if !ok {
		return nil // the method answers -32602
	}
	hv, problem = routingHeader(r, hdrName, true)
	switch {
	case problem != "":
		return fail(problem)
	case hv == nil:
		return fail("the " + hdrName + " header is required on " + method + ": it must be params." + member + " " + quoteValue(name))
	case *hv != name:
		return fail("the " + hdrName + " header is " + quoteValue(*hv) + " but params." + member + " is " + quoteValue(name))
	}

	if method != "tools/call" || toolDef == nil {
		return nil
	}
	def := toolDef(name)
	if def == nil {
		return nil
	}
	args := jsonrpc.Member(m.Params, "arguments")
	var msg string
	walkHeaderParams(jsonrpc.Member(def, "inputSchema"), nil, 0, func(path []string, suffix string) bool {
		msg = checkParam(r, suffix, path, args)
		return msg == ""
	})
	if msg != "" {
		return fail(msg)
	}
	return nil
}

// walkHeaderParams calls fn with the path (property names from the
// schema's root) and the header suffix of each property reachable from
// schema through "properties" alone that carries a valid "x-mcp-header"
// (a non-empty HTTP token; others name no header a client could send),
// in the schema's order, until fn returns false. It reports whether the
// walk was not stopped.
func walkHeaderParams(schema []byte, path []string, depth int, fn func(path []string, suffix string) bool) bool {
	if depth >= maxSchemaDepth {
		return true
	}
	for k, sub := range jsonrpc.Members(jsonrpc.Member(schema, "properties")) {
		key, ok := jsonrpc.Unquote(k)
		if !ok || !jsonrpc.IsObject(sub) {
			continue
		}
		p := append(path[:len(path):len(path)], key)
		if suffix, ok := jsonrpc.Unquote(jsonrpc.Member(sub, "x-mcp-header")); ok && isHTTPToken(suffix) {
			if !fn(p, suffix) {
				return false
			}
		}
		if !walkHeaderParams(sub, p, depth+1, fn) {
			return false
		}
	}
	return true
}

// checkParam checks the header Mcp-Param-<suffix> against the argument at
// path in args, and returns what is wrong, or "".
// ambiguous reports whether obj (when an object) has a member named name
// up to case other than one exact member name: several decoders (Go's
// encoding/json, into a struct) match names regardless of case, the last
// one winning, so the header could mirror one member and the plugin read
// another.
func ambiguous(obj []byte, name string) bool {
	if !jsonrpc.IsObject(obj) {
		return false
	}
	exact, folded := 0, 0
	for k := range jsonrpc.Members(obj) {
		key, _ := jsonrpc.Unquote(k)
		switch {
		case key == name:
			exact++
		case strings.EqualFold(key, name):
			folded++
		}
	}
	return exact > 1 || folded > 0 && exact+folded > 1
}

func checkParam(r *http.Request, suffix string, path []string, args []byte) string {
	header := hdrParamStart + suffix
	v := args
	for _, k := range path {
		if ambiguous(v, k) {
			return "argument " + quoteValue(strings.Join(path, ".")) + " is ambiguous: its object has more than one member named " +
				quoteValue(k) + " up to case, and a plugin may read another than the one the " + hdrParamStart + suffix + " header mirrors"
		}
		v = jsonrpc.Member(v, k) // nil once v is not an object
	}
	arg := "argument " + quoteValue(strings.Join(path, "."))
	hv, problem := routingHeader(r, header, true)
	if problem != "" {
		return problem
	}
	if len(v) == 0 || string(v) == "null" {
		if hv != nil {
			return "the " + header + " header is " + quoteValue(*hv) + " but " + arg + " has no value (a null or absent argument has no header)"
		}
		return ""
	}
	switch v[0] {
	case '{', '[':
		if hv != nil {
			return "the " + header + " header is " + quoteValue(*hv) + " but " + arg + " is not a string, number or boolean (it cannot be mirrored in a header)"
		}
		return ""
	case '"':
		s, _ := jsonrpc.Unquote(v)
		if hv == nil {
			return "the " + header + " header is required: " + arg + " is " + quoteValue(s)
		}
		if *hv != s {
			return "the " + header + " header is " + quoteValue(*hv) + " but " + arg + " is " + quoteValue(s)
		}
		return ""
	case 't', 'f':
		if hv == nil {
			return "the " + header + " header is required: " + arg + " is " + string(v)
		}
		if *hv != string(v) {
			return "the " + header + " header is " + quoteValue(*hv) + " but " + arg + " is " + string(v)
		}
		return ""
	}
	// A number.
	if hv == nil {
		if beyondSafeInteger(v) {
			return ""
		}
		return "the " + header + " header is required: " + arg + " is " + quoteValue(string(v))
	}
	if !sameJSONNumber(*hv, string(v)) {
		return "the " + header + " header is " + quoteValue(*hv) + " but " + arg + " is the number " + quoteValue(string(v))
	}
	return ""
}

// routingHeader returns the value of r's header name, trimmed of spaces and
// tabs, and Base64-decoded when decode is set and it is in the encoded
// form; nil when the header is absent. problem says why a header present
// is unusable: given twice, characters a header value may not carry,
// Base64 that does not decode to UTF-8 text.
func routingHeader(r *http.Request, name string, decode bool) (v *string, problem string) {
	vs := r.Header.Values(name)
	switch len(vs) {
	case 0:
		return nil, ""
	case 1:
	default:
		return nil, "the " + name + " header is given " + strconv.Itoa(len(vs)) + " times; it must be given once"
	}
	s := strings.Trim(vs[0], " \t")
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t') || c > 0x7e {
			msg := "the " + name + " header " + quoteValue(s) + " holds a character other than visible ASCII, spaces and tabs"
			if decode {
				msg += " (such a value is sent as =?base64?…?=)"
			}
			return nil, msg
		}
	}
	if decode {
		if inner, ok := base64Inner(s); ok {
			b, err := base64.StdEncoding.Strict().DecodeString(inner)
			switch {
			case err != nil:
				return nil, "the " + name + " header " + quoteValue(s) + " is not valid Base64 between =?base64? and ?= (standard alphabet, with padding)"
			case !utf8.Valid(b):
				return nil, "the " + name + " header " + quoteValue(s) + " decodes to bytes that are not UTF-8 text"
			}
			s = string(b)
		}
	}
	return &s, ""
}

// base64Inner returns what lies between "=?base64?" and "?=" when s is
// exactly that form; anything else (either marker alone) is literal.
func base64Inner(s string) (string, bool) {
	const prefix, suffix = "=?base64?", "?="
	if len(s) < len(prefix)+len(suffix) || !strings.HasPrefix(s, prefix) || !strings.HasSuffix(s, suffix) {
		return "", false
	}
	return s[len(prefix) : len(s)-len(suffix)], true
}

// sameJSONNumber reports whether the header value h spells a JSON number equal
// to the JSON number raw: integers exactly, others as float64s (the
// precision of the clients that send them).
func sameJSONNumber(h, raw string) bool {
	if h == raw {
		return true
	}
	if !isJSONNumber(h) {
		return false
	}
	if isJSONInteger(h) && isJSONInteger(raw) {
		// JSON integers have no leading zeros: equal values are equal
		// spellings, but for zero's sign.
		return strings.TrimPrefix(h, "-") == "0" && strings.TrimPrefix(raw, "-") == "0"
	}
	a, errA := strconv.ParseFloat(h, 64)
	b, errB := strconv.ParseFloat(raw, 64)
	return errA == nil && errB == nil && a == b
}

// isJSONNumber reports whether s is one JSON number and nothing else.
func isJSONNumber(s string) bool {
	if s == "" {
		return false
	}
	if c := s[0]; c != '-' && (c < '0' || c > '9') {
		return false
	}
	if c := s[len(s)-1]; c < '0' || c > '9' {
		return false // also refuses whitespace, which Valid would skip
	}
	return json.Valid([]byte(s))
}

// isJSONInteger reports whether the JSON number s has no fraction or exponent.
func isJSONInteger(s string) bool { return !strings.ContainsAny(s, ".eE") }

// beyondSafeInteger reports whether the JSON number raw is an integer
// beyond ±(2^53−1), 9007199254740991: clients may send no header for it.
func beyondSafeInteger(raw []byte) bool {
	const max = "9007199254740991"
	s := strings.TrimPrefix(string(raw), "-")
	if !isJSONInteger(s) {
		return false
	}
	// No leading zeros: the longer is the greater, and at equal lengths
	// the order of the digits.
	return len(s) > len(max) || len(s) == len(max) && s > max
}

// isHTTPToken reports whether s is an HTTP token (RFC 9110 §5.6.2: 1*tchar).
func isHTTPToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// quoteValue quotes s for an error message, shortened when long.
func quoteValue(s string) string {
	const max = 120
	if len(s) > max {
		i := max
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		return strconv.Quote(s[:i]) + "…"
	}
	return strconv.Quote(s)
}
