// Package mcpschema checks JSON-RPC messages a server writes against the
// official MCP JSON schema of the protocol version the session negotiated.
// Tests use it; the product binaries never import it.
//
//	v, err := mcpschema.New("2025-11-25")
//	err = v.Check(line, "tools/call") // a response to a tools/call request
//	err = v.Check(line, "")           // a notification or a request
//
// The validator of 2026-07-28 also knows the messages of the tasks extension
// (io.modelcontextprotocol/tasks), compiled from its own schema
// (testdata/ext-tasks.json): the results of tasks/get, tasks/update and
// tasks/cancel, a tools/call answered with a task (resultType "task") and the
// notifications/tasks notification.
package mcpschema

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

//go:embed testdata/*.json
var schemas embed.FS

// Versions lists the protocol versions whose schemas are embedded, oldest
// first: the files of testdata named for a revision's date (ext-tasks.json,
// the schema of an extension, is none).
func Versions() []string {
	entries, _ := schemas.ReadDir("testdata")
	var vs []string
	for _, e := range entries {
		if v, ok := strings.CutSuffix(e.Name(), ".json"); ok && isVersion(v) {
			vs = append(vs, v)
		}
	}
	sort.Strings(vs)
	return vs
}

// isVersion tells whether name is a protocol revision (a date, YYYY-MM-DD).
func isVersion(name string) bool {
	_, err := time.Parse(time.DateOnly, name)
	return err == nil
}

// The tasks extension (io.modelcontextprotocol/tasks, SEP-2663) of
// 2026-07-28: its schema is a document of its own, self-contained (it carries
// its own copies of the core definitions it refers to: Result, Error,
// JSONRPCNotification, InputRequests...), whose $id is tasksURL.
const (
	tasksVersion = "2026-07-28"
	tasksFile    = "testdata/ext-tasks.json"
	tasksURL     = "https://modelcontextprotocol.io/ext-tasks/schema.json"
)

// taskResultDefs names the extension's definition of each of its requests'
// results (tasks/update and tasks/cancel: an acknowledgement,
// resultType "complete").
var taskResultDefs = map[string]string{
	"tasks/get":    "GetTaskResult",
	"tasks/update": "UpdateTaskResult",
	"tasks/cancel": "CancelTaskResult",
}

// createTaskDef is the extension's definition of a result whose resultType
// is "task": the answer to a request the server carries on as a task, which
// the extension allows only for the requests of taskRequests.
const createTaskDef = "CreateTaskResult"

var taskRequests = map[string]bool{"tools/call": true}

// taskNotificationDefs names the extension's definition of each of its
// notifications.
var taskNotificationDefs = map[string]string{
	"notifications/tasks": "TaskStatusNotification",
}

// taskAckDef is the extension's definition of the taskIds it adds to the
// notifications of a subscription's acknowledgement (whose core definition,
// SubscriptionFilter, lets any member through).
const taskAckDef = "TaskSubscriptionAcknowledgedNotifications"

// resultDefs names the schema definition of each request's result.
var resultDefs = map[string]string{
	"initialize":               "InitializeResult",
	"ping":                     "EmptyResult",
	"logging/setLevel":         "EmptyResult",
	"tools/list":               "ListToolsResult",
	"tools/call":               "CallToolResult",
	"resources/list":           "ListResourcesResult",
	"resources/templates/list": "ListResourceTemplatesResult",
	"resources/read":           "ReadResourceResult",
	"resources/subscribe":      "EmptyResult",
	"resources/unsubscribe":    "EmptyResult",
	"prompts/list":             "ListPromptsResult",
	"prompts/get":              "GetPromptResult",
	"completion/complete":      "CompleteResult",
	"server/discover":          "DiscoverResult",
	"subscriptions/listen":     "SubscriptionsListenResult",
}

// removed2026 are the requests 2026-07-28 removed (their result types,
// EmptyResult and InitializeResult, remain for other uses or not at all).
var removed2026 = map[string]bool{"initialize": true, "ping": true, "logging/setLevel": true,
	"resources/subscribe": true, "resources/unsubscribe": true}

// inputRequiredDef is the schema definition of a result whose resultType
// is "input_required" (2026-07-28), whatever the request.
const inputRequiredDef = "InputRequiredResult"

// errorDefs names the schema definition of the error responses whose
// code a version's schema fixes (2026-07-28: -32020, -32021, -32022).
var errorDefs = map[float64]string{
	-32020: "HeaderMismatchError",
	-32021: "MissingRequiredClientCapabilityError",
	-32022: "UnsupportedProtocolVersionError",
}

