package streamable

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/host/mcp/internal/mcptest"
	"github.com/plughost/plughost/host/tasks"
)

// TestTaskOverHTTP: a stateless POST of a call that goes on as a task is
// answered with the CreateTaskResult while the call still runs (the POST
// does not wait for the call); tasks/get needs Mcp-Name to be the task id
// (400, -32020 otherwise), answers an unknown task 400 with -32602, and
// shows the task completed once its call has finished.
func TestTaskOverHTTP(t *testing.T) {
	t.Parallel()
	svc := tasks.New(tasks.Options{})
	t.Cleanup(func() { svc.Close() })
	hs := startHTTPWith(t, nil, mcp.Options{Tasks: svc})
	m := meta(`{"extensions":{"io.modelcontextprotocol/tasks":{}}}`)

	status, _, body := hs.roundtrip(statelessPost("tools/call", "job", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"job","arguments":{},`+m+`}}`))
	var created struct {
		Result struct{ ResultType, TaskID, Status string } `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &created); err != nil || status != 200 || created.Result.ResultType != "task" || created.Result.TaskID == "" {
		t.Fatalf("tools/call: %d %s, want a CreateTaskResult", status, body)
	}
	// The call goes on, waiting until released: the POST did not wait for it.
	hs.await("the job to wait", func() bool { waiting, _ := hs.cat.Jobs(); return waiting == 1 })
	id := created.Result.TaskID
	get := `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"` + id + `",` + m + `}}`
	if status, _, body := hs.roundtrip(statelessPost("tasks/get", id, get)); status != 200 || !strings.Contains(body, `"status":"working"`) {
		t.Errorf("tasks/get: %d %s, want the working task", status, body)
	}
	if status, _, body := hs.roundtrip(statelessPost("tasks/get", "another", get)); status != 400 || !strings.Contains(body, `"code":-32020`) {
		t.Errorf("tasks/get with Mcp-Name another task: %d %s, want 400 with -32020", status, body)
	}
	unknown := `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"nope",` + m + `}}`
	if status, _, body := hs.roundtrip(statelessPost("tasks/get", "nope", unknown)); status != 400 || !strings.Contains(body, `"code":-32602`) {
		t.Errorf("tasks/get of an unknown task: %d %s, want 400 with -32602", status, body)
	}

	hs.cat.ReleaseJob(0)
	mcptest.AwaitTask(t, svc, id, "completed", func(task *tasks.Task) bool { return task.Status == tasks.Completed })
	if status, _, body := hs.roundtrip(statelessPost("tasks/get", id, get)); status != 200 || !strings.Contains(body, `"status":"completed"`) ||
		!strings.Contains(body, "job done") {
		t.Errorf("tasks/get: %d %s, want the completed task with its result", status, body)
	}
}
