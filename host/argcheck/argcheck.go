// Package argcheck holds the checks plughost applies to a tool: to its
// definition when a provider publishes it, to each call's arguments (and
// its offer of a task) before the tool runs, and to each result before the
// client gets it. It explains what is wrong in words a model (or the
// tool's author) can act on.
//
// The host's catalog and the SDK's test helper, pluginproto/plugintest,
// call the same functions, so a plugin's unit test fails exactly where a
// client of the host would:
//
//	t, err := argcheck.CheckTool("count", def) // name, inputSchema, outputSchema, execution
//	tasks, refusal := t.CheckTasks("count", clientTasks) // may the call go on as a task?
//	args, msg := t.CheckArguments("count", []byte(`{"n":-5}`))
//	// msg: invalid arguments for tool "count": /n: minimum: got -5, want 0
//	msg = t.CheckResult("count", result)
//	// msg: tool "count" returned a result that breaks its outputSchema: structuredContent/count: must be integer, got string
//
// A schema on its own (a device's parameters, say) is compiled once, when
// its tool is published, and checks each call:
//
//	s, err := argcheck.Compile([]byte(`{"type":"object","required":["text"]}`))
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
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/plughost/plughost/internal/jsonrpc"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Schema is a compiled JSON Schema (a tool's inputSchema or outputSchema),
// safe for concurrent use.
type Schema struct{ s *jsonschema.Schema }

// Compile compiles one schema (JSON). Its error says what is wrong in
// argcheck's words: a schema that breaks its draft's meta-schema names
// each violation by JSON pointer into the schema ("/properties/n/type:
// value must be one of …"); a reference to another document is refused
// naming it.
//
// A schema text compiled before (byte for byte) is not compiled again:
// its outcome, the same *Schema or the same error, is remembered (see
// memo.go).
func Compile(raw []byte) (*Schema, error) {
	key := sha256.Sum256(raw)
	if c, ok := remembered(key); ok {
		return c.s, c.err
	}
	var c compiled
	if s, err := compileSchema(raw); err != nil {
		c.err = compileError(err)
	} else {
		c.s = &Schema{s}
	}
	remember(key, len(raw), c)
	return c.s, c.err
}

// compileError rewords the library's compile errors, which name the
// schema by the URL it pretends to live at and every grouping node of a
// meta-schema failure.
func compileError(err error) error {
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		if ve, ok := sve.Err.(*jsonschema.ValidationError); ok {
			if msg := describe("breaks the rules of JSON Schema:", violations(ve, inSchema)); msg != "" {
				return errors.New(msg)
			}
		}
	}
	var le *jsonschema.LoadURLError
	if errors.As(err, &le) && le.Err != nil {
		return le.Err // noLoader's refusal, naming the URL
	}
	return errors.New(strings.ReplaceAll(err.Error(), schemaURL, ""))
}

// Check checks a call's arguments (a JSON object, never absent: the
// catalog gives absent arguments their default, {}) for the named tool. It
// returns "" when they are valid, otherwise a message for the model that
// names every violation (up to MaxViolations) by JSON pointer and rule.
func (s *Schema) Check(tool string, args []byte) string {
	return validateArgs(tool, s.s, args)
}

// schemaURL is where a schema pretends to live. Relative
// references resolve against it and then meet noLoader.
const schemaURL = "https://plughost.invalid/inputSchema.json"

// noLoader refuses every URL: a tool's schema must be self-contained.
// (The meta-schemas of the standard drafts are built into the library and
// never reach a loader.)
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("references to other documents are not allowed (%s)", url)
}

// compileSchema compiles one schema: draft 2020-12 unless its
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
	v, err := decode(args, "the arguments object")
	if err != nil {
		return argsHead(exposed) + " not valid JSON: " + err.Error()
	}
	if _, ok := v.(map[string]any); !ok {
		return fmt.Sprintf("%s arguments must be a JSON object, got %s", argsHead(exposed), jsonType(v))
	}
	if sch.Validate(v) == nil { // the common case, with no message to build
		return ""
	}
	return explain(argsHead(exposed), sch, v, inArguments)
}

// argsHead begins the message that refuses a call's arguments.
func argsHead(exposed string) string {
	return fmt.Sprintf("invalid arguments for tool %q:", exposed)
}

