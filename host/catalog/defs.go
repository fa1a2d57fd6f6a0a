package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"

	"github.com/yosida95/uritemplate/v3"

	"github.com/plughost/plughost/host/argcheck"
	"github.com/plughost/plughost/host/naming"
	"github.com/plughost/plughost/host/tool"
)

// Every definition a provider publishes (a tool, a resource, a resource
// template, a prompt) is checked and compacted once, when it is published;
// what a client is served later is these bytes, with at most the "name"
// member rewritten.

// object is a definition's JSON, compacted, and where the values of its
// top-level members are in it.
type object struct {
	json []byte
	at   map[string][2]int // member → span of its value in json
}

// parseObject compacts raw and walks its top-level members. what names the
// definition in errors ("tool definition").
func parseObject(what string, raw []byte) (*object, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, fmt.Errorf("%s is not valid JSON: %w", what, err)
	}
	o := &object{json: buf.Bytes(), at: map[string][2]int{}}
	if len(o.json) == 0 || o.json[0] != '{' {
		return nil, fmt.Errorf("%s is not a JSON object", what)
	}
	dec := json.NewDecoder(bytes.NewReader(o.json))
	if _, err := dec.Token(); err != nil { // '{'
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		key := tok.(string) // object keys are always strings
		if _, dup := o.at[key]; dup {
			return nil, fmt.Errorf("%s has member %q twice", what, key)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		end := int(dec.InputOffset()) // compact JSON: v ends exactly here
		o.at[key] = [2]int{end - len(v), end}
	}
	return o, nil
}

// member returns the value of a top-level member, nil when absent.
func (o *object) member(key string) json.RawMessage {
	at, ok := o.at[key]
	if !ok {
		return nil
	}
	return o.json[at[0]:at[1]]
}

// str returns the string value of a required member, or an error saying
// what is wrong (what names the definition).
func (o *object) str(what, key string) (string, error) {
	v := o.member(key)
	if v == nil {
		return "", fmt.Errorf("%s has no %q", what, key)
	}
	var s string
	if v[0] != '"' || json.Unmarshal(v, &s) != nil {
		return "", fmt.Errorf("%q is not a string, got %s", key, jsonKind(v))
	}
	return s, nil
}

// optStr returns the value of a member when it is a string, else "" (a
// description for people: not worth refusing a definition over).
func (o *object) optStr(key string) string {
	var s string
	if v := o.member(key); v != nil && v[0] == '"' {
		_ = json.Unmarshal(v, &s)
	}
	return s
}

// annotations returns the "annotations" member when it is an object, for
// access rules; nil otherwise.
func (o *object) annotations() map[string]any {
	var m map[string]any
	if v := o.member("annotations"); v != nil && v[0] == '{' {
		_ = json.Unmarshal(v, &m)
	}
	return m
}

// withName returns o's JSON with the top-level "name" set to name (added
// first when absent). Exposed names are plain ASCII, so Go's and JSON's
// quoting agree.
func (o *object) withName(name string) []byte {
	return setMember(o.json, o.at["name"], "name", []byte(strconv.Quote(name)))
}

// setMember returns the compact object js with the member whose value
// spans at set to value, or, when at is {0,0} (absent), with key: value
// added first.
func setMember(js []byte, at [2]int, key string, value []byte) []byte {
	if at[1] == 0 {
		out := make([]byte, 0, len(js)+len(key)+len(value)+4)
		out = append(out, '{')
		out = strconv.AppendQuote(out, key)
		out = append(out, ':')
		out = append(out, value...)
		if len(js) > 2 { // not "{}"
			out = append(out, ',')
		}
		return append(out, js[1:]...)
	}
	out := make([]byte, 0, len(js)-(at[1]-at[0])+len(value))
	out = append(out, js[:at[0]]...)
	out = append(out, value...)
	return append(out, js[at[1]:]...)
}

// jsonKind names the JSON type of a valid value, for messages.
func jsonKind(v []byte) string {
	switch {
	case len(v) == 0:
		return "nothing"
	case v[0] == '"':
		return "string"
	case v[0] == '{':
		return "object"
	case v[0] == '[':
		return "array"
	case v[0] == 't' || v[0] == 'f':
		return "boolean"
	case v[0] == 'n':
		return "null"
	}
	return "number"
}

