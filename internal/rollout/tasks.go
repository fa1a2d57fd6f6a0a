package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Task is a task's record as tasks/get answers it.
type Task struct {
	Status        string          `json:"status"`
	StatusMessage string          `json:"statusMessage"`
	InputRequests json.RawMessage `json:"inputRequests"`
	Result        json.RawMessage `json:"result"`
	Error         json.RawMessage `json:"error"`
}

// taskMeta declares MCP 2026-07-28, elicitation and the tasks extension.
const taskMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` +
	`{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}}`

// call sends one stateless request declaring the tasks extension and
// returns its result, failing on an HTTP or JSON-RPC error.
func call(ctx context.Context, url, method, name, params string, result any) error {
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{` + params + `,` + taskMeta + `}}`
	raw, status, err := post(ctx, http.DefaultClient, url, method, name, body)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(raw, &msg); err != nil || status != http.StatusOK || msg.Error != nil {
		return fmt.Errorf("%s: HTTP %d %.300s", method, status, raw)
	}
	if result == nil {
		return nil
	}
	return json.Unmarshal(msg.Result, result)
}

// CreateTask calls tool with args (a JSON object) at url, as a task, and
// returns the task's id.
func CreateTask(ctx context.Context, url, tool, args string) (string, error) {
	var res struct {
		ResultType string `json:"resultType"`
		TaskID     string `json:"taskId"`
	}
	if err := call(ctx, url, "tools/call", tool, `"name":"`+tool+`","arguments":`+args, &res); err != nil {
		return "", err
	}
	if res.ResultType != "task" || res.TaskID == "" {
		return "", fmt.Errorf("tools/call %s: %+v, want a task", tool, res)
	}
	return res.TaskID, nil
}

// GetTask answers tasks/get for id at url.
func GetTask(ctx context.Context, url, id string) (*Task, error) {
	var t Task
	err := call(ctx, url, "tasks/get", id, `"taskId":"`+id+`"`, &t)
	return &t, err
}

// UpdateTask answers a task's input request key with response (a JSON
// value) at url.
func UpdateTask(ctx context.Context, url, id, key, response string) error {
	return call(ctx, url, "tasks/update", id, `"taskId":"`+id+`","inputResponses":{"`+key+`":`+response+`}`, nil)
}

// AwaitTask polls tasks/get at url, as a client does (there is no other
// way to learn of it without a listen stream), until done says so or ctx
// ends; a failed request is polled again (a replica may be stopping).
func AwaitTask(ctx context.Context, url, id string, done func(*Task) bool) (*Task, error) {
	var last error
	for {
		t, err := GetTask(ctx, url, id)
		if err == nil && done(t) {
			return t, nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return t, fmt.Errorf("task %s: %+v (last error: %v): %w", id, t, last, ctx.Err())
		case <-time.After(100 * time.Millisecond): // a client's poll interval
		}
	}
}
