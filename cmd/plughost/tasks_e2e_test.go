package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plughost/plughost/internal/redistest"
)

// replicaTimeout is the redis block's replica_timeout in the tasks tests:
// the bound within which a killed replica's tasks fail.
const replicaTimeout = 2 * time.Second

// TestTasksAcrossReplicas runs two plughost replicas sharing a real
// redis-server (Debian's) behind HAProxy, and drives MCP 2026-07-28's
// tasks extension with raw JSON-RPC over HTTP: a task created on one
// replica is polled, fed its input and finished through the other and
// through the balancer; a task cancelled through the other replica is
// cancelled, and its call ends in the plugin of the replica running it;
// the task of a replica killed with SIGKILL is failed, naming the replica,
// within replica_timeout and a third (two missed checks).
func TestTasksAcrossReplicas(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	key := strings.Repeat("k", 40)
	lb := startReplicasWith(t, key, key, fmt.Sprintf("tasks {\n  redis {\n    address = %q\n    replica_timeout = %q\n  }\n}\n",
		rs.Socket, replicaTimeout))
	a, b := lb.replicas[0], lb.replicas[1]
	for _, r := range lb.replicas {
		r.stderr.await(t, "tasks are kept in redis")
	}

	// Created on a; polled through b until it waits for the user.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replica a:\n%s", a.stderr)
		}
	})
	id := createTask(t, a.url, "build", `{}`)
	var goKey string // as the task names the plugin's request
	awaitStatus(t, b.url, id, "input_required", func(task map[string]json.RawMessage) {
		var reqs map[string]struct{ Method string }
		json.Unmarshal(task["inputRequests"], &reqs)
		for k, r := range reqs {
			if strings.HasSuffix(k, "go") && r.Method == "elicitation/create" {
				goKey = k
			}
		}
		if len(reqs) != 1 || goKey == "" {
			t.Fatalf("input_required without the plugin's elicitation: %s", task["inputRequests"])
		}
	})
	// Answered through the balancer (either replica); finished on a,
	// seen through b and through the balancer.
	if res := rpc(t, lb.url, "tasks/update", id, `"taskId":"`+id+`","inputResponses":{"`+goKey+`":{"action":"accept"}}`); string(res["resultType"]) != `"complete"` || len(res) != 1 {
		t.Fatalf("tasks/update: %v, want an empty acknowledgement", res)
	}
	awaitStatus(t, b.url, id, "completed", func(task map[string]json.RawMessage) {
		if !strings.Contains(string(task["result"]), "built after accept") {
			t.Errorf("completed task's result %s, want the plugin's text with the user's answer", task["result"])
		}
	})
	if task := rpc(t, lb.url, "tasks/get", id, `"taskId":"`+id+`"`); string(task["status"]) != `"completed"` {
		t.Errorf("through the balancer: %v", task)
	}

	// Cancelled through b: a's plugin sees its call's context end.
	id = createTask(t, a.url, "forever", `{"id":"f1"}`)
	awaitStatus(t, b.url, id, "working", nil)
	if res := rpc(t, b.url, "tasks/cancel", id, `"taskId":"`+id+`"`); len(res) != 1 {
		t.Fatalf("tasks/cancel: %v, want an empty acknowledgement", res)
	}
	a.stderr.await(t, "forever: cancelled f1")
	awaitStatus(t, a.url, id, "cancelled", nil)

	// a killed: its task fails within replica_timeout, seen from b.
	id = createTask(t, a.url, "forever", `{"id":"f2"}`)
	awaitStatus(t, b.url, id, "working", nil)
	a.killed = true
	a.cmd.Process.Signal(syscall.SIGKILL)
	<-a.exited
	killed := time.Now()
	awaitStatus(t, b.url, id, "failed", func(task map[string]json.RawMessage) {
		if bound := replicaTimeout + replicaTimeout/3 + time.Second; time.Since(killed) > bound {
			t.Errorf("the task failed %v after its replica was killed, want within replica_timeout + replica_timeout/3 (%v) and a poll",
				time.Since(killed), replicaTimeout+replicaTimeout/3)
		}
		if !strings.Contains(string(task["error"]), `"code":-32603`) || !strings.Contains(string(task["error"]), "stopped") {
			t.Errorf("failed task's error %s, want -32603 saying its replica stopped", task["error"])
		}
	})
}

// createTask calls tool with args on the replica at url and returns the
// id of the task its CreateTaskResult names.
func createTask(t *testing.T, url, tool, args string) string {
	t.Helper()
	res := rpc(t, url, "tools/call", tool, `"name":"`+tool+`","arguments":`+args)
	var id string
	if json.Unmarshal(res["taskId"], &id); string(res["resultType"]) != `"task"` || id == "" {
		raw, _ := json.Marshal(res)
		t.Fatalf("tools/call %s: %s, want a CreateTaskResult", tool, raw)
	}
	return id
}

// awaitStatus polls tasks/get on url, as a client does, until the task
// has status (failing on another terminal status, or after 30 s), then
// hands the task to check (when not nil).
func awaitStatus(t *testing.T, url, id, status string, check func(map[string]json.RawMessage)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		task := rpc(t, url, "tasks/get", id, `"taskId":"`+id+`"`)
		var got string
		json.Unmarshal(task["status"], &got)
		switch {
		case got == status:
			if check != nil {
				check(task)
			}
			return
		case got == "completed" || got == "failed" || got == "cancelled", time.Now().After(deadline):
			t.Fatalf("task %s: %v, want status %s", id, task, status)
		}
		time.Sleep(50 * time.Millisecond) // the client's poll interval: a task has no other way to report
	}
}

// rpc sends one stateless request of MCP 2026-07-28 (declaring the tasks
// extension and elicitation) to url, with its routing headers, and returns
// its result's members; any error fails the test.
func rpc(t *testing.T, url, method, name, params string) map[string]json.RawMessage {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{` + params + `,"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` +
		`{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`
	req, _ := http.NewRequest("POST", url, bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	req.Header.Set("Mcp-Name", name)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var msg struct {
		Result map[string]json.RawMessage `json:"result"`
		Error  json.RawMessage            `json:"error"`
	}
	if err := json.Unmarshal(raw, &msg); err != nil || resp.StatusCode != 200 || msg.Error != nil {
		t.Fatalf("%s: HTTP %d %s", method, resp.StatusCode, raw)
	}
	return msg.Result
}
