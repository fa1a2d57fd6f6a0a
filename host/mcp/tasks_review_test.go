package mcp

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plughost/plughost/host/tasks"
)

// TestTaskAnsweredOnceQuickResult: a provider that detaches and returns at
// once (job_echo) gets its request answered with the CreateTaskResult (or
// its result), exactly once (the call's result reached runTask, which
// cancelled c.ctx, before createTask answered: it was never answered).
func TestTaskAnsweredOnceQuickResult(t *testing.T) {
	t.Parallel()
	c, _ := newTaskClient(t, false, Options{})
	for i := 1; i <= 300; i++ {
		c.write(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"tools/call","params":{"name":"job_echo","arguments":{"text":"hi"},` + taskMeta + `}}`)
		c.settle()
		out := c.take()
		if len(out) != 1 || !strings.Contains(out[0], `"id":`+strconv.Itoa(i)+`,`) {
			t.Fatalf("call %d: the server answered %q, want exactly one answer", i, out)
		}
	}
}

// TestTaskEscalateRefusedCall: a tools/call refused before it runs (here
// its requestState is not valid) leaves no escalation behind (an
// escalation of a call never admitted "left" the session it never joined:
// the host panicked with a negative WaitGroup counter).
func TestTaskEscalateRefusedCall(t *testing.T) {
	t.Parallel()
	c, svc := newTaskClient(t, false, Options{EscalateAfter: 20 * time.Millisecond})
	r, line := taskRequest(t, c, 1, "tools/call", `"name":"job","arguments":{},"requestState":"not-sealed"`, taskMeta)
	if r.Error == nil || r.Error.Code != -32602 {
		t.Fatalf("tools/call with a broken requestState: %s, want -32602", line)
	}
	time.Sleep(200 * time.Millisecond) // ten escalation delays: one would have fired (an absence: no event to await)
	if out := c.take(); len(out) != 0 {
		t.Errorf("after the refusal the server wrote %q, want nothing", out)
	}
	if n, _ := c.cat.Jobs(); n != 0 {
		t.Errorf("%d jobs ran, want none", n)
	}
	_ = svc
}

// TestTaskEscalateWhileQueued: a call waiting for one of the session's
// slots is not escalated (it has not reached its provider: nothing to
// become a task); once it runs it is, and its slot is given back when its
// task ends, so the session runs the next call.
func TestTaskEscalateWhileQueued(t *testing.T) {
	t.Parallel()
	c, svc := newTaskClient(t, false, Options{MaxInFlight: 1, EscalateAfter: 20 * time.Millisecond})
	// 1 holds the only slot: no extension declared, so never a task.
	c.write(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"job","arguments":{},` + statelessMeta + `}}`)
	c.await("job 1 to wait", func() bool { n, _ := c.cat.Jobs(); return n == 1 })
	// 2 waits for the slot, unanswered.
	c.write(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"job_escalate","arguments":{},` + taskMeta + `}}`)
	c.await("call 2 to be dispatched", func() bool { return c.obs.reads.Load() > c.sent })
	time.Sleep(100 * time.Millisecond) // five escalation delays: one would have fired (an absence: no event to await)
	if out := c.take(); len(out) != 0 {
		t.Fatalf("while 2 waits for the slot the server wrote %q, want nothing", out)
	}
	c.cat.ReleaseJob(0)
	if r := decodeReply(t, c.next()); str(r, "resultType") != "complete" {
		t.Fatalf("call 1: %v", r)
	}
	// 2 runs, and is escalated.
	r, line := decodeReply(t, c.next()), ""
	id := str(r, "taskId")
	if str(r, "resultType") != "task" || id == "" {
		t.Fatalf("call 2 once running: %s %v, want its task", line, r)
	}
	c.await("job 2 to wait", func() bool { n, _ := c.cat.Jobs(); return n == 2 })
	c.cat.ReleaseJob(1)
	awaitTask(t, svc, id, tasks.Completed)
	// The slot is free again.
	c.write(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"job","arguments":{},` + statelessMeta + `}}`)
	c.await("job 3 to start (the slot to be free)", func() bool { n, _ := c.cat.Jobs(); return n == 3 })
	c.cat.ReleaseJob(2)
	c.next()
}

// TestTaskListenSeesCurrentState: a client that subscribes to a task which
// has already reached its end (here between the CreateTaskResult and its
// subscriptions/listen) learns it on the stream: the spec lets a client
// rely on notifications alone, and a terminal task never changes again.
func TestTaskListenSeesCurrentState(t *testing.T) {
	t.Parallel()
	c, svc := newTaskClient(t, true, Options{})
	id := startTask(t, c, 1, "job", `{}`)
	c.await("the job to wait", func() bool { n, _ := c.cat.Jobs(); return n == 1 })
	c.cat.ReleaseJob(0)
	awaitTask(t, svc, id, tasks.Completed) // it completes before the client listens
	c.write(`{"jsonrpc":"2.0","id":2,"method":"subscriptions/listen","params":{"notifications":{"taskIds":["` + id + `"]},` + taskMeta + `}}`)
	if ack := c.next(); !strings.Contains(ack, `"taskIds":["`+id+`"]`) {
		t.Fatalf("acknowledgement: %s", ack)
	}
	c.await("notifications/tasks of the completed task", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, n := range c.out[c.seen:] {
			if strings.Contains(string(n), `"notifications/tasks"`) && strings.Contains(string(n), `"status":"completed"`) {
				return true
			}
		}
		return false
	})
	c.take()
	c.write(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
	c.settle()
}
