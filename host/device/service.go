package device

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/plughost/plughost/host/argcheck"
	"github.com/plughost/plughost/host/naming"
)

// service is one registered service: an MCP tool of the device.
type service struct {
	name   string
	json   json.RawMessage // the MCP Tool object
	schema *argcheck.Schema
}

// parseService turns one entry of register's "services" into a tool:
// description → description, parameters → inputSchema ({"type":"object"}
// when absent; "type": "object" added when missing).
func parseService(name string, raw json.RawMessage) (*service, error) {
	if err := naming.CheckName(naming.Tool, name); err != nil {
		return nil, err
	}
	var def struct {
		Description json.RawMessage `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	if err := json.Unmarshal(raw, &def); err != nil {
		return nil, fmt.Errorf("not an object with description and parameters: %v", err)
	}
	var desc string
	if len(def.Description) > 0 && string(def.Description) != "null" {
		if err := json.Unmarshal(def.Description, &desc); err != nil {
			return nil, errors.New(`"description" must be a string`)
		}
	}
	var params map[string]json.RawMessage
	if len(def.Parameters) > 0 && string(def.Parameters) != "null" {
		if err := json.Unmarshal(def.Parameters, &params); err != nil || params == nil {
			return nil, errors.New(`"parameters" must be a JSON Schema object`)
		}
	}
	if params == nil {
		params = map[string]json.RawMessage{}
	}
	if t, ok := params["type"]; !ok {
		params["type"] = json.RawMessage(`"object"`)
	} else if string(bytes.TrimSpace(t)) != `"object"` {
		return nil, fmt.Errorf(`"parameters" must have "type": "object", not %s`, t)
	}
	schemaJSON, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf(`"parameters": %v`, err)
	}
	sch, err := argcheck.Compile(schemaJSON)
	if err != nil {
		return nil, fmt.Errorf(`"parameters" is not a valid JSON Schema: %v`, err)
	}
	toolJSON, err := json.Marshal(struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		InputSchema json.RawMessage `json:"inputSchema"`
	}{name, desc, schemaJSON})
	if err != nil {
		return nil, err
	}
	return &service{name: name, json: toolJSON, schema: sch}, nil
}

// validate checks a call's arguments against the service's schema. It
// returns "" when they are valid, else a message for the model.
func (s *service) validate(args []byte) string { return s.schema.Check(s.name, args) }
