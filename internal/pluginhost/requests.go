package pluginhost

import (
	"encoding/json"
	"fmt"
)

// CallRequest is one call of a tool, for Plugin.CallTool (and
// plugintest.CallTool) and the host's Client.CallTool (package
// host/pluginclient), which share its shape.
type CallRequest struct {
	// Tool is the tool's name as the plugin gave it.
	Tool string
	// Arguments is the JSON object of arguments; nil means {}. It is passed
	// to the plugin as is.
	Arguments json.RawMessage
	// Progress receives the plugin's progress reports. Nil means the client
	// did not ask for progress, and the plugin sends none.
	Progress func(progress, total float64, message string)
	// Log receives the plugin's log messages: an MCP level, the logger name
	// (empty for the plugin itself) and any JSON value. Nil drops them.
	Log func(level, logger string, data json.RawMessage)
	// ClientCapabilities is the MCP ClientCapabilities object the client
	// declared, as JSON; nil means {} (none). The plugin's handler checks it
	// before asking the client for anything. Ignored by plugins of
	// contract 1.
	ClientCapabilities json.RawMessage
	// Input is set on the retry of a call that answered
	// *InputRequiredError: the client's answers, and the error's State.
	Input *Input
	// AnswerInput is for Plugin.CallTool only (Client.CallTool ignores
	// it): it answers the handler's requests to the client, and CallTool
	// runs the input rounds itself, as a host would. Nil returns the
	// *InputRequiredError.
	AnswerInput AnswerFunc
	// Tasks says the call may go on as a task (MCP 2026-07-28's tasks
	// extension): the client accepts one, and the tool's definition
	// declares execution.taskSupport. The plugin's handler then decides
	// (Request.RunAsTask), and says so through Detach. Ignored by plugins
	// of contract 1, which never go on as tasks.
	Tasks bool
	// TraceParent and TraceState are the call's W3C trace context (see
	// Request.TraceParent), passed to the plugin's handler as they are;
	// "" for none. The caller checks them (the host drops an invalid
	// traceparent). Ignored by plugins of contract 1.
	TraceParent, TraceState string
	// Caller is who the call acts for (see Caller); nil for nobody.
	// Ignored by plugins of contract 1.
	Caller *Caller
	// Detach, with Tasks, is called when the plugin says the call goes on
	// as a task: at most once per call, before its answer, in order with
	// Progress and Log and on the goroutine that runs them. The host then
	// answers the client with a task, and the call's answer (which still
	// comes, as for any call) ends it. Without Tasks it is never called.
	Detach func()
}

// ReadRequest is one resources/read, for Client.ReadResource and
// Plugin.ReadResource.
type ReadRequest struct {
	// URI is the resource's URI: one the plugin listed, or one matching
	// one of its templates.
	URI string
	// ClientCapabilities and Input are as in CallRequest.
	ClientCapabilities json.RawMessage
	Input              *Input
	// AnswerInput is as in CallRequest: for Plugin.ReadResource only.
	AnswerInput AnswerFunc
	// Caller is as in CallRequest.
	Caller *Caller
}

// PromptRequest is one prompts/get, for Client.GetPrompt and
// Plugin.GetPrompt.
type PromptRequest struct {
	// Name is the prompt's name as the plugin gave it.
	Name string
	// Arguments is a JSON object of string values; nil means {}.
	Arguments json.RawMessage
	// ClientCapabilities and Input are as in CallRequest.
	ClientCapabilities json.RawMessage
	Input              *Input
	// AnswerInput is as in CallRequest: for Plugin.GetPrompt only.
	AnswerInput AnswerFunc
	// Caller is as in CallRequest.
	Caller *Caller
}

// Input is the client's answers to an InputRequiredError, carried by the
// call (or read, or prompt get) that retries it.
type Input struct {
	// Responses is a JSON object: for each key of the InputRequiredError's
	// requests that the client answered, its result (a
	// CreateMessageResult, ElicitResult or ListRootsResult). Nil when
	// there are none.
	Responses json.RawMessage
	// Errors are the keys the client could not answer, and why.
	Errors map[string]InputError
	// State is the InputRequiredError's State, as the plugin returned it.
	State string
}

// InputError is why the client did not answer one input request: it
// answered with a JSON-RPC error, or the host did not ask it because the
// client did not declare the capability (code -32601, naming it). A
// handler's Elicit, Sample or Roots returns it as its error (a
// *InputError).
type InputError struct {
	// Code is a JSON-RPC error code.
	Code int
	// Message is the client's (or the host's) explanation.
	Message string
}

func (e *InputError) Error() string {
	return fmt.Sprintf("the client answered with error %d: %s", e.Code, e.Message)
}

// AnswerFunc answers one request of a handler to the client, for the
// in-process helpers (Plugin.CallTool, Plugin.ReadResource,
// Plugin.GetPrompt): method is sampling/createMessage, elicitation/create
// or roots/list, params its MCP params (nil for roots/list), and the answer
// the MCP result as JSON. An error is the client's refusal: an *InputError
// keeps its code, any other error becomes code -32603 with its text.
type AnswerFunc func(method string, params json.RawMessage) (json.RawMessage, error)
