package mcp

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plughost/plughost/host/mcp/internal/mcptest"
	"github.com/plughost/plughost/host/tasks"
)

// taskMeta is the _meta of a stateless request whose client declares the
// tasks extension (and elicitation).
const taskMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` +
	`{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}}`

// newTaskClient is a client of a server running tasks in process (over
// stdio when stdio is set), and the service.
func newTaskClient(t *testing.T, stdio bool, opts Options) (*client, *tasks.Service) {
	t.Helper()
	svc := tasks.New(tasks.Options{})
	opts.Tasks = svc
	c := newClient(t, clientOptions{stdio: stdio, server: opts})
	t.Cleanup(func() { svc.Close() })
	return c, svc
}

// taskReply is the result or error of one answer, decoded.
type taskReply struct {
	Result map[string]json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

func decodeReply(t *testing.T, line string) taskReply {
	t.Helper()
	var r taskReply
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		t.Fatalf("answer %s: %v", line, err)
	}
	return r
}

// str is a result member as a string ("" when absent or not one).
func str(r taskReply, name string) string {
	var s string
	json.Unmarshal(r.Result[name], &s)
	return s
}

// taskRequest sends one stateless request (params without _meta, which is
// added) and returns its answer, decoded.
func taskRequest(t *testing.T, c *client, id int, method, params, meta string) (taskReply, string) {
	t.Helper()
	if params != "" {
		params += ","
	}
	c.write(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"` + method + `","params":{` + params + meta + `}}`)
	line := c.next()
	return decodeReply(t, line), line
}

// startTask calls tool with the tasks extension declared and returns the
// id of the task its CreateTaskResult names, checking that result.
func startTask(t *testing.T, c *client, id int, tool, args string) string {
	t.Helper()
	r, line := taskRequest(t, c, id, "tools/call", `"name":"`+tool+`","arguments":`+args, taskMeta)
	taskID := str(r, "taskId")
	if str(r, "resultType") != "task" || taskID == "" || str(r, "status") != "working" {
		t.Fatalf("tools/call %s: %s, want a CreateTaskResult of a working task", tool, line)
	}
	for _, must := range []string{"createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"} {
		if r.Result[must] == nil {
			t.Errorf("CreateTaskResult %s lacks %s", line, must)
		}
	}
	for _, mustNot := range []string{"result", "error", "inputRequests", "requestState", "ttl", "pollInterval", "task"} {
		if r.Result[mustNot] != nil {
			t.Errorf("CreateTaskResult %s carries %s", line, mustNot)
		}
	}
	return taskID
}

// awaitTask waits until the task's status is want, by its change feed.
func awaitTask(t *testing.T, svc *tasks.Service, id string, want tasks.Status) *tasks.Task {
	t.Helper()
	return awaitTaskWhere(t, svc, id, string(want), func(task *tasks.Task) bool { return task.Status == want })
}

// awaitTaskWhere waits until cond holds of the task, by its change feed.
func awaitTaskWhere(t *testing.T, svc *tasks.Service, id, what string, cond func(*tasks.Task) bool) *tasks.Task {
	t.Helper()
	return mcptest.AwaitTask(t, svc, id, what, cond)
}