// def is one accepted tool of a provider: its JSON, ready to have its name
// rewritten, and its compiled checks (input and output schemas).
type def struct {
	name  string // the provider's tool name
	orig  []byte // Def.JSON as given, to recognise an unchanged tool
	obj   *object
	check *argcheck.Tool
	desc  string // "description", for Exposed

	annotations map[string]any // "annotations", for access rules (tool.Item)

	// encoded is the JSON encode last returned, for the exposed name
	// encodedAs: each rebuild of the catalog encodes every tool again,
	// and a cold start of 100 plugins rebuilds it 100 times (7% of the
	// host's CPU there went to re-encoding the same tools). Only
	// rebuild, under the catalog's lock, calls encode; the bytes it
	// returned are never modified.
	encoded   []byte
	encodedAs string
}

// parseDef checks one tool definition and compiles its schemas with
// argcheck.CheckTool, the check the SDK's test helper (plugintest) applies
// too. The error says what is wrong, for a warning naming provider and
// tool.
func parseDef(name string, raw []byte) (*def, error) {
	check, err := argcheck.CheckTool(name, raw)
	if err != nil {
		return nil, err
	}
	o, err := parseObject("tool definition", raw)
	if err != nil {
		return nil, err // CheckTool has refused what parseObject would
	}
	return &def{name: name, orig: bytes.Clone(raw), obj: o, check: check, desc: o.optStr("description"), annotations: o.annotations()}, nil
}

// encode returns the tool's JSON with "name" set to exposed. The catalog's
// lock must be held.
func (d *def) encode(exposed string) []byte {
	if d.encoded == nil || d.encodedAs != exposed {
		d.encoded, d.encodedAs = d.obj.withName(exposed), exposed
	}
	return d.encoded
}

// resource is one accepted resource of a provider.
type resource struct {
	uri  string
	json []byte // compact; served as it is
	name string // "name"
	desc string // "description"

	annotations map[string]any // "annotations", for access rules (tool.Item)
}

// parseResource checks one resource definition: a JSON object with a
// string "uri", an absolute URI equal to r.URI when that is set, and a
// string "name".
func parseResource(r tool.Resource) (*resource, error) {
	const what = "resource definition"
	o, err := parseObject(what, r.JSON)
	if err != nil {
		return nil, err
	}
	uri, err := o.str(what, "uri")
	if err != nil {
		return nil, err
	}
	if r.URI != "" && uri != r.URI {
		return nil, fmt.Errorf(`the definition's "uri" %q is not the resource's URI %q`, uri, r.URI)
	}
	if err := checkURI(uri); err != nil {
		return nil, err
	}
	name, err := o.str(what, "name")
	if err != nil {
		return nil, err
	}
	return &resource{uri: uri, json: o.json, name: name, desc: o.optStr("description"), annotations: o.annotations()}, nil
}

// checkURI says why uri is not an absolute URI, as net/url parses one.
func checkURI(uri string) error {
	if uri == "" {
		return errors.New(`"uri" is empty`)
	}
	u, err := url.Parse(uri)
	if err != nil {
		return fmt.Errorf(`"uri" %q is not a URI: %w`, uri, errors.Unwrap(err))
	}
	if !validURIKey(uri) {
		return fmt.Errorf(`"uri" %q holds control characters or invalid UTF-8`, uri)
	}
	if !u.IsAbs() {
		return fmt.Errorf(`"uri" %q is not an absolute URI: it has no scheme`, uri)
	}
	return nil
}

// template is one accepted resource template of a provider.
type template struct {
	uriTemplate string
	json        []byte // compact; served as it is
	re          *regexp.Regexp
	vars        []string // the template's variable names
	name        string
	desc        string
	annotations map[string]any // "annotations", for access rules (tool.Item)
}