// notificationDefs names the schema definition of each notification a
// server may send.
var notificationDefs = map[string]string{
	"notifications/progress":                   "ProgressNotification",
	"notifications/message":                    "LoggingMessageNotification",
	"notifications/tools/list_changed":         "ToolListChangedNotification",
	"notifications/resources/list_changed":     "ResourceListChangedNotification",
	"notifications/prompts/list_changed":       "PromptListChangedNotification",
	"notifications/resources/updated":          "ResourceUpdatedNotification",
	"notifications/cancelled":                  "CancelledNotification",
	"notifications/subscriptions/acknowledged": "SubscriptionsAcknowledgedNotification",
}

// requestDefs names the schema definition of each request a server may
// send to its client. One that a version's schema lacks (elicitation
// before 2025-06-18) is unexpected in that version.
var requestDefs = map[string]string{
	"sampling/createMessage": "CreateMessageRequest",
	"elicitation/create":     "ElicitRequest",
	"roots/list":             "ListRootsRequest",
}

// Validator checks server-to-client messages of one protocol version.
type Validator struct {
	version       string
	response      *jsonschema.Schema // a successful response envelope
	errResponse   *jsonschema.Schema // an error response envelope
	notification  *jsonschema.Schema // the JSONRPCNotification envelope
	request       *jsonschema.Schema // the JSONRPCRequest envelope
	results       map[string]*jsonschema.Schema
	notifications map[string]*jsonschema.Schema
	requests      map[string]*jsonschema.Schema
	inputRequired *jsonschema.Schema             // nil before 2026-07-28
	errors        map[float64]*jsonschema.Schema // by code
	createTask    *jsonschema.Schema             // the tasks extension's; nil but in 2026-07-28
	taskAck       *jsonschema.Schema             // likewise
}

