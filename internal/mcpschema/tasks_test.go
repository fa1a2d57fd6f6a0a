package mcpschema

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The messages of the tasks extension (io.modelcontextprotocol/tasks), which
// only the validator of 2026-07-28 knows. Fixtures marked "spec" are the
// examples of the extension's specification (specification/2026-07-28/tasks.md).
func TestTasks(t *testing.T) {
	t.Parallel()
	const (
		id   = `"taskId":"786512e2-9e0d-44bd-8f29-789f320fe840"`
		task = id + `,"createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:50:00Z","ttlMs":3600000,"pollIntervalMs":5000`
		// Without ttlMs, which every task shape requires.
		noTTL      = id + `,"createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:50:00Z"`
		elicit     = `"inputRequests":{"name":{"method":"elicitation/create","params":{"mode":"form","message":"Please enter your name.","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}}}`
		toolResult = `"result":{"content":[{"type":"text","text":"Hello, Luca!"}],"isError":false}`
		sub        = `"_meta":{"io.modelcontextprotocol/subscriptionId":12}`
	)
	resp := func(result string) string { return `{"jsonrpc":"2.0","id":3,"result":{` + result + `}}` }
	note := func(params string) string {
		return `{"jsonrpc":"2.0","method":"notifications/tasks","params":{` + params + `}}`
	}
	tests := map[string]struct {
		msg, method string
		ok          bool
	}{
		// tools/call answered with a task: CreateTaskResult.
		"create task (spec)":                  {`{"jsonrpc":"2.0","id":1,"result":{"resultType":"task",` + id + `,"status":"working","statusMessage":"The operation is now in progress.","createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:40:00Z","ttlMs":60000,"pollIntervalMs":5000}}`, "tools/call", true},
		"create task, ttlMs null":             {resp(`"resultType":"task","status":"working",` + noTTL + `,"ttlMs":null`), "tools/call", true},
		"create task without ttlMs":           {resp(`"resultType":"task","status":"working",` + noTTL), "tools/call", false},
		"create task, ttlMs not an integer":   {resp(`"resultType":"task","status":"working",` + noTTL + `,"ttlMs":1.5`), "tools/call", false},
		"create task, ttlMs a string":         {resp(`"resultType":"task","status":"working",` + noTTL + `,"ttlMs":"60000"`), "tools/call", false},
		"create task without createdAt":       {resp(`"resultType":"task","status":"working",` + id + `,"lastUpdatedAt":"x","ttlMs":1`), "tools/call", false},
		"create task, unknown status":         {resp(`"resultType":"task","status":"done",` + task), "tools/call", false},
		"create task, completed (any status)": {resp(`"resultType":"task","status":"completed",` + task), "tools/call", true},
		// The task nested in a "task" member (an older draft's shape, which
		// the spec's prose still mentions as task.taskId): the schema wants
		// the task's members in the result itself...
		"create task nested in task": {resp(`"resultType":"task","task":{"status":"working",` + task + `}`), "tools/call", false},
		// ...and lets any other member through (no additionalProperties).
		"create task plus a nested task":  {resp(`"resultType":"task","status":"working",` + task + `,"task":{"status":"working",` + task + `}`), "tools/call", true},
		"create task plus unknown member": {resp(`"resultType":"task","status":"working",` + task + `,"x":1`), "tools/call", true},
		// Only tools/call may become a task (tasks.md: a CreateTaskResult
		// answering another request is an invalid response).
		"task answering tools/list": {resp(`"resultType":"task","status":"working",` + task), "tools/list", false},
		"task answering tasks/get":  {resp(`"resultType":"task","status":"working",` + task), "tasks/get", false},
		// The core's results are unchanged.
		"call result":          {resp(`"resultType":"complete","content":[{"type":"text","text":"hi"}]`), "tools/call", true},
		"call input_required":  {resp(`"resultType":"input_required",` + elicit), "tools/call", true},
		"call without content": {resp(`"resultType":"complete"`), "tools/call", false},

		// tasks/get: GetTaskResult, a DetailedTask with resultType "complete".
		"get working (spec)":                {resp(`"resultType":"complete","status":"working",` + task), "tasks/get", true},
		"get input_required (spec)":         {resp(`"resultType":"complete","status":"input_required",` + task + `,` + elicit), "tasks/get", true},
		"get input_required, no inputs":     {resp(`"resultType":"complete","status":"input_required",` + task), "tasks/get", false},
		"get input_required, bad input":     {resp(`"resultType":"complete","status":"input_required",` + task + `,"inputRequests":{"a":{"method":"elicitation/create","params":{}}}`), "tasks/get", false},
		"get completed (spec)":              {resp(`"resultType":"complete","status":"completed",` + task + `,` + toolResult), "tasks/get", true},
		"get completed with isError (spec)": {resp(`"resultType":"complete",` + id + `,"status":"completed","createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:40:00Z","ttlMs":3600000,"result":{"content":[{"type":"text","text":"Failed to process request: invalid input"}],"isError":true}`), "tasks/get", true},
		"get completed without result":      {resp(`"resultType":"complete","status":"completed",` + task), "tasks/get", false},
		"get completed, result a string":    {resp(`"resultType":"complete","status":"completed",` + task + `,"result":"done"`), "tasks/get", false},
		// result is any object: the schema does not check it against the
		// original request's result (here a CallToolResult without content).
		"get completed, result not a call result": {resp(`"resultType":"complete","status":"completed",` + task + `,"result":{"x":1}`), "tasks/get", true},
		"get failed (spec)":                       {resp(`"resultType":"complete",` + id + `,"status":"failed","createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:40:00Z","ttlMs":3600000,"statusMessage":"Tool execution failed: API rate limit exceeded","error":{"code":-32603,"message":"API rate limit exceeded"}`), "tasks/get", true},
		"get failed without error":                {resp(`"resultType":"complete","status":"failed",` + task), "tasks/get", false},
		"get failed, error no message":            {resp(`"resultType":"complete","status":"failed",` + task + `,"error":{"code":-32603}`), "tasks/get", false},
		"get failed, error code float":            {resp(`"resultType":"complete","status":"failed",` + task + `,"error":{"code":1.5,"message":"x"}`), "tasks/get", false},
		"get cancelled":                           {resp(`"resultType":"complete","status":"cancelled",` + task), "tasks/get", true},
		"get without resultType":                  {resp(`"status":"working",` + task), "tasks/get", false},
		"get, resultType input_required":          {resp(`"resultType":"input_required","status":"working",` + task + `,` + elicit), "tasks/get", false},
		"get without taskId":                      {resp(`"resultType":"complete","status":"working","createdAt":"a","lastUpdatedAt":"b","ttlMs":1`), "tasks/get", false},

		// tasks/update and tasks/cancel: an acknowledgement.
		"update ack (spec)":            {`{"jsonrpc":"2.0","id":6,"result":{"resultType":"complete"}}`, "tasks/update", true},
		"update ack with _meta":        {resp(`"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"x","version":"1"}}`), "tasks/update", true},
		"update ack empty":             {resp(``), "tasks/update", false},
		"update ack, resultType task":  {resp(`"resultType":"task"`), "tasks/update", false},
		"cancel ack":                   {resp(`"resultType":"complete"`), "tasks/cancel", true},
		"cancel ack, other resultType": {resp(`"resultType":"input_required","requestState":"s"`), "tasks/cancel", false},

		// notifications/tasks: TaskStatusNotification, a DetailedTask.
		"notification (spec)":                      {`{"jsonrpc":"2.0","method":"notifications/tasks","params":{` + id + `,"status":"completed","createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:50:00Z","ttlMs":60000,"pollIntervalMs":5000,"result":{"content":[{"type":"text","text":"Operation completed successfully."}],"isError":false}}}`, "", true},
		"notification with subscriptionId":         {note(`"status":"completed",` + task + `,` + toolResult + `,` + sub), "", true},
		"notification working with subscriptionId": {note(`"status":"working",` + task + `,` + sub), "", true},
		"notification failed":                      {note(`"status":"failed",` + task + `,"error":{"code":-32603,"message":"x"},` + sub), "", true},
		"notification input_required":              {note(`"status":"input_required",` + task + `,` + elicit + `,` + sub), "", true},
		"notification, subscriptionId an object":   {note(`"status":"working",` + task + `,"_meta":{"io.modelcontextprotocol/subscriptionId":{"id":1}}`), "", false},
		"notification failed without error":        {note(`"status":"failed",` + task + `,` + sub), "", false},
		"notification completed without result":    {note(`"status":"completed",` + task + `,` + sub), "", false},
		"notification without ttlMs":               {note(`"status":"working",` + noTTL + `,` + sub), "", false},
		"notification without params":              {`{"jsonrpc":"2.0","method":"notifications/tasks"}`, "", false},
		// The acknowledgement of a subscription's taskIds.
		"ack with taskIds":          {`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"taskIds":["t1"],"toolsListChanged":true},` + sub + `}}`, "", true},
		"ack with taskIds a string": {`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"taskIds":"t1"},` + sub + `}}`, "", false},
		// -32021 naming the extension is the core's (spec).
		"missing capability (spec)": {`{"jsonrpc":"2.0","id":12,"error":{"code":-32021,"message":"Missing required client capability","data":{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`, "", true},
		"task not found (spec)":     {`{"jsonrpc":"2.0","id":70,"error":{"code":-32602,"message":"Failed to retrieve task: Task not found"}}`, "tasks/get", true},
	}
	v, err := New("2026-07-28")
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := v.Check([]byte(tc.msg), tc.method)
			if (err == nil) != tc.ok {
				t.Errorf("Check(%s, %q) = %v, want ok=%v", tc.msg, tc.method, err, tc.ok)
			}
		})
	}
}

