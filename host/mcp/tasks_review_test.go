package mcp

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plughost/plughost/host/tasks"
)

// TestTaskAnsweredOnceQuickResult: a provider that detaches and returns at
// once (job_echo) must still get its request answered with the
// CreateTaskResult (or its result), exactly once. Today the call's result
// can reach runTask, which cancels c.ctx, before createTask's leave():
// leave then reports the call cancelled and the request is never answered.
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
// its requestState is not valid) must leave no escalation behind. Today
// startTaskable arms the escalation timer before retryInput/admit, and
// nothing stops it on their error paths: it fires, creates a task for a
// call that never ran and "leaves" a call never admitted (s.work.Done
// without Add: the host panics with a negative WaitGroup counter).
func TestTaskEscalateRefusedCall(t *testing.T) {
	t.Parallel()
	c, svc := newTaskClient(t, false, Options{EscalateAfter: 20 * time.Millisecond})
	r, line := taskRequest(t, c, 1, "tools/call", `"name":"job","arguments":{},"requestState":"not-sealed"`, taskMeta)
	if r.Error == nil || r.Error.Code != -32602 {
		t.Fatalf("tools/call with a broken requestState: %s, want -32602", line)
	}
	time.Sleep(200 * time.Millisecond) // the escalation would have fired
	if out := c.take(); len(out) != 0 {
		t.Errorf("after the refusal the server wrote %q, want nothing", out)
	}
	if n, _ := c.cat.Jobs(); n != 0 {
		t.Errorf("%d jobs ran, want none", n)
	}
	_ = svc
}

// TestTaskEscalateWhileQueued: a call escalated while it waits for one of
// the session's slots is answered with its task and leaves the session
// (leave: no slot yet); when it then gets a slot and runs, runTask never
// gives the slot back. With MaxInFlight 1 the session then runs nothing
// more.
func TestTaskEscalateWhileQueued(t *testing.T) {
	t.Parallel()
	c, svc := newTaskClient(t, false, Options{MaxInFlight: 1, EscalateAfter: 20 * time.Millisecond})
	// 1 holds the only slot: no extension declared, so never a task.
	c.write(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"job","arguments":{},` + statelessMeta + `}}`)
	c.await("job 1 to wait", func() bool { n, _ := c.cat.Jobs(); return n == 1 })
	// 2 waits for the slot and is escalated meanwhile.
	id := startTask(t, c, 2, "job_escalate", `{}`)
	c.cat.ReleaseJob(0)
	if r := decodeReply(t, c.next()); str(r, "resultType") != "complete" {
		t.Fatalf("call 1: %v", r)
	}
	c.await("job 2 to wait", func() bool { n, _ := c.cat.Jobs(); return n == 2 })
	c.cat.ReleaseJob(1)
	awaitTask(t, svc, id, tasks.Completed)
	// The slot must be free again.
	c.write(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"job","arguments":{},` + statelessMeta + `}}`)
	c.await("job 3 to start (the slot to be free)", func() bool { n, _ := c.cat.Jobs(); return n == 3 })
	c.cat.ReleaseJob(2)
	c.next()
}

// TestTaskListenSeesCurrentState: a client that subscribes to a task which
// has already reached its end (here between the CreateTaskResult and its
// subscriptions/listen) must still learn it on the stream: the spec lets a
// client rely on notifications alone. Today Watch records the state it
// finds as "already seen" and only reports later changes: a terminal task
// never changes again, so the stream stays silent forever.
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
	c.await("notifications/tasks of the completed task (the watch polls every 3s)", func() bool {
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

// TestTaskCancelWhileQueued: a call escalated while it waits for a slot
// has left the session (createTask's leave). Cancelling its task (here
// through the service, as tasks/cancel from another session or replica
// does) ends its context, so run's takeSlot fails and run calls finish:
// a second leave, which closes c.task.answered again and calls
// s.work.Done again. Today: panic.
func TestTaskCancelWhileQueued(t *testing.T) {
	t.Parallel()
	c, svc := newTaskClient(t, false, Options{MaxInFlight: 1, EscalateAfter: 20 * time.Millisecond})
	c.write(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"job","arguments":{},` + statelessMeta + `}}`)
	c.await("job 1 to wait", func() bool { n, _ := c.cat.Jobs(); return n == 1 })
	id := startTask(t, c, 2, "job_escalate", `{}`) // queued behind 1, escalated
	if err := svc.Cancel(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	c.cat.ReleaseJob(0)
	if r := decodeReply(t, c.next()); str(r, "resultType") != "complete" {
		t.Fatalf("call 1: %v", r)
	}
	if n, _ := c.cat.Jobs(); n != 1 {
		t.Errorf("the cancelled task's job ran")
	}
}
