package argcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/plughost/plughost/host/naming"
)

// Tool is a tool definition the host accepts, compiled: what the checks
// of its calls need. Make one with CheckTool; it is safe for concurrent
// use.
type Tool struct {
	input  *Schema
	output *Schema // nil: the tool has no outputSchema
	tasks  TaskSupport
}

// TaskSupport is a tool's MCP execution.taskSupport: whether a call of it
// may go on as a task (MCP 2026-07-28's tasks extension,
// io.modelcontextprotocol/tasks), which the provider decides call by call.
type TaskSupport string

// The values of execution.taskSupport.
const (
	// TaskForbidden, MCP's default (execution.taskSupport absent): the
	// tool's calls are never tasks.
	TaskForbidden TaskSupport = "forbidden"
	// TaskOptional: a call may go on as a task when its client accepts
	// one.
	TaskOptional TaskSupport = "optional"
	// TaskRequired: the tool runs only as a task; a client that cannot
	// take one cannot call it.
	TaskRequired TaskSupport = "required"
)

// TasksCapability is the MCP ClientCapabilities object declaring the tasks
// extension: what a client is told it needs to call a TaskRequired tool.
const TasksCapability = `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`

// CheckTool checks a tool definition as the host does when a provider
// publishes it, and compiles its schemas. name is the provider's name for
// the tool (a plugin's is the definition's "name"); def is the MCP Tool
// object. The definition is refused, with an error saying why, when:
//
//   - name is not 1 to 128 of [A-Za-z0-9_.-] (naming.CheckName);
//   - def is not a JSON object, or has a member twice;
//   - it has no "inputSchema", or one that is not a JSON object or does
//     not compile (see Compile: a reference to another document is
//     refused);
//   - it has an "outputSchema" that is not a JSON object (null included)
//     or does not compile;
//   - it has an "execution" that is not a JSON object, or whose
//     "taskSupport" is none of "forbidden", "optional" and "required"
//     (clients that check the MCP schema would refuse the whole list).
//
// A refused tool is not served: the host logs the error and lists the
// provider's other tools.
func CheckTool(name string, def []byte) (*Tool, error) {
	if err := naming.CheckName(naming.Tool, name); err != nil {
		return nil, err
	}
	m, err := members("tool definition", def)
	if err != nil {
		return nil, err
	}
	in, err := compileMember(m, "inputSchema")
	if err != nil {
		return nil, err
	}
	if in == nil {
		return nil, errors.New(`tool definition has no "inputSchema"`)
	}
	out, err := compileMember(m, "outputSchema")
	if err != nil {
		return nil, err
	}
	tasks, err := taskSupport(m)
	if err != nil {
		return nil, err
	}
	return &Tool{input: in, output: out, tasks: tasks}, nil
}

// taskSupport reads a definition's execution.taskSupport: TaskForbidden
// when absent.
func taskSupport(m map[string]json.RawMessage) (TaskSupport, error) {
	raw, ok := m["execution"]
	if !ok {
		return TaskForbidden, nil
	}
	exec, err := members(`"execution"`, raw)
	if err != nil {
		return "", err
	}
	raw, ok = exec["taskSupport"]
	if !ok {
		return TaskForbidden, nil
	}
	var ts TaskSupport
	if json.Unmarshal(raw, &ts) != nil || ts != TaskForbidden && ts != TaskOptional && ts != TaskRequired {
		return "", fmt.Errorf(`"execution.taskSupport" is %s, want "forbidden", "optional" or "required"`, bytes.TrimSpace(raw))
	}
	return ts, nil
}

// TaskSupport is the tool's execution.taskSupport (TaskForbidden when it
// declares none).
func (t *Tool) TaskSupport() TaskSupport { return t.tasks }

// CheckTasks decides, as the host does before the tool runs, what becomes
// of a call's offer of a task: clientTasks says the client accepts one
// (it declared the tasks extension). tasks says the provider may go on
// with the call as a task: the client accepts one and the tool declares
// TaskOptional or TaskRequired. msg is "" unless the call is refused,
// naming the tool as exposed: the tool runs only as a task (TaskRequired)
// and the client accepts none. The client is then told it needs
// TasksCapability (MCP error -32021, or an isError result with msg in a
// session), and the tool is not called.
func (t *Tool) CheckTasks(exposed string, clientTasks bool) (tasks bool, msg string) {
	if t.tasks == TaskRequired && !clientTasks {
		return false, fmt.Sprintf("tool %q runs only as a task: the client must declare the io.modelcontextprotocol/tasks extension", exposed)
	}
	return clientTasks && t.tasks != TaskForbidden, ""
}

