package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/plughost/plughost/internal/redistest"
)

// TestTasksBelongToTheirCaller: attacks 1, 7 and 8 of issue 31, through
// two replicas sharing a real redis, with tokens of a real authorization
// server and access rules. Bob names alice's task on either replica:
// tasks/get, tasks/update (answering her elicitation), tasks/cancel are
// answered exactly as for a task nobody knows (-32602), her task goes on
// untouched, and a listen naming it streams bob nothing of it (his own
// task, named after hers, he is told of). Bob's retry with alice's
// requestState is refused; hers is accepted. The stateless lists, which
// the rules make differ per caller, say cacheScope "private".
func TestTasksBelongToTheirCaller(t *testing.T) {
	t.Parallel()
	as := startOIDCProvider(t)
	const resource = "https://mcp.example.com/mcp"
	rs := redistest.Start(t)
	auth := strings.TrimSuffix(as.AuthBlock(resource, "mcp:tools"), "}\n") + "  pass_claims = [\"groups\"]\n}\n"
	key := strings.Repeat("k", 40)
	lb := startReplicasWith(t, key, key, auth+accessRules+fmt.Sprintf("tasks {\n  redis {\n    address = %q\n  }\n}\n", rs.Socket))
	a, b := lb.replicas[0], lb.replicas[1]
	for _, r := range lb.replicas {
		r.stderr.await(t, "tasks are kept in redis")
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replica a:\n%s\nreplica b:\n%s", a.stderr, b.stderr)
		}
	})
	alice := as.Token(t, oidcAlice, resource, "mcp:tools")
	bob := as.Token(t, oidcBob, resource, "mcp:tools")

	// Alice's task waits for her answer; it runs on a.
	res := callAs(t, a.url, alice, "tools/call", "build", `"name":"build","arguments":{}`)
	var id string
	if json.Unmarshal(res.Result["taskId"], &id); id == "" {
		t.Fatalf("alice's tools/call build: %s, want a CreateTaskResult", res.raw)
	}
	var goKey string
	for deadline := time.Now().Add(30 * time.Second); goKey == ""; {
		task := callAs(t, b.url, alice, "tasks/get", id, `"taskId":"`+id+`"`)
		var reqs map[string]json.RawMessage
		json.Unmarshal(task.Result["inputRequests"], &reqs)
		for k := range reqs {
			goKey = k
		}
		if goKey == "" && time.Now().After(deadline) {
			t.Fatalf("alice's task never asked for her input: %s", task.raw)
		}
		time.Sleep(50 * time.Millisecond) // a client polls: the task has no other way to report
	}

	// Bob, on either replica, is answered as for an unknown task.
	unknown := rand.Text()
	for _, r := range []*replica{a, b} {
		for method, params := range map[string]string{
			"tasks/get":    `"taskId":"%s"`,
			"tasks/update": `"taskId":"%s","inputResponses":{"` + goKey + `":{"action":"decline"}}`,
			"tasks/cancel": `"taskId":"%s"`,
		} {
			his := callAs(t, r.url, bob, method, id, fmt.Sprintf(params, id))
			none := callAs(t, r.url, bob, method, unknown, fmt.Sprintf(params, unknown))
			if his.status != 400 || !strings.Contains(his.raw, `"code":-32602`) ||
				strings.ReplaceAll(his.raw, id, unknown) != none.raw || his.status != none.status {
				t.Errorf("bob's %s of alice's task: %d %s; want as for an unknown task: %d %s", method, his.status, his.raw, none.status, none.raw)
			}
		}
	}

	// A listen naming alice's task, then bob's own: bob hears of his own
	// only.
	mine := callAs(t, b.url, bob, "tools/call", "forever", `"name":"forever","arguments":{"id":"bob1"}`)
	var own string
	if json.Unmarshal(mine.Result["taskId"], &own); own == "" {
		t.Fatalf("bob's tools/call forever: %s, want a CreateTaskResult", mine.raw)
	}
	heard := listenAs(t, b.url, bob, []string{id, own}, own)
	if strings.Contains(heard, `"taskId":"`+id+`"`) {
		t.Errorf("bob's listen streamed alice's task:\n%s", heard)
	}
	if task := callAs(t, a.url, alice, "tasks/get", id, `"taskId":"`+id+`"`); !strings.Contains(task.raw, `"status":"input_required"`) {
		t.Errorf("alice's task after bob: %s, want it still waiting for her", task.raw)
	}
	if ack := callAs(t, b.url, alice, "tasks/update", id, `"taskId":"`+id+`","inputResponses":{"`+goKey+`":{"action":"accept"}}`); ack.status != 200 {
		t.Errorf("alice's tasks/update: %d %s", ack.status, ack.raw)
	}

	// Alice's requestState, replayed by bob with his answers: refused.
	asked := callAs(t, lb.url, alice, "tools/call", "wait_for_user", `"name":"wait_for_user","arguments":{}`)
	var state string
	var reqs map[string]json.RawMessage
	json.Unmarshal(asked.Result["requestState"], &state)
	json.Unmarshal(asked.Result["inputRequests"], &reqs)
	if state == "" || len(reqs) != 1 {
		t.Fatalf("alice's wait_for_user: %s, want an InputRequiredResult", asked.raw)
	}
	var k string
	for k = range reqs {
	}
	retry := `"name":"wait_for_user","arguments":{},"requestState":"` + state + `","inputResponses":{"` + k + `":{"action":"accept"}}`
	if got := callAs(t, lb.url, bob, "tools/call", "wait_for_user", retry); got.status != 400 || !strings.Contains(got.raw, "requestState is not valid") {
		t.Errorf("bob replaying alice's requestState: %d %s, want -32602 refusing the state", got.status, got.raw)
	}
	if got := callAs(t, lb.url, alice, "tools/call", "wait_for_user", retry); got.status != 200 || !strings.Contains(got.raw, "accept") {
		t.Errorf("alice's own retry: %d %s, want her answer taken", got.status, got.raw)
	}

	// Lists that differ per caller are nobody else's to cache.
	for _, who := range []string{alice, bob} {
		if got := callAs(t, lb.url, who, "tools/list", "", ""); !strings.Contains(got.raw, `"cacheScope":"private"`) {
			t.Errorf("tools/list under access rules: %s, want cacheScope private", got.raw)
		}
	}
}