// TestTaskLifecycle: a call of a tool that supports tasks, from a client
// that declares the extension, is answered with a CreateTaskResult as soon
// as its provider detaches it; the call goes on after the request is
// answered; tasks/get shows it working with its progress as the status
// message, then completed with the result inlined; tasks/cancel of a
// finished task is an empty acknowledgement.
func TestTaskLifecycle(t *testing.T) {
	t.Parallel()
	for _, stdio := range []bool{false, true} {
		t.Run(map[bool]string{false: "transport", true: "stdio"}[stdio], func(t *testing.T) {
			t.Parallel()
			c, svc := newTaskClient(t, stdio, Options{})
			id := startTask(t, c, 1, "job", `{}`)
			c.await("the job to wait", func() bool { n, _ := c.cat.Jobs(); return n == 1 })
			awaitTask(t, svc, id, tasks.Working)

			r, line := taskRequest(t, c, 2, "tasks/get", `"taskId":"`+id+`"`, taskMeta)
			if str(r, "resultType") != "complete" || str(r, "taskId") != id || str(r, "status") != "working" || r.Result["result"] != nil {
				t.Errorf("tasks/get of a working task: %s", line)
			}
			c.cat.ReleaseJob(0)
			awaitTask(t, svc, id, tasks.Completed)
			r, line = taskRequest(t, c, 3, "tasks/get", `"taskId":"`+id+`"`, taskMeta)
			if str(r, "status") != "completed" || !strings.Contains(string(r.Result["result"]), `"text":"job done"`) ||
				strings.Contains(string(r.Result["result"]), "related-task") {
				t.Errorf("tasks/get of a completed task: %s, want its result inlined", line)
			}
			_, line = taskRequest(t, c, 4, "tasks/cancel", `"taskId":"`+id+`"`, taskMeta)
			if want := `{"jsonrpc":"2.0","id":4,"result":{"resultType":"complete"}}`; line != want {
				t.Errorf("tasks/cancel of a completed task: %s, want %s", line, want)
			}
			awaitTask(t, svc, id, tasks.Completed) // the cancel changed nothing
		})
	}
}

// TestTaskProgress: the provider's progress becomes the task's status
// message, though the client asked for no progress notifications, and no
// notifications/progress reaches the client.
func TestTaskProgress(t *testing.T) {
	t.Parallel()
	c, svc := newTaskClient(t, false, Options{})
	id := startTask(t, c, 1, "job", `{}`)
	c.await("the job to wait", func() bool { n, _ := c.cat.Jobs(); return n == 1 })
	awaitTaskWhere(t, svc, id, `status message "working (1)"`, func(task *tasks.Task) bool { return task.StatusMessage == "working (1)" })
	c.cat.ReleaseJob(0)
	awaitTask(t, svc, id, tasks.Completed)
	if out := c.take(); len(out) != 0 {
		t.Errorf("the client got %q, want nothing", out)
	}
}

// TestTaskCancel: tasks/cancel acknowledges with an empty result, the task
// is cancelled, and the call's context ends in its provider.
func TestTaskCancel(t *testing.T) {
	t.Parallel()
	c, _ := newTaskClient(t, false, Options{})
	id := startTask(t, c, 1, "job", `{}`)
	c.await("the job to wait", func() bool { n, _ := c.cat.Jobs(); return n == 1 })
	_, line := taskRequest(t, c, 2, "tasks/cancel", `"taskId":"`+id+`"`, taskMeta)
	if want := `{"jsonrpc":"2.0","id":2,"result":{"resultType":"complete"}}`; line != want {
		t.Errorf("tasks/cancel: %s, want %s", line, want)
	}
	c.await("the job's context to end", func() bool { _, ended := c.cat.Jobs(); return ended == 1 })
	r, line := taskRequest(t, c, 3, "tasks/get", `"taskId":"`+id+`"`, taskMeta)
	if str(r, "status") != "cancelled" || r.Result["result"] != nil || r.Result["error"] != nil {
		t.Errorf("tasks/get of a cancelled task: %s", line)
	}
}

