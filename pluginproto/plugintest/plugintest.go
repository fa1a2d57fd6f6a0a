// Package plugintest runs a plugin's tools in a unit test through the
// checks plughost applies to them, so that the test fails exactly where a
// client of the host would.
//
// The plugin's in-process CallTool runs a handler as the host's call would, but
// it is the plugin's view: it does not know what the host refuses around
// the call. The host checks every tool definition when the plugin lists it,
// every call's arguments against the tool's inputSchema before the plugin
// sees them, and every result against the tool's outputSchema before the
// client sees it. plugintest applies those same checks, with the host's own
// code (package host/argcheck, which the host's catalog calls too), around
// that in-process call:
//
//	func TestCount(t *testing.T) {
//		p := newPlugin()
//		if err := plugintest.CheckTools(p); err != nil {
//			t.Fatal(err) // a tool the host would not list, and why
//		}
//		res, err := plugintest.CallTool(t.Context(), p, &plugintest.CallRequest{
//			Tool: "count", Arguments: json.RawMessage(`{"n":3}`),
//		})
//		if err != nil {
//			t.Fatal(err) // e.g. the arguments break inputSchema, or the result outputSchema
//		}
//		...
//	}
//
// What the host checks, and so what plugintest refuses:
//
//   - a tool definition (CheckTools, and CallTool for the tool it calls):
//     a name of 1 to 128 of [A-Za-z0-9_.-] (AddTool enforces the same
//     rule), an inputSchema object that compiles, and an outputSchema, if
//     any, that is an object and compiles. Schemas are JSON Schema draft
//     2020-12 unless "$schema" names another draft, patterns are Go's
//     regexp syntax (RE2: no lookaround), and a reference to another
//     document (a URL, a file) is refused. The host skips such a tool with
//     a warning and lists the plugin's others: clients never see it.
//   - a call's offer of a task (CallTool, CallRequest.Tasks: the client
//     accepts one): it reaches the handler only when the tool declares
//     TaskSupport, so RunAsTask reports false otherwise; a TaskRequired
//     tool called without it is refused with the
//     *pluginproto.CapabilityRequiredError naming the tasks extension
//     that the client would get (MCP error -32021), and the handler never
//     runs. CallRequest.Detach tells the test that the handler went on as
//     a task (RunAsTask reported true); the result is then the one that
//     completes the task.
//   - the arguments of a call (CallTool): a JSON object (absent, blank or
//     null arguments are {}, as the host makes them) that conforms to the
//     tool's inputSchema. The host answers others itself, with an isError
//     result naming every violation, and the handler never runs: a handler
//     test with arguments the schema forbids tests nothing a client can
//     reach.
//   - the result (CallTool): a tool with an outputSchema must return
//     structuredContent that conforms to it (MCP requires it, and strict
//     clients reject results that do not). A result with IsError set is
//     exempt: a failure carries no structured output. The host answers
//     others with an isError result naming each violation in place of the
//     tool's, and logs it at WARN for the author.
//
// The size and shape rules of the contract itself (a result must be a
// JSON object; a handler asks the client at most 16 requests per round,
// with at most 64 KiB of state) are applied by the in-process call already,
// with the code the host's Client uses. Resources and prompts are not
// covered here: ReadResource and GetPrompt run them as the host would.
//
// A refusal is an error matching ErrToolRefused, ErrBadArguments or
// ErrBadResult (errors.Is). For arguments and results its text is exactly
// the text of the isError result the client would get. The host names a
// tool by the name it exposes: the plugin's own name, unless it has a '.'
// (which becomes '_'), is over 64 characters, or another plugin offers the
// same name (then it is <plugin>__<tool>); plugintest names it by its own
// name.
package plugintest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/plughost/plughost/host/argcheck"
	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/internal/pluginwire"
	"github.com/plughost/plughost/pluginproto"
)

