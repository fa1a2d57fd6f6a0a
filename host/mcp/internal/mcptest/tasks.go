package mcptest

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/plughost/plughost/host/tasks"
	"github.com/plughost/plughost/host/tool"
)

// The task tools: their definitions declare execution.taskSupport (Tool
// returns them; they are not listed), so that a stateless call from a
// client declaring the tasks extension may go on as a task:
//
//	job           optional: detaches when it may, reports progress
//	              "working", then waits for ReleaseJob (→ "job done") or
//	              its cancellation (→ ctx.Err())
//	job_input     optional: detaches, then needs the client's answer to an
//	              elicitation (key "confirm"); returns "confirmed: <answer>"
//	              with the answer as the client sent it, and the state
//	job_gone      optional: detaches, then fails as a provider that went away
//	job_escalate  optional: never detaches itself; waits as job does (the
//	              server's EscalateAfter makes it a task)
//	job_echo      optional: detaches, then returns arguments.text at once
//	job_required  required: as job_gone's refusal when the client did not
//	              accept a task (a CapabilityRequired, as the real catalog
//	              answers), else as job
type jobs struct {
	mu      sync.Mutex
	waiting []chan struct{} // the jobs waiting, in order
	ended   int             // the jobs whose context ended while they waited
}

// taskTools are the task tools' definitions.
var taskTools = map[string]string{
	"job":          "optional",
	"job_input":    "optional",
	"job_gone":     "optional",
	"job_escalate": "optional",
	"job_echo":     "optional",
	"job_required": "required",
}

// Tool returns the definition of a listed tool (as ListTools lists it,
// compact) or a task tool, or nil (mcp.ToolLookup).
func (c *Catalog) Tool(name string) json.RawMessage {
	if slices.Contains(ToolNames, name) {
		return json.RawMessage(`{"name":"` + name + `","description":"the ` + name + ` tool","inputSchema":{"type":"object"}}`)
	}
	ts, ok := taskTools[name]
	if !ok {
		return nil
	}
	return json.RawMessage(`{"name":"` + name + `","inputSchema":{"type":"object"},"execution":{"taskSupport":"` + ts + `"}}`)
}

// callJob runs a task tool; ok is false for another name.
func (c *Catalog) callJob(ctx context.Context, call *tool.Call) (res json.RawMessage, err error, ok bool) {
	if _, ok := taskTools[call.Name]; !ok {
		return nil, nil, false
	}
	if call.Name == "job_required" && !call.Tasks {
		return nil, &tool.CapabilityRequired{Capabilities: json.RawMessage(`{"extensions":{"io.modelcontextprotocol/tasks":{}}}`),
			Message: `tool "job_required" runs only as a task`}, true
	}
	if call.Detach != nil && call.Name != "job_escalate" {
		call.Detach()
	}
	switch call.Name {
	case "job_echo":
		var args struct{ Text string }
		json.Unmarshal(call.Arguments, &args)
		return tool.TextResult(args.Text), nil, true
	case "job_gone":
		return nil, tool.Errorf(tool.ErrGone, "plugin mcptest exited during the call of tool %q", call.Name), true
	case "job_input":
		if call.Input == nil {
			return nil, &tool.InputRequired{Provider: "mcptest", State: "asked-once", Requests: json.RawMessage(
				`{"confirm":{"method":"elicitation/create","params":{"mode":"form","message":"Go on?","requestedSchema":{"type":"object","properties":{}}}}}`)}, true
		}
		return tool.TextResult("confirmed: " + string(json.RawMessage(call.Input.Responses)) + " state " + call.Input.State), nil, true
	}
	if call.Progress != nil {
		call.Progress(tool.Progress{Progress: 1, Message: "working"})
	}
	release := make(chan struct{})
	c.jobs.mu.Lock()
	c.jobs.waiting = append(c.jobs.waiting, release)
	c.jobs.mu.Unlock()
	if c.OnChange != nil {
		c.OnChange()
	}
	select {
	case <-release:
		return tool.TextResult("job done"), nil, true
	case <-ctx.Done():
		c.jobs.mu.Lock()
		c.jobs.ended++
		c.jobs.mu.Unlock()
		if c.OnChange != nil {
			c.OnChange()
		}
		return nil, ctx.Err(), true
	}
}

// Jobs counts the jobs that started waiting, and those whose context
// ended while they waited (cancelled).
func (c *Catalog) Jobs() (waiting, ended int) {
	c.jobs.mu.Lock()
	defer c.jobs.mu.Unlock()
	return len(c.jobs.waiting), c.jobs.ended
}

// ReleaseJob lets the i-th job that waited return "job done".
func (c *Catalog) ReleaseJob(i int) {
	c.jobs.mu.Lock()
	defer c.jobs.mu.Unlock()
	close(c.jobs.waiting[i])
}

// AwaitTask waits until cond holds of the task, re-reading it on each of
// its changes (svc.Watch), for at most 10 s; it returns the task.
func AwaitTask(t testing.TB, svc *tasks.Service, id, what string, cond func(*tasks.Task) bool) *tasks.Task {
	t.Helper()
	changed := make(chan struct{}, 1)
	stop := svc.Watch([]string{id}, func(*tasks.Task) {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	defer stop()
	timeout := time.After(10 * time.Second)
	for {
		task, err := svc.Get(context.Background(), id)
		if err == nil && cond(task) {
			return task
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("task %s: %+v, %v; want %s", id, task, err, what)
		}
	}
}