// TestTaskInput: a provider that needs the client's input while it runs as
// a task parks it in input_required with the request (its key prefixed
// with the round); tasks/update with the answer resumes it (the provider
// runs again with the answer under its own key, and its state) to
// completion.
func TestTaskInput(t *testing.T) {
	t.Parallel()
	c, svc := newTaskClient(t, false, Options{})
	id := startTask(t, c, 1, "job_input", `{}`)
	awaitTask(t, svc, id, tasks.InputRequired)
	r, line := taskRequest(t, c, 2, "tasks/get", `"taskId":"`+id+`"`, taskMeta)
	if str(r, "status") != "input_required" || !strings.Contains(string(r.Result["inputRequests"]), `"1/confirm":{"method":"elicitation/create"`) ||
		r.Result["requestState"] != nil {
		t.Fatalf("tasks/get: %s, want input_required with the elicitation under key 1/confirm (the round, then the provider's key)", line)
	}
	// An answer to a key never asked is ignored; the task still waits.
	if _, line := taskRequest(t, c, 3, "tasks/update", `"taskId":"`+id+`","inputResponses":{"other":{"action":"accept"}}`, taskMeta); !strings.Contains(line, `"result":{"resultType":"complete"}`) {
		t.Errorf("tasks/update with an unknown key: %s, want an empty acknowledgement", line)
	}
	awaitTask(t, svc, id, tasks.InputRequired)
	if _, line := taskRequest(t, c, 4, "tasks/update", `"taskId":"`+id+`","inputResponses":{"1/confirm":{"action":"accept","content":{}}}`, taskMeta); !strings.Contains(line, `"result":{"resultType":"complete"}`) {
		t.Errorf("tasks/update: %s, want an empty acknowledgement", line)
	}
	task := awaitTask(t, svc, id, tasks.Completed)
	if res := string(task.Result); !strings.Contains(res, `confirmed: {\"confirm\":{\"action\":\"accept\",\"content\":{}}} state asked-once`) {
		t.Errorf("result %s, want the answer and the state handed back", res)
	}
}

// TestTaskFailed: a provider that goes away while the task runs fails it
// with a JSON-RPC error naming the cause, and no result.
func TestTaskFailed(t *testing.T) {
	t.Parallel()
	c, svc := newTaskClient(t, false, Options{})
	id := startTask(t, c, 1, "job_gone", `{}`)
	awaitTask(t, svc, id, tasks.Failed)
	r, line := taskRequest(t, c, 2, "tasks/get", `"taskId":"`+id+`"`, taskMeta)
	if str(r, "status") != "failed" || r.Result["result"] != nil || !strings.Contains(string(r.Result["error"]), `"code":-32603`) ||
		!strings.Contains(string(r.Result["error"]), "plugin mcptest exited") {
		t.Errorf("tasks/get of a failed task: %s", line)
	}
}

// TestTaskEscalate: a call of a tool that supports tasks, still running
// after EscalateAfter, becomes a task by the server's own decision.
func TestTaskEscalate(t *testing.T) {
	t.Parallel()
	c, svc := newTaskClient(t, false, Options{EscalateAfter: time.Millisecond})
	id := startTask(t, c, 1, "job_escalate", `{}`) // it waits until released: the escalation comes first
	c.cat.ReleaseJob(0)
	awaitTask(t, svc, id, tasks.Completed)
}