// New compiles the schema of a protocol version.
func New(version string) (*Validator, error) {
	if !isVersion(version) {
		return nil, fmt.Errorf("no schema for protocol version %q", version)
	}
	raw, err := schemas.ReadFile("testdata/" + version + ".json")
	if err != nil {
		return nil, fmt.Errorf("no schema for protocol version %q", version)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	var names struct {
		Definitions map[string]json.RawMessage `json:"definitions"`
		Defs        map[string]json.RawMessage `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &names); err != nil {
		return nil, err
	}
	url := "https://modelcontextprotocol.io/schema/" + version + ".json"
	c := jsonschema.NewCompiler()
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	defs := "#/definitions/"
	response, errResponse := "JSONRPCResponse", "JSONRPCError"
	if version >= "2025-11-25" {
		defs = "#/$defs/"
		response, errResponse = "JSONRPCResultResponse", "JSONRPCErrorResponse"
	}
	compile := func(def string) (*jsonschema.Schema, error) {
		return c.Compile(url + defs + def)
	}
	v := &Validator{
		version:       version,
		results:       map[string]*jsonschema.Schema{},
		notifications: map[string]*jsonschema.Schema{},
		requests:      map[string]*jsonschema.Schema{},
		errors:        map[float64]*jsonschema.Schema{},
	}
	has := func(def string) bool { return names.Definitions[def] != nil || names.Defs[def] != nil }
	if v.response, err = compile(response); err != nil {
		return nil, err
	}
	if v.errResponse, err = compile(errResponse); err != nil {
		return nil, err
	}
	if v.notification, err = compile("JSONRPCNotification"); err != nil {
		return nil, err
	}
	if v.request, err = compile("JSONRPCRequest"); err != nil {
		return nil, err
	}
	// A method, notification or error a version's schema lacks (server
	// requests in 2026-07-28, discover before it) is unexpected in it.
	for method, def := range requestDefs {
		if has(def) && version < "2026-07-28" { // 2026-07-28 has them only inside inputRequests
			if v.requests[method], err = compile(def); err != nil {
				return nil, err
			}
		}
	}
	for method, def := range resultDefs {
		if has(def) && !(version >= "2026-07-28" && removed2026[method]) {
			if v.results[method], err = compile(def); err != nil {
				return nil, err
			}
		}
	}
	for method, def := range notificationDefs {
		if has(def) {
			if v.notifications[method], err = compile(def); err != nil {
				return nil, err
			}
		}
	}
	if has(inputRequiredDef) {
		if v.inputRequired, err = compile(inputRequiredDef); err != nil {
			return nil, err
		}
	}
	for code, def := range errorDefs {
		if has(def) {
			if v.errors[code], err = compile(def); err != nil {
				return nil, err
			}
		}
	}
	if version == tasksVersion {
		if err := v.addTasks(c); err != nil {
			return nil, fmt.Errorf("the tasks extension's schema: %w", err)
		}
	}
	return v, nil
}

// addTasks compiles the messages of the tasks extension from its schema.
func (v *Validator) addTasks(c *jsonschema.Compiler) error {
	raw, err := schemas.ReadFile(tasksFile)
	if err != nil {
		return err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	if err := c.AddResource(tasksURL, doc); err != nil {
		return err
	}
	compile := func(def string) (*jsonschema.Schema, error) {
		return c.Compile(tasksURL + "#/$defs/" + def)
	}
	for method, def := range taskResultDefs {
		if v.results[method], err = compile(def); err != nil {
			return err
		}
	}
	for method, def := range taskNotificationDefs {
		if v.notifications[method], err = compile(def); err != nil {
			return err
		}
	}
	if v.createTask, err = compile(createTaskDef); err != nil {
		return err
	}
	v.taskAck, err = compile(taskAckDef)
	return err
}

// Check validates one message the server wrote. For a response, method is the
// method of the request it answers (a result for an unknown method is an
// error; an error response may answer ""); for a notification it is ignored.
func (v *Validator) Check(msg []byte, method string) error {
	return v.CheckFunc(msg, func(json.RawMessage) string { return method })
}

// CheckFunc is Check for messages that may be batches (2025-03-26): method
// returns the method of the request with the given raw id (nil: unknown).
func (v *Validator) CheckFunc(msg []byte, method func(id json.RawMessage) string) error {
	if method == nil {
		method = func(json.RawMessage) string { return "" }
	}
	var probe any
	if err := json.Unmarshal(msg, &probe); err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	if arr, ok := probe.([]any); ok {
		if v.version != "2025-03-26" {
			return fmt.Errorf("a batch in a %s session", v.version)
		}
		if len(arr) == 0 {
			return fmt.Errorf("an empty batch response")
		}
		for i, elem := range arr {
			if err := v.checkOne(elem, method); err != nil {
				return fmt.Errorf("batch element %d: %w", i, err)
			}
		}
		return nil
	}
	return v.checkOne(probe, method)
}

func (v *Validator) checkOne(msg any, methodOf func(json.RawMessage) string) error {
	obj, ok := msg.(map[string]any)
	if !ok {
		return fmt.Errorf("message is not an object")
	}
	id, hasID := obj["id"]
	name, hasMethod := obj["method"]
	_, hasError := obj["error"]
	switch {
	case hasMethod && !hasID:
		if err := v.notification.Validate(msg); err != nil {
			return wrap("notification", err)
		}
		n, _ := name.(string)
		s, ok := v.notifications[n]
		if !ok {
			return fmt.Errorf("unexpected notification %q", n)
		}
		if err := s.Validate(msg); err != nil {
			return wrap(n, err)
		}
		if n == "notifications/subscriptions/acknowledged" && v.taskAck != nil {
			params, _ := obj["params"].(map[string]any)
			return wrap(n+" (tasks extension)", v.taskAck.Validate(params["notifications"]))
		}
		return nil
	case hasError:
		if id, ok := obj["id"]; ok && id == nil {
			// JSON-RPC 2.0 requires "id": null when the request's id could
			// not be read (a parse error). No MCP schema can express that
			// (before 2025-11-25 the id must be a string or an integer;
			// since, it may be absent), so check the rest with a stand-in id.
			obj["id"] = 0.0
		}
		if e, ok := obj["error"].(map[string]any); ok {
			if code, ok := e["code"].(float64); ok && v.errors[code] != nil {
				return wrap("error response", v.errors[code].Validate(obj))
			}
		}
		return wrap("error response", v.errResponse.Validate(obj))
	case hasID && !hasMethod:
		if err := v.response.Validate(msg); err != nil {
			return wrap("response", err)
		}
		rawID, _ := json.Marshal(id)
		method := methodOf(rawID)
		res, _ := obj["result"].(map[string]any)
		if res != nil && res["resultType"] == "task" && v.createTask != nil {
			if !taskRequests[method] {
				return fmt.Errorf("a task (resultType \"task\") answers id %s, whose request (method %q) the tasks extension does not let become a task", rawID, method)
			}
			return wrap(createTaskDef, v.createTask.Validate(res))
		}
		// The extension's own requests have their own results, whatever
		// the resultType (theirs is "complete").
		if res != nil && res["resultType"] == "input_required" && v.inputRequired != nil && taskResultDefs[method] == "" {
			return wrap("InputRequiredResult", v.inputRequired.Validate(res))
		}
		s, ok := v.results[method]
		if !ok {
			return fmt.Errorf("a result for id %s, which answers no request whose result is known (method %q)", rawID, method)
		}
		return wrap(method+" result", s.Validate(obj["result"]))
	case hasMethod && hasID:
		if err := v.request.Validate(msg); err != nil {
			return wrap("request", err)
		}
		n, _ := name.(string)
		s, ok := v.requests[n]
		if !ok {
			return fmt.Errorf("unexpected request %q from the server", n)
		}
		return wrap(n, s.Validate(msg))
	default:
		return fmt.Errorf("a malformed message: %v", obj)
	}
}

func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s does not match the schema: %v", what, err)
}
