// Package argcheck checks a tool call's arguments against the tool's
// inputSchema and explains what is wrong in words a model can act on.
//
// A schema is compiled once, when its tool is published:
//
//	s, err := argcheck.Compile([]byte(`{"type":"object","required":["text"]}`))
//
// and each call is checked before it reaches the tool:
//
//	if msg := s.Check("echo", []byte(`{}`)); msg != "" {
//		// msg: invalid arguments for tool "echo": /text: missing required property
//	}
//
// Schemas are draft 2020-12 unless their "$schema" names another draft, and
// must be self-contained: a reference to another document (a URL or a file)
// is refused when compiling, so a plugin or a device can never make the host
// fetch anything.
package argcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Schema is a compiled inputSchema, safe for concurrent use.
type Schema struct{ s *jsonschema.Schema }

// Compile compiles one input schema (JSON).
func Compile(raw []byte) (*Schema, error) {
	s, err := compileSchema(raw)
	if err != nil {
		return nil, err
	}
	return &Schema{s}, nil
}

// Check checks a call's arguments (a JSON object, never absent: the
// catalog gives absent arguments their default, {}) for the named tool. It
// returns "" when they are valid, otherwise a message for the model that
// names every violation (up to MaxViolations) by JSON pointer and rule.
func (s *Schema) Check(tool string, args []byte) string {
	return validateArgs(tool, s.s, args)
}

// schemaURL is where an input schema pretends to live. Relative
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

// MaxViolations bounds how many violations one message lists.
const MaxViolations = 10

// validateArgs checks a call's arguments against the tool's input schema.
// It returns "" when they are valid, otherwise a message for the model that
// names every violation (up to MaxViolations) by JSON pointer and rule.
func validateArgs(exposed string, sch *jsonschema.Schema, args []byte) string {
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
	if n > MaxViolations {
		fmt.Fprintf(&b, "\n- … and %d more", n-MaxViolations)
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
// indented under their anyOf/oneOf, and stops writing after MaxViolations
// lines; n counts every line, written or not.
func writeViolations(b *strings.Builder, vs []violation, depth int, n *int) {
	for i, v := range vs {
		if i > 0 && len(v.sub) == 0 && len(vs[i-1].sub) == 0 && v.text == vs[i-1].text {
			continue // the same complaint twice
		}
		*n++
		if *n <= MaxViolations {
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
