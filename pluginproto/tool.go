package pluginproto

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/plughost/plughost/internal/pluginwire"
)

// Tool describes one tool the way MCP clients see it in tools/list.
type Tool struct {
	// Name identifies the tool: 1 to 128 of [a-zA-Z0-9_.-]. (The host shows
	// clients only names that match ^[a-zA-Z0-9_-]{1,64}$; prefer those.)
	Name string
	// Title is an optional human-readable name.
	Title string
	// Description tells the model what the tool does and when to use it.
	Description string
	// InputSchema is the JSON Schema of the arguments: a json.RawMessage, a
	// map, or anything json.Marshal turns into an object whose "type" is
	// "object". Nil means {"type":"object"} (no arguments).
	InputSchema any
	// OutputSchema, when not nil, is the JSON Schema of the result's
	// StructuredContent, with the same forms and rule as InputSchema.
	OutputSchema any
	// Annotations are optional hints about the tool's behaviour.
	Annotations *Annotations
	// TaskSupport says whether a call of the tool may go on as a task
	// (MCP 2026-07-28's tasks extension), which its handler decides with
	// Request.RunAsTask. The zero value, TaskForbidden, declares nothing:
	// the tool's calls are always answered synchronously.
	TaskSupport TaskSupport
}

// TaskSupport is a tool's MCP execution.taskSupport: whether a client may
// poll a call of it as a task instead of waiting for its result. See
// "Long calls as tasks" in the package doc.
type TaskSupport string

const (
	// TaskForbidden (the zero value) leaves execution.taskSupport out, so
	// MCP's default, "forbidden", applies: RunAsTask always reports false.
	TaskForbidden TaskSupport = ""
	// TaskOptional: a call may go on as a task when its client accepts one
	// (RunAsTask reports true), and is synchronous otherwise.
	TaskOptional TaskSupport = "optional"
	// TaskRequired: the tool runs only as a task. The host refuses a call
	// from a client that cannot take a task (MCP error -32021 naming the
	// extension) before the handler runs, so RunAsTask reports true in
	// every call the handler gets from a host.
	TaskRequired TaskSupport = "required"
)

// Annotations are hints about a tool's behaviour. Clients must not trust them
// for security decisions. A nil hint is left out and takes the MCP default.
// With Go 1.26, new(true) makes a *bool.
type Annotations struct {
	// Title is a human-readable name for the tool.
	Title string `json:"title,omitempty"`
	// ReadOnlyHint: the tool does not modify its environment (default false).
	ReadOnlyHint *bool `json:"readOnlyHint,omitempty"`
	// DestructiveHint: the tool may perform destructive updates (default true;
	// meaningful only when not read-only).
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	// IdempotentHint: calling again with the same arguments has no further
	// effect (default false; meaningful only when not read-only).
	IdempotentHint *bool `json:"idempotentHint,omitempty"`
	// OpenWorldHint: the tool talks to an open world of external entities,
	// like the web (default true).
	OpenWorldHint *bool `json:"openWorldHint,omitempty"`
}

// toolJSON is the MCP Tool object as it crosses the plugin boundary.
type toolJSON struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  *Annotations    `json:"annotations,omitempty"`
	Execution    *executionJSON  `json:"execution,omitempty"`
}

// executionJSON is the MCP ToolExecution object.
type executionJSON struct {
	TaskSupport TaskSupport `json:"taskSupport"`
}

var defaultInputSchema = json.RawMessage(`{"type":"object"}`)

// validName reports whether name is 1 to 128 of [a-zA-Z0-9_.-].
func validName(name string) bool {
	if len(name) == 0 || len(name) > 128 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '.', c == '-':
		default:
			return false
		}
	}
	return true
}

// encode validates t and returns its MCP Tool JSON.
func (t *Tool) encode() ([]byte, error) {
	if !validName(t.Name) {
		return nil, fmt.Errorf("tool name %q does not match ^[a-zA-Z0-9_.-]{1,128}$", t.Name)
	}
	in, err := objectSchema(t.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("tool %q: InputSchema: %w", t.Name, err)
	}
	if in == nil {
		in = defaultInputSchema
	}
	out, err := objectSchema(t.OutputSchema)
	if err != nil {
		return nil, fmt.Errorf("tool %q: OutputSchema: %w", t.Name, err)
	}
	var exec *executionJSON
	switch t.TaskSupport {
	case TaskForbidden:
	case TaskOptional, TaskRequired:
		exec = &executionJSON{TaskSupport: t.TaskSupport}
	default:
		return nil, fmt.Errorf("tool %q: TaskSupport %q is none of TaskForbidden (\"\"), TaskOptional and TaskRequired", t.Name, t.TaskSupport)
	}
	return json.Marshal(toolJSON{
		Name:         t.Name,
		Title:        t.Title,
		Description:  t.Description,
		InputSchema:  in,
		OutputSchema: out,
		Annotations:  t.Annotations,
		Execution:    exec,
	})
}

// objectSchema marshals a schema and checks that it is a JSON object whose
// "type" is "object". It returns nil for a nil schema.
func objectSchema(schema any) (json.RawMessage, error) {
	if schema == nil {
		return nil, nil
	}
	var b []byte
	switch s := schema.(type) {
	case json.RawMessage:
		b = s
	case []byte:
		b = s
	default:
		var err error
		if b, err = json.Marshal(schema); err != nil {
			return nil, err
		}
	}
	var probe struct {
		Type any `json:"type"`
	}
	if !pluginwire.IsObject(b) {
		return nil, fmt.Errorf("schema is not a JSON object: %.80s", b)
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, fmt.Errorf("schema is not valid JSON: %w", err)
	}
	if probe.Type != "object" {
		return nil, fmt.Errorf(`schema's "type" is %v, want "object"`, jsonString(probe.Type))
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, b); err != nil {
		return nil, fmt.Errorf("schema is not valid JSON: %w", err)
	}
	return compact.Bytes(), nil
}

func jsonString(v any) string {
	if v == nil {
		return "missing"
	}
	b, _ := json.Marshal(v)
	return string(b)
}
