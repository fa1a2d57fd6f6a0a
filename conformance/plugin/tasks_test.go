package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/pluginproto"
	"github.com/plughost/plughost/pluginproto/plugintest"
)

// suiteTaskCaps are the client capabilities of the suite's tasks scenarios
// that answer input requests.
var suiteTaskCaps = json.RawMessage(`{"elicitation":{},"sampling":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`)

// taskCall is one call of a task fixture through plugintest (the host's
// checks and its gating of tasks around the handler): whether the handler
// went on as a task, and what the call returned.
type taskCall struct {
	detached bool
	res      json.RawMessage
	err      error
}

// callTask calls tool with args (nil: {}) from a client that accepts a task
// when tasks is set, with input on a retry.
func callTask(ctx context.Context, p *pluginproto.Plugin, tool, args string, tasks bool, input *pluginhost.Input) *taskCall {
	c := &taskCall{}
	if args == "" {
		args = "{}"
	}
	c.res, c.err = plugintest.CallTool(ctx, p, &pluginhost.CallRequest{
		Tool: tool, Arguments: json.RawMessage(args), ClientCapabilities: suiteTaskCaps, Input: input,
		Tasks: tasks, Detach: func() { c.detached = true },
	})
	return c
}

// Each fixture declares the task support its scenarios expect in
// tools/list (execution.taskSupport; none for greet).
func TestTaskFixturesDeclareTaskSupport(t *testing.T) {
	t.Parallel()
	want := map[string]string{
		"greet": "", "slow_compute": "optional", "failing_job": "required", "protocol_error_job": "optional",
		"confirm_delete": "optional", "multi_input": "optional", "test_tool_with_task": "required",
	}
	got := map[string]string{}
	for _, raw := range newPlugin().Tools() {
		var d struct {
			Name      string
			Execution *struct{ TaskSupport string }
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		if _, ok := want[d.Name]; ok {
			got[d.Name] = ""
			if d.Execution != nil {
				got[d.Name] = d.Execution.TaskSupport
			}
		} else if d.Execution != nil {
			t.Errorf("%s declares execution %+v; only the task fixtures should", d.Name, *d.Execution)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("execution.taskSupport (-want +got):\n%s", diff)
	}
	if err := plugintest.CheckTools(newPlugin()); err != nil {
		t.Error(err)
	}
}

// greet answers at once, and never as a task.
func TestGreet(t *testing.T) {
	t.Parallel()
	for _, tasks := range []bool{false, true} {
		c := callTask(t.Context(), newPlugin(), "greet", `{"name":"World"}`, tasks, nil)
		if got := text(t, "greet", c.res, c.err); got != "Hello, World!" || c.detached {
			t.Errorf("tasks %v: %q, detached %v; want Hello, World! and no task", tasks, got, c.detached)
		}
	}
}

// slow_compute answers 0 seconds at once; otherwise it goes on as a task
// when the client accepts one, reports its progress and names its label
// and seconds; cancelled, it stops.
func TestSlowCompute(t *testing.T) {
	t.Parallel()
	p := newPlugin()
	for _, tc := range []struct {
		seconds       string
		tasks, detach bool
	}{{"0", true, false}, {"0", false, false}, {"0.05", true, true}, {"0.05", false, false}} {
		var progress []string
		res, err := plugintest.CallTool(t.Context(), p, &pluginhost.CallRequest{
			Tool: "slow_compute", Arguments: json.RawMessage(`{"seconds":` + tc.seconds + `,"label":"L"}`),
			Tasks: tc.tasks, Detach: func() { progress = append(progress, "detach") },
			Progress: func(_, _ float64, msg string) { progress = append(progress, msg) },
		})
		want := fmt.Sprintf(`slow_compute "L" computed for %s s`, tc.seconds)
		if got := text(t, "slow_compute", res, err); got != want {
			t.Errorf("%s s, tasks %v: %q, want %q", tc.seconds, tc.tasks, got, want)
		}
		var wantProgress []string
		if tc.seconds != "0" {
			wantProgress = []string{"L: 0 of 0.05 s", "L: done"}
		}
		if tc.detach {
			wantProgress = append([]string{"detach"}, wantProgress...)
		}
		if diff := cmp.Diff(wantProgress, progress); diff != "" {
			t.Errorf("%s s, tasks %v: detach and progress (-want +got):\n%s", tc.seconds, tc.tasks, diff)
		}
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	c := callTask(ctx, p, "slow_compute", `{"seconds":60,"label":"cancel"}`, true, nil)
	var r result
	if c.err != nil || json.Unmarshal(c.res, &r) != nil || !r.IsError || r.Content[0].Text != `slow_compute "cancel" cancelled after 0 of 60 s: context canceled` || !c.detached {
		t.Errorf("a cancelled task: %s, %v, detached %v; want it to stop at once with an isError result", c.res, c.err, c.detached)
	}
}

// failing_job runs only as a task: from a client that accepts none the
// host refuses it (-32021 naming the extension); as a task, it completes
// with an isError result.
func TestFailingJob(t *testing.T) {
	t.Parallel()
	p := newPlugin()
	c := callTask(t.Context(), p, "failing_job", "", false, nil)
	var cr *pluginproto.CapabilityRequiredError
	if !errors.As(c.err, &cr) || string(cr.Capabilities) != `{"extensions":{"io.modelcontextprotocol/tasks":{}}}` {
		t.Errorf("without a task: %s, %v; want the tasks extension required", c.res, c.err)
	}
	c = callTask(t.Context(), p, "failing_job", "", true, nil)
	var r result
	if c.err != nil || json.Unmarshal(c.res, &r) != nil || !r.IsError || r.Content[0].Text != failingJobText || !c.detached {
		t.Errorf("as a task: %s, %v, detached %v; want an isError result %q after going on as a task", c.res, c.err, c.detached, failingJobText)
	}
}

// protocol_error_job goes on as a task and fails: the plugin's failure,
// not the tool's, which fails the task with a JSON-RPC error.
func TestProtocolErrorJob(t *testing.T) {
	t.Parallel()
	p := newPlugin()
	p.Logger().SetLevel(hclog.Off) // keep the panic's stack out of the test output
	c := callTask(t.Context(), p, "protocol_error_job", "", true, nil)
	if !errors.Is(c.err, plugintest.ErrPluginFailed) || !c.detached {
		t.Errorf("%s, %v, detached %v; want ErrPluginFailed after going on as a task", c.res, c.err, c.detached)
	}
}

// confirm_delete goes on as a task, then asks its question: the task's
// input round. The retry with the answer (tasks set again, as the host
// runs it) completes it.
func TestConfirmDelete(t *testing.T) {
	t.Parallel()
	p := newPlugin()
	args := `{"filename":"rt.txt"}`
	c := callTask(t.Context(), p, "confirm_delete", args, true, nil)
	ir := needsInput(t, "round 1", c.res, c.err)
	if !c.detached {
		t.Error("round 1 did not go on as a task before asking")
	}
	sameJSON(t, "round 1's requests", `{"confirm_delete":{"method":"elicitation/create","params":{"message":"Delete rt.txt?",`+
		`"requestedSchema":{"type":"object","properties":{"confirm":{"type":"boolean"}},"required":["confirm"]}}}}`, ir.Requests)
	for answer, want := range map[string]string{
		acceptForm(`{"confirm":true}`):  "Deleted rt.txt (nothing was deleted: this is a test fixture)",
		acceptForm(`{"confirm":false}`): "Kept rt.txt: the user did not confirm (accept)",
		`{"action":"decline"}`:          "Kept rt.txt: the user did not confirm (decline)",
	} {
		c := callTask(t.Context(), p, "confirm_delete", args, true,
			&pluginhost.Input{Responses: json.RawMessage(`{"confirm_delete":` + answer + `}`), State: ir.State})
		if got := text(t, "round 2", c.res, c.err); got != want || !c.detached {
			t.Errorf("answer %s: %q, detached %v; want %q", answer, got, c.detached, want)
		}
	}
}

// multi_input asks two things in one round, so two keys are pending at
// once; with both answers (the suite's, each a form with name and
// confirm) it names them.
func TestMultiInput(t *testing.T) {
	t.Parallel()
	p := newPlugin()
	c := callTask(t.Context(), p, "multi_input", "", true, nil)
	ir := needsInput(t, "round 1", c.res, c.err)
	var asked map[string]json.RawMessage
	if err := json.Unmarshal(ir.Requests, &asked); err != nil || len(asked) != 2 || asked["name"] == nil || asked["confirm"] == nil || !c.detached {
		t.Fatalf("round 1 asked %s, detached %v; want name and confirm at once, in a task", ir.Requests, c.detached)
	}
	c = callTask(t.Context(), p, "multi_input", "", true, &pluginhost.Input{State: ir.State, Responses: json.RawMessage(
		`{"name":` + acceptForm(`{"name":"partial-1","confirm":true}`) + `,"confirm":` + acceptForm(`{"name":"partial-2","confirm":true}`) + `}`)})
	if got, want := text(t, "round 2", c.res, c.err), "name: partial-1, confirmed: true"; got != want {
		t.Errorf("round 2 = %q, want %q", got, want)
	}
}

// test_tool_with_task asks the user's name in an ordinary input round,
// before any task; the retry with the answer goes on as a task, whose
// result holds the name.
func TestToolWithTask(t *testing.T) {
	t.Parallel()
	p := newPlugin()
	c := callTask(t.Context(), p, "test_tool_with_task", "", true, nil)
	ir := needsInput(t, "round 1", c.res, c.err)
	sameJSON(t, "round 1's requests", "{"+wantUserName+"}", ir.Requests)
	if c.detached {
		t.Error("round 1 went on as a task: its input round must be synchronous")
	}
	c = callTask(t.Context(), p, "test_tool_with_task", "", true,
		&pluginhost.Input{Responses: json.RawMessage(`{"user_name":` + acceptForm(`{"name":"Alice"}`) + `}`), State: ir.State})
	if got, want := text(t, "round 2", c.res, c.err), "Hello, Alice! (from a task)"; got != want || !c.detached {
		t.Errorf("round 2 = %q, detached %v; want %q from a task", got, c.detached, want)
	}
}
