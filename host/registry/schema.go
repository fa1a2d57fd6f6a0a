package registry

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// SchemaURL is the $id of the server.json schema plughost validates
// against: version 2025-12-11, the one the official registry v1.8.9
// serves.
const SchemaURL = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"

// schemaJSON is the official schema, copied byte for byte from the Go
// module github.com/modelcontextprotocol/registry v1.8.9,
// internal/validators/schemas/2025-12-11.json (generated there from
// docs/reference/api/openapi.yaml). TestSchemaIsTheOfficialOne compares
// it with the module's file; SchemaSHA256 is its digest.
//
//go:embed schema/2025-12-11.json
var schemaJSON []byte

// SchemaSHA256 is the SHA-256 of the embedded schema.
const SchemaSHA256 = "2e1e2dc758185bfc91023df4e5ace0e1c1bdb7b7b3d6614bb9ac6b9e9a9c2f68"

var compiled = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	if err := c.AddResource(SchemaURL, doc); err != nil {
		return nil, err
	}
	return c.Compile(SchemaURL)
})

// noLoader refuses every reference outside the schema: validation never
// reaches the network.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("references to other documents are not allowed (%s)", url)
}

// Parse validates a server.json document against the official schema
// and reads it. The error names every violation (by JSON pointer) the
// validator found.
func Parse(raw []byte) (*Server, error) {
	sch, err := compiled()
	if err != nil {
		return nil, fmt.Errorf("the embedded server.json schema: %w", err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if err := sch.Validate(doc); err != nil {
		msg := err.Error()
		if ve, ok := err.(*jsonschema.ValidationError); ok {
			msg = violations(ve)
		}
		return nil, fmt.Errorf("does not follow the server.json schema 2025-12-11: %s", msg)
	}
	var s Server
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("server.json: %w", err)
	}
	return &s, nil
}

var printer = message.NewPrinter(language.English)

// maxViolations bounds the violations one error lists.
const maxViolations = 8

// violations lists the leaf violations of ve, "at /path: message", at
// most maxViolations of them.
func violations(ve *jsonschema.ValidationError) string {
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(out) >= maxViolations {
			return
		}
		if len(e.Causes) == 0 {
			out = append(out, fmt.Sprintf("at /%s: %s", strings.Join(e.InstanceLocation, "/"), e.ErrorKind.LocalizedString(printer)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return strings.Join(out, "; ")
}