// A nil method func means an unknown method: an input_required result still
// checks, a task result is refused.
func TestTasksNilMethod(t *testing.T) {
	t.Parallel()
	v, err := New("2026-07-28")
	if err != nil {
		t.Fatal(err)
	}
	if err := v.CheckFunc([]byte(`{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","requestState":"s"}}`), nil); err != nil {
		t.Error(err)
	}
	if err := v.CheckFunc([]byte(`{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":"t","status":"working","createdAt":"a","lastUpdatedAt":"b","ttlMs":null}}`), nil); err == nil {
		t.Error("a task answering an unknown request passes")
	}
}

// Before 2026-07-28 the extension's messages are unknown.
func TestTasksOnlyIn2026(t *testing.T) {
	t.Parallel()
	v, err := New("2025-11-25")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ msg, method string }{
		{`{"jsonrpc":"2.0","id":3,"result":{"resultType":"complete"}}`, "tasks/cancel"},
		{`{"jsonrpc":"2.0","method":"notifications/tasks","params":{"taskId":"t","status":"working","createdAt":"a","lastUpdatedAt":"b","ttlMs":null}}`, ""},
	} {
		if err := v.Check([]byte(tc.msg), tc.method); err == nil {
			t.Errorf("2025-11-25 accepts %s", tc.msg)
		}
	}
}

// The vendored schema is JSON, a schema whose every definition compiles, and
// no protocol version.
func TestTasksSchema(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/ext-tasks.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		ID   string                     `json:"$id"`
		Defs map[string]json.RawMessage `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.ID != tasksURL {
		t.Errorf("$id = %q, want %q", doc.ID, tasksURL)
	}
	parsed, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(tasksURL, parsed); err != nil {
		t.Fatal(err)
	}
	for name := range doc.Defs {
		if _, err := c.Compile(tasksURL + "#/$defs/" + name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, def := range append(slices.Collect(maps.Values(taskResultDefs)), createTaskDef, taskAckDef, taskNotificationDefs["notifications/tasks"]) {
		if doc.Defs[def] == nil {
			t.Errorf("the schema has no definition %s", def)
		}
	}
	if _, err := New("ext-tasks"); err == nil || !strings.Contains(err.Error(), "no schema") {
		t.Errorf(`New("ext-tasks") = %v, want no schema`, err)
	}
}