// answer is one stateless answer: its HTTP status, body, and result.
type answer struct {
	status int
	raw    string
	Result map[string]json.RawMessage
}

// callAs sends one stateless request of MCP 2026-07-28 (declaring the
// tasks extension and elicitation) to url with token, with its routing
// headers (Mcp-Name when name is not empty).
func callAs(t *testing.T, url, token, method, name, params string) answer {
	t.Helper()
	if params != "" {
		params += ","
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{` + params + `"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` +
		`{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`
	resp := postAs(t, t.Context(), url, token, method, name, body)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, raw: string(raw)}
	var msg struct {
		Result map[string]json.RawMessage `json:"result"`
	}
	json.Unmarshal(raw, &msg)
	a.Result = msg.Result
	return a
}

func postAs(t *testing.T, ctx context.Context, url, token, method, name, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return resp
}

// listenAs opens a subscriptions/listen naming taskIds on url with token
// and returns what it streamed up to the first notifications/tasks of
// until (within 30 s), the stream then closed.
func listenAs(t *testing.T, url, token string, taskIDs []string, until string) string {
	t.Helper()
	ids, _ := json.Marshal(taskIDs)
	body := `{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"notifications":{"taskIds":` + string(ids) + `},"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` +
		`{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	resp := postAs(t, ctx, url, token, "subscriptions/listen", "", body)
	defer resp.Body.Close()
	var seen strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		seen.WriteString(line + "\n")
		if strings.Contains(line, `"notifications/tasks"`) && strings.Contains(line, `"taskId":"`+until+`"`) {
			return seen.String()
		}
	}
	t.Fatalf("the listen ended before telling of task %s (%v):\n%s", until, sc.Err(), seen.String())
	return ""
}
