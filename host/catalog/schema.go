package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// def is one accepted tool of a provider: its JSON, ready to have its name
// rewritten, and its compiled input schema.
type def struct {
	name   string // the provider's tool name
	orig   []byte // Def.JSON as given, to recognise an unchanged tool
	json   []byte // compact Def.JSON
	nameAt [2]int // span of the top-level "name" value in json; {0,0} when absent
	schema *jsonschema.Schema
	desc   string // "description", for Exposed
}

// parseDef checks one tool definition and compiles its input schema.
// The error says what is wrong, for a warning naming provider and tool.
func parseDef(name string, raw []byte) (*def, error) {
	if !validToolName(name) {
		return nil, fmt.Errorf("invalid tool name %q: want 1 or more of [A-Za-z0-9_.-]", name)
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
	sch, err := compileSchema(schemaRaw)
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

// schemaURL is where a tool's input schema pretends to live. Relative
// references resolve against it and then meet noLoader.
const schemaURL = "https://plughost.invalid/inputSchema.json"

// noLoader refuses every URL: a tool's schema must be self-contained.
// (The meta-schemas of the standard drafts are built into the library and
// never reach a loader.)
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("references to other documents are not allowed (%s)", url)
}

// compileSchema compiles one input schema: draft 2020-12 unless its
// "$schema" names another draft, no network or file access.
func compileSchema(raw []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	return c.Compile(schemaURL)
}

// maxViolations bounds how many violations one error result lists.
const maxViolations = 10

// validateArgs checks a call's arguments against the tool's input schema.
// It returns "" when they are valid, otherwise a message for the model that
// names every violation (up to maxViolations) by JSON pointer and rule.
func validateArgs(exposed string, sch *jsonschema.Schema, args []byte) string {
	if len(bytes.TrimSpace(args)) == 0 {
		args = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Sprintf("invalid arguments for tool %q: not valid JSON: %v", exposed, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Sprintf("invalid arguments for tool %q: not valid JSON: data after the arguments object", exposed)
	}
	if _, ok := v.(map[string]any); !ok {
		return fmt.Sprintf("invalid arguments for tool %q: arguments must be a JSON object, got %s", exposed, jsonType(v))
	}
	err := sch.Validate(v)
	if err == nil {
		return ""
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Sprintf("invalid arguments for tool %q: %v", exposed, err)
	}
	items := violations(ve)
	if len(items) == 0 { // every node was structural; fall back to the library's text
		items = []violation{{text: ve.Error()}}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "invalid arguments for tool %q:", exposed)
	if len(items) == 1 && len(items[0].sub) == 0 {
		b.WriteString(" " + items[0].text)
		return b.String()
	}
	n := 0
	writeViolations(&b, items, 0, &n)
	if n > maxViolations {
		fmt.Fprintf(&b, "\n- … and %d more", n-maxViolations)
	}
	return b.String()
}

// violation is one broken rule; sub holds the complaints of the
// alternatives of an anyOf or oneOf.
type violation struct {
	text string
	sub  []violation
}

var printer = message.NewPrinter(language.English)

// violations turns the tree rooted at e into "<pointer>: <rule>" items,
// siblings sorted (the library visits properties in map order). Nodes that
// only group their causes (allOf, $ref, the root) add no item themselves.
func violations(e *jsonschema.ValidationError) []violation {
	var causes []violation
	for _, c := range e.Causes {
		causes = append(causes, violations(c)...)
	}
	sortViolations(causes)
	at := pointer(e.InstanceLocation)
	child := func(p string) string {
		return pointer(append(e.InstanceLocation[:len(e.InstanceLocation):len(e.InstanceLocation)], p))
	}
	var out []violation
	add := func(format string, args ...any) {
		out = append(out, violation{text: fmt.Sprintf(format, args...)})
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.Reference, *kind.AllOf:
		return causes // structural: only the causes say what is wrong
	case *kind.AnyOf:
		return []violation{{text: orRoot(at) + ": must match at least one of these alternatives (anyOf):", sub: causes}}
	case *kind.OneOf:
		if len(k.Subschemas) == 0 {
			return []violation{{text: orRoot(at) + ": must match exactly one of these alternatives (oneOf):", sub: causes}}
		}
		add("%s: must match exactly one of the alternatives (oneOf), but matched alternatives %d and %d", orRoot(at), k.Subschemas[0], k.Subschemas[1])
	case *kind.Required:
		for _, p := range k.Missing {
			add("%s: missing required property", child(p))
		}
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			add("%s: unknown property, not allowed by the schema", child(p))
		}
	case *kind.Type:
		add("%s: must be %s, got %s", orRoot(at), strings.Join(k.Want, " or "), k.Got)
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = jsonText(w)
		}
		if len(want) == 1 {
			add("%s: value must be %s", orRoot(at), want[0])
		} else {
			add("%s: value must be one of %s", orRoot(at), strings.Join(want, ", "))
		}
	case *kind.Const:
		add("%s: value must be %s", orRoot(at), jsonText(k.Want))
	default:
		add("%s: %s", orRoot(at), e.ErrorKind.LocalizedString(printer))
	}
	out = append(out, causes...)
	sortViolations(out)
	return out
}

// sortViolations sorts siblings by text.
func sortViolations(vs []violation) {
	sort.SliceStable(vs, func(i, j int) bool { return vs[i].text < vs[j].text })
}

// writeViolations writes one "- " line per violation, alternatives
// indented under their anyOf/oneOf, and stops writing after maxViolations
// lines; n counts every line, written or not.
func writeViolations(b *strings.Builder, vs []violation, depth int, n *int) {
	for i, v := range vs {
		if i > 0 && len(v.sub) == 0 && len(vs[i-1].sub) == 0 && v.text == vs[i-1].text {
			continue // the same complaint twice
		}
		*n++
		if *n <= maxViolations {
			b.WriteString("\n" + strings.Repeat("  ", depth) + "- " + v.text)
		}
		writeViolations(b, v.sub, depth+1, n)
	}
}

// pointer renders an instance location as a JSON pointer (RFC 6901).
func pointer(loc []string) string {
	var b strings.Builder
	for _, tok := range loc {
		b.WriteByte('/')
		tok = strings.ReplaceAll(tok, "~", "~0")
		b.WriteString(strings.ReplaceAll(tok, "/", "~1"))
	}
	return b.String()
}

// orRoot names the arguments object itself, whose JSON pointer is "".
func orRoot(p string) string {
	if p == "" {
		return "(arguments)"
	}
	return p
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	default:
		return "object"
	}
}