// decode decodes one JSON value, numbers as json.Number (as the schema
// library wants them: exact), and nothing after it (what names the value
// in that error). Valid JSON, every call's case, is decoded by
// jsonrpc.Value (a third of the allocations of a Decoder, see there);
// the Decoder decodes the rest to name what is wrong.
func decode(b []byte, what string) (any, error) {
	if json.Valid(b) {
		return jsonrpc.Value(b), nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after " + what)
	}
	return v, nil
}

// explain validates v against sch and returns "" when it is valid,
// otherwise head followed by every violation (up to MaxViolations), each
// located in the words of pl: on the same line when there is one, else
// one "- " line each.
func explain(head string, sch *jsonschema.Schema, v any, pl place) string {
	err := sch.Validate(v)
	if err == nil {
		return ""
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Sprintf("%s %v", head, err)
	}
	items := violations(ve, pl)
	if len(items) == 0 { // every node was structural; fall back to the library's text
		items = []violation{{text: ve.Error()}}
	}
	return describe(head, items)
}

// describe returns head followed by the violations: on the same line when
// there is one, else one "- " line each (up to MaxViolations); "" when
// there are none.
func describe(head string, items []violation) string {
	if len(items) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(head)
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

// place is where a checked value sits, which names the locations of its
// violations: in a call's arguments, a JSON pointer ("/n"), the object
// itself being "(arguments)"; in a result's structured content, the same
// pointer after the member's name ("structuredContent/n"), the object
// itself being "structuredContent".
type place struct{ prefix, root string }

var (
	inArguments  = place{"", "(arguments)"}
	inStructured = place{"structuredContent", "structuredContent"}
	inSchema     = place{"", "(schema)"} // a schema checked against its meta-schema
)

// at names the value at an instance location.
func (pl place) at(loc []string) string {
	if len(loc) == 0 {
		return pl.root
	}
	return pl.prefix + pointer(loc)
}

// violation is one broken rule; sub holds the complaints of the
// alternatives of an anyOf or oneOf.
type violation struct {
	text string
	sub  []violation
}

var printer = message.NewPrinter(language.English)

// violations turns the tree rooted at e into "<location>: <rule>" items
// (locations named as pl names them), siblings sorted (the library visits
// properties in map order). Nodes that only group their causes (allOf,
// $ref, the root) add no item themselves.
func violations(e *jsonschema.ValidationError, pl place) []violation {
	var causes []violation
	for _, c := range e.Causes {
		causes = append(causes, violations(c, pl)...)
	}
	sortViolations(causes)
	at := pl.at(e.InstanceLocation)
	child := func(p string) string {
		return pl.at(append(e.InstanceLocation[:len(e.InstanceLocation):len(e.InstanceLocation)], p))
	}
	var out []violation
	add := func(format string, args ...any) {
		out = append(out, violation{text: fmt.Sprintf(format, args...)})
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.Reference, *kind.AllOf:
		return causes // structural: only the causes say what is wrong
	case *kind.AnyOf:
		return []violation{{text: at + ": must match at least one of these alternatives (anyOf):", sub: causes}}
	case *kind.OneOf:
		if len(k.Subschemas) == 0 {
			return []violation{{text: at + ": must match exactly one of these alternatives (oneOf):", sub: causes}}
		}
		add("%s: must match exactly one of the alternatives (oneOf), but matched alternatives %d and %d", at, k.Subschemas[0], k.Subschemas[1])
	case *kind.Required:
		for _, p := range k.Missing {
			add("%s: missing required property", child(p))
		}
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			add("%s: unknown property, not allowed by the schema", child(p))
		}
	case *kind.Type:
		add("%s: must be %s, got %s", at, strings.Join(k.Want, " or "), k.Got)
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = jsonText(w)
		}
		if len(want) == 1 {
			add("%s: value must be %s", at, want[0])
		} else {
			add("%s: value must be one of %s", at, strings.Join(want, ", "))
		}
	case *kind.Const:
		add("%s: value must be %s", at, jsonText(k.Want))
	default:
		add("%s: %s", at, e.ErrorKind.LocalizedString(printer))
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