// Refusals, matched with errors.Is.
var (
	// ErrToolRefused: the host would not list the tool (its name, its
	// inputSchema or its outputSchema is invalid); a client calling it
	// gets "unknown tool".
	ErrToolRefused = errors.New("the host refuses the tool's definition")
	// ErrBadArguments: the host would not call the tool with these
	// arguments; the client gets an isError result with the error's text.
	ErrBadArguments = errors.New("the host refuses the arguments")
	// ErrBadResult: the host would not pass the tool's result on (it
	// breaks the tool's outputSchema); the client gets an isError result
	// with the error's text instead.
	ErrBadResult = errors.New("the host refuses the result")
	// ErrUnknownTool: p offers no tool of that name.
	ErrUnknownTool = pluginwire.ErrUnknownTool
	// ErrPluginFailed: the handler panicked; the error's text ends with
	// the panic, as the host's client reports it.
	ErrPluginFailed = pluginwire.ErrPluginFailed
)

// refusal is an error whose text is the host's message alone and that
// matches its kind.
type refusal struct {
	kind error
	msg  string
}

func (e *refusal) Error() string        { return e.msg }
func (e *refusal) Is(target error) bool { return target == e.kind }

// CheckTools checks every tool p offers now as the host checks them when
// the plugin lists its tools (argcheck.CheckTool). It returns nil when the
// host would list them all, otherwise an error naming each refused tool
// and why (one per line, each matching ErrToolRefused).
func CheckTools(p *pluginproto.Plugin) error {
	var errs []error
	for _, raw := range p.Tools() {
		if _, err := checkTool(raw); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// checkTool checks one tool definition of the plugin.
func checkTool(raw json.RawMessage) (*argcheck.Tool, error) {
	name := toolName(raw)
	t, err := argcheck.CheckTool(name, raw)
	if err != nil {
		return nil, &refusal{ErrToolRefused, fmt.Sprintf("tool %q: the host would not list it: %v", name, err)}
	}
	return t, nil
}

// toolName is the "name" of a tool definition, as the host reads it.
func toolName(raw json.RawMessage) string {
	var d struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(raw, &d) // the SDK's definitions are valid JSON
	return d.Name
}

// CallTool runs a call as the host runs one for a client: it checks the
// tool's definition (an error matching ErrToolRefused when the host would
// not list the tool), keeps req.Tasks only for a tool that declares
// TaskSupport (a TaskRequired tool without it: a
// *pluginproto.CapabilityRequiredError, and the handler does not run),
// gives absent arguments their default ({}) and checks them against the
// tool's inputSchema (ErrBadArguments; the handler does not run), runs the
// handler in-process (everything the host's call does: req's
// Progress, Log, ClientCapabilities, Input, AnswerInput and Detach work as
// there, and so do its errors), and checks the result against the tool's
// outputSchema (ErrBadResult). Otherwise it returns the MCP CallToolResult
// JSON the client would get.
//
// A tool p does not offer is an error wrapping ErrUnknownTool.
func CallTool(ctx context.Context, p *pluginproto.Plugin, req *CallRequest) (json.RawMessage, error) {
	var t *argcheck.Tool
	for _, raw := range p.Tools() {
		if toolName(raw) != req.Tool {
			continue
		}
		var err error
		if t, err = checkTool(raw); err != nil {
			return nil, err
		}
		break
	}
	if t == nil {
		return pluginhost.Of(p).CallTool(ctx, req) // ErrUnknownTool
	}
	tasks, msg := t.CheckTasks(req.Tool, req.Tasks)
	if msg != "" {
		return nil, &pluginproto.CapabilityRequiredError{Capabilities: json.RawMessage(argcheck.TasksCapability), Message: msg}
	}
	args, msg := t.CheckArguments(req.Tool, req.Arguments)
	if msg != "" {
		return nil, &refusal{ErrBadArguments, msg}
	}
	fwd := *req
	fwd.Tasks = tasks
	fwd.Arguments = bytes.Clone(args) // the handler's own, as over the wire
	res, err := pluginhost.Of(p).CallTool(ctx, &fwd)
	if err != nil {
		return res, err
	}
	if msg := t.CheckResult(req.Tool, res); msg != "" {
		return nil, &refusal{ErrBadResult, msg}
	}
	return res, nil
}