// members returns the top-level members of b, by their exact names (what
// names b in errors), refusing b when it is not a JSON object or repeats a
// member.
func members(what string, b []byte) (map[string]json.RawMessage, error) {
	if !json.Valid(b) {
		var buf bytes.Buffer
		err := json.Compact(&buf, b) // for the error's text
		return nil, fmt.Errorf("%s is not valid JSON: %w", what, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, _ := dec.Token(); tok != json.Delim('{') {
		return nil, fmt.Errorf("%s is not a JSON object", what)
	}
	m := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		key := tok.(string) // object keys are always strings
		if _, dup := m[key]; dup {
			return nil, fmt.Errorf("%s has member %q twice", what, key)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		m[key] = v
	}
	return m, nil
}

// compileMember compiles the schema in member key of a definition; nil
// when it is absent.
func compileMember(m map[string]json.RawMessage, key string) (*Schema, error) {
	raw, ok := m[key]
	if !ok {
		return nil, nil
	}
	if raw = bytes.TrimSpace(raw); len(raw) == 0 || raw[0] != '{' {
		return nil, fmt.Errorf("%q is not a JSON object", key)
	}
	s, err := Compile(raw)
	if err != nil {
		return nil, fmt.Errorf("%s does not compile: %w", key, err)
	}
	return s, nil
}

// HasOutputSchema reports whether the tool declares an outputSchema, whose
// results CheckResult checks.
func (t *Tool) HasOutputSchema() bool { return t.output != nil }

// emptyObject is the arguments of a call that has none.
var emptyObject = []byte("{}")

// CheckArguments checks a call's arguments as the host does before the
// tool runs. exposed is the tool's name as the client called it, for the
// message. Absent arguments (nil, only white space, or JSON null, which
// some clients send for none) are {}: args is what the tool gets (shared
// when {}: do not modify it). msg is "" when they are valid, otherwise a
// message for the model naming every violation (up to MaxViolations) by
// JSON pointer and rule, as Schema.Check words it; the tool is not called,
// and the client gets an isError result with msg as its text.
func (t *Tool) CheckArguments(exposed string, raw []byte) (args []byte, msg string) {
	if trimmed := bytes.TrimSpace(raw); len(trimmed) == 0 || string(trimmed) == "null" {
		raw = emptyObject
	}
	return raw, t.input.Check(exposed, raw)
}

// CheckResult checks a tool's result (an MCP CallToolResult) as the host
// does before the client gets it: a tool with an outputSchema must return
// structuredContent that conforms to it (MCP: "Servers MUST provide
// structured results that conform to this schema"), so
//
//   - a result with no structuredContent (or null) is refused;
//   - so is one whose structuredContent breaks the schema, naming each
//     violation by its place ("structuredContent/count: must be integer,
//     got string"), up to MaxViolations.
//
// A result with "isError": true is exempt: a failure carries no structured
// output. A tool without an outputSchema is not checked at all (its result
// is not even parsed). It returns "" for a result the client may have,
// otherwise a message for the model and the tool's author; the host then
// answers the call with an isError result carrying it, in place of the
// tool's. exposed names the tool as the client called it.
func (t *Tool) CheckResult(exposed string, result []byte) string {
	if t.output == nil {
		return ""
	}
	m, err := members("the result", result)
	if err != nil {
		return fmt.Sprintf("tool %q returned an invalid result: %v", exposed, err)
	}
	if string(m["isError"]) == "true" {
		return ""
	}
	sc := m["structuredContent"]
	if len(sc) == 0 || string(sc) == "null" {
		return fmt.Sprintf("tool %q returned no structuredContent, but its outputSchema requires structured results", exposed)
	}
	v, err := decode(sc, "structuredContent")
	if err != nil { // cannot happen: members checked the whole result
		return fmt.Sprintf("tool %q returned an invalid result: structuredContent: %v", exposed, err)
	}
	return explain(fmt.Sprintf("tool %q returned a result that breaks its outputSchema:", exposed), t.output.s, v, inStructured)
}