// TestTaskGating: without the extension declared, tasks/* answer -32021
// naming it, a tool that supports tasks runs for its request, and one
// that requires them is refused with -32021; in a session they need the
// stateless revision's _meta. Unknown task ids are -32602; the removed v1 methods -32601.
func TestTaskGating(t *testing.T) {
	t.Parallel()
	c, _ := newTaskClient(t, false, Options{})
	for i, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		r, line := taskRequest(t, c, 10+i, m, `"taskId":"x","inputResponses":{}`, statelessMeta)
		if r.Error == nil || r.Error.Code != CodeMissingCapability || !strings.Contains(string(r.Error.Data), `"io.modelcontextprotocol/tasks":{}`) {
			t.Errorf("%s without the extension: %s, want -32021 naming it", m, line)
		}
	}
	r, line := taskRequest(t, c, 20, "tools/call", `"name":"job_required","arguments":{}`, statelessMeta)
	if r.Error == nil || r.Error.Code != CodeMissingCapability {
		t.Errorf("a tool requiring tasks, without the extension: %s, want -32021", line)
	}
	c.write(`{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":"job","arguments":{},` + statelessMeta + `}}`)
	c.await("the job to wait", func() bool { n, _ := c.cat.Jobs(); return n == 1 })
	c.cat.ReleaseJob(0)
	if r, line := decodeReply(t, c.next()), ""; str(r, "resultType") != "complete" || !strings.Contains(string(r.Result["content"]), "job done") {
		t.Errorf("a tool supporting tasks, without the extension: %s %v, want its result", line, r)
	}
	for i, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		r, line := taskRequest(t, c, 30+i, m, `"taskId":"no-such-task","inputResponses":{}`, taskMeta)
		if r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, "no-such-task") {
			t.Errorf("%s of an unknown task: %s, want -32602 naming it", m, line)
		}
	}
	for i, m := range []string{"tasks/result", "tasks/list"} {
		r, line := taskRequest(t, c, 40+i, m, `"taskId":"x"`, taskMeta)
		if r.Error == nil || r.Error.Code != -32601 {
			t.Errorf("%s: %s, want -32601", m, line)
		}
	}

	// A session's request of a method only the stateless revision has is
	// served statelessly, and so needs _meta.
	s := newClient(t, clientOptions{server: Options{Tasks: c.srv.tasks}})
	s.initialize("2025-11-25")
	if out := s.roundtrip(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"x"}}`); len(out) != 1 ||
		!strings.Contains(out[0], `"code":-32602`) || !strings.Contains(out[0], "needs _meta") {
		t.Errorf("tasks/get in a session: %q, want -32602 asking for _meta", out)
	}
}

// TestTaskDiscover: server/discover declares the extension when the
// server runs tasks, and not otherwise.
func TestTaskDiscover(t *testing.T) {
	t.Parallel()
	c, _ := newTaskClient(t, false, Options{})
	_, line := taskRequest(t, c, 1, "server/discover", "", statelessMeta)
	if !strings.Contains(line, `"extensions":{"io.modelcontextprotocol/tasks":{}}`) || strings.Contains(line, `"tasks":{`) {
		t.Errorf("discover: %s, want the tasks extension (and no capabilities.tasks)", line)
	}
	plain := newClient(t, clientOptions{})
	_, line = taskRequest(t, plain, 1, "server/discover", "", statelessMeta)
	if strings.Contains(line, "extensions") {
		t.Errorf("discover without tasks: %s", line)
	}
}

// TestTaskListen: a subscriptions/listen naming a task is acknowledged
// with it and gets notifications/tasks as the task changes, the last one
// the completed task with its result; naming tasks without the extension
// is -32021.
func TestTaskListen(t *testing.T) {
	t.Parallel()
	c, svc := newTaskClient(t, true, Options{})
	id := startTask(t, c, 1, "job", `{}`)
	c.await("the job to wait", func() bool { n, _ := c.cat.Jobs(); return n == 1 })
	c.write(`{"jsonrpc":"2.0","id":2,"method":"subscriptions/listen","params":{"notifications":{"taskIds":["` + id + `"]},` + taskMeta + `}}`)
	if ack := c.next(); !strings.Contains(ack, `"notifications":{"taskIds":["`+id+`"]}`) {
		t.Fatalf("acknowledgement: %s, want the task id", ack)
	}
	c.cat.ReleaseJob(0)
	awaitTask(t, svc, id, tasks.Completed)
	for {
		n := c.next()
		if !strings.Contains(n, `"method":"notifications/tasks"`) || !strings.Contains(n, `"taskId":"`+id+`"`) ||
			!strings.Contains(n, `"io.modelcontextprotocol/subscriptionId":2`) {
			t.Fatalf("on the listen stream: %s, want notifications/tasks of the task", n)
		}
		if strings.Contains(n, `"status":"completed"`) {
			if !strings.Contains(n, `"text":"job done"`) {
				t.Errorf("the completed task's notification: %s, want its result", n)
			}
			break
		}
	}
	c.write(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
	c.settle()

	r, line := taskRequest(t, c, 3, "subscriptions/listen", `"notifications":{"taskIds":["`+id+`"]}`, statelessMeta)
	if r.Error == nil || r.Error.Code != CodeMissingCapability {
		t.Errorf("listen naming a task without the extension: %s, want -32021", line)
	}
}

// TestTaskServiceClosed: when the service closes (the replica stops), a
// running task's call is cancelled.
func TestTaskServiceClosed(t *testing.T) {
	t.Parallel()
	c, svc := newTaskClient(t, false, Options{})
	startTask(t, c, 1, "job", `{}`)
	c.await("the job to wait", func() bool { n, _ := c.cat.Jobs(); return n == 1 })
	svc.Close()
	c.await("the job's context to end", func() bool { _, ended := c.cat.Jobs(); return ended == 1 })
}