// parseTemplate checks one resource template: a JSON object with a string
// "uriTemplate" that parses as an RFC 6570 URI template (and equals
// t.URITemplate when that is set) and a string "name".
func parseTemplate(t tool.Template) (*template, error) {
	const what = "resource template definition"
	o, err := parseObject(what, t.JSON)
	if err != nil {
		return nil, err
	}
	raw, err := o.str(what, "uriTemplate")
	if err != nil {
		return nil, err
	}
	if t.URITemplate != "" && raw != t.URITemplate {
		return nil, fmt.Errorf(`the definition's "uriTemplate" %q is not the template's %q`, raw, t.URITemplate)
	}
	if !validURIKey(raw) {
		return nil, fmt.Errorf(`"uriTemplate" %q is empty or holds control characters`, raw)
	}
	ut, err := uritemplate.New(raw)
	if err != nil {
		return nil, fmt.Errorf(`"uriTemplate" %q is not an RFC 6570 URI template: %w`, raw, err)
	}
	re, err := templateRegexp(ut)
	if err != nil {
		return nil, fmt.Errorf(`"uriTemplate" %q cannot be matched: %w`, raw, err)
	}
	name, err := o.str(what, "name")
	if err != nil {
		return nil, err
	}
	return &template{uriTemplate: raw, json: o.json, re: re, vars: ut.Varnames(), name: name, desc: o.optStr("description"), annotations: o.annotations()}, nil
}

// templateRegexp returns the regular expression that matches the URIs of
// ut; the library panics should it build one that does not compile.
func templateRegexp(ut *uritemplate.Template) (re *regexp.Regexp, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return ut.Regexp(), nil
}

// prompt is one accepted prompt of a provider.
type prompt struct {
	name string // the provider's prompt name
	obj  *object
	args []promptArg // "arguments", in the definition's order
	desc string
}

// promptArg is one of a prompt's declared arguments.
type promptArg struct {
	name     string
	required bool
}

// parsePrompt checks one prompt definition: its name as for a tool
// (naming.CheckName), a JSON object whose "arguments", if present, is an
// array of objects, each with a distinct, non-empty string "name" and, if
// present, a boolean "required".
func parsePrompt(p tool.Prompt) (*prompt, error) {
	if err := naming.CheckName(naming.Prompt, p.Name); err != nil {
		return nil, err
	}
	o, err := parseObject("prompt definition", p.JSON)
	if err != nil {
		return nil, err
	}
	pr := &prompt{name: p.Name, obj: o, desc: o.optStr("description")}
	raw := o.member("arguments")
	if raw == nil {
		return pr, nil
	}
	var elems []json.RawMessage
	if raw[0] != '[' || json.Unmarshal(raw, &elems) != nil {
		return nil, fmt.Errorf(`"arguments" is not an array, got %s`, jsonKind(raw))
	}
	seen := map[string]bool{}
	for i, e := range elems {
		at := fmt.Sprintf(`"arguments"[%d]`, i)
		if e[0] != '{' {
			return nil, fmt.Errorf("%s is not an object, got %s", at, jsonKind(e))
		}
		var m map[string]json.RawMessage // exact keys, unlike a struct's
		_ = json.Unmarshal(e, &m)        // valid JSON: the members are raw
		var arg promptArg
		if v := m["name"]; v == nil || v[0] != '"' || json.Unmarshal(v, &arg.name) != nil {
			return nil, fmt.Errorf(`%s has no string "name"`, at)
		}
		if arg.name == "" {
			return nil, fmt.Errorf(`%s has an empty "name"`, at)
		}
		if seen[arg.name] {
			return nil, fmt.Errorf(`"arguments" declares %q more than once`, arg.name)
		}
		seen[arg.name] = true
		if v := m["required"]; v != nil {
			if k := jsonKind(v); k != "boolean" {
				return nil, fmt.Errorf(`%s "required" is not a boolean, got %s`, at, k)
			}
			arg.required = v[0] == 't'
		}
		pr.args = append(pr.args, arg)
	}
	return pr, nil
}

// hasArg reports whether the prompt declares an argument of that name.
func (p *prompt) hasArg(name string) bool {
	for _, a := range p.args {
		if a.name == name {
			return true
		}
	}
	return false
}
