package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/plughost/plughost/pluginproto"
)

// The tools of the suite's tasks scenarios (MCP 2026-07-28's tasks
// extension, io.modelcontextprotocol/tasks, SEP-2663; the suite
// 0.2.0-alpha.12). Each declares whether its calls may go on as tasks
// (Tool.TaskSupport) and decides with Request.RunAsTask when they do: the
// host answers the client with a task at once, and the handler's progress,
// input rounds and outcome go on through it. A handler whose client
// accepts no task goes on synchronously; the host refuses a call of a
// TaskRequired tool from such a client before the handler runs (-32021).

// The texts of the task fixtures.
const (
	failingJobText = "failing_job failed: the job always fails (a tool execution error: the task completes with an isError result)"
	protocolPanic  = "protocol_error_job: the job always fails with a protocol error (a panic: the task fails with -32603)"
)

// jobTime is how long failing_job works before it fails.
const jobTime = time.Second

// withTaskWait is how long test_tool_with_task works once it is a task.
const withTaskWait = 200 * time.Millisecond

// The input schemas of the task fixtures that take arguments.
var (
	greetSchema       = json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","description":"Who to greet"}},"required":["name"]}`)
	slowComputeSchema = json.RawMessage(`{"type":"object","properties":{` +
		`"seconds":{"type":"number","minimum":0,"maximum":600,"description":"How long to compute; 0 answers at once"},` +
		`"label":{"type":"string","description":"Names the computation in its progress and result"}},"required":["seconds","label"]}`)
	filenameSchema = json.RawMessage(`{"type":"object","properties":{"filename":{"type":"string","description":"The file to delete (nothing is deleted)"}},"required":["filename"]}`)
)

// The input requests of the task fixtures, by their keys (test_tool_with_task
// asks askUserName, as test_input_required_result_elicitation does).
var (
	askMultiName    = pluginproto.ElicitParams{Key: "name", Message: "What is your name?", RequestedSchema: nameForm}
	askMultiConfirm = pluginproto.ElicitParams{Key: "confirm", Message: "Do you confirm?", RequestedSchema: formOf("confirm", "boolean")}
)

// askDelete asks the user to confirm the deletion of filename.
func askDelete(filename string) pluginproto.ElicitParams {
	return pluginproto.ElicitParams{Key: "confirm_delete", Message: fmt.Sprintf("Delete %s?", filename), RequestedSchema: formOf("confirm", "boolean")}
}

// taskFixtures are the tools of the tasks scenarios.
func taskFixtures() []fixture {
	return []fixture{
		{name: "greet", schema: greetSchema, handler: greet,
			description: `Greets name: "Hello, <name>!". Never a task (it declares no task support).`},
		{name: "slow_compute", schema: slowComputeSchema, handler: slowCompute, tasks: pluginproto.TaskOptional,
			description: "Computes for the given seconds, reporting progress each second, then names its label and the seconds. " +
				"0 seconds answers at once; otherwise it goes on as a task when the client accepts one."},
		{name: "failing_job", handler: failingJob, tasks: pluginproto.TaskRequired,
			description: "Runs only as a task: works for a second, then fails with a tool execution error (the task completes with an isError result)."},
		{name: "protocol_error_job", handler: protocolErrorJob, tasks: pluginproto.TaskOptional,
			description: "Goes on as a task, then fails with a protocol error (it panics: the task fails with -32603)."},
		{name: "confirm_delete", schema: filenameSchema, handler: confirmDelete, tasks: pluginproto.TaskOptional,
			description: `Goes on as a task, then asks the user to confirm the deletion of filename (elicitation, key "confirm_delete"); deletes nothing, but says whether it would have.`},
		{name: "multi_input", handler: multiInput, tasks: pluginproto.TaskOptional,
			description: `Goes on as a task, then asks the user two things at once (elicitation, keys "name" and "confirm") and returns both answers.`},
		{name: "test_tool_with_task", handler: toolWithTask, tasks: pluginproto.TaskRequired,
			description: `Runs only as a task, once it has asked the user's name (elicitation, key "user_name") in an input round: ` +
				`the task then greets them: "Hello, <name>! (from a task)".`},
	}
}

func greet(_ context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
	var args struct {
		Name string `json:"name"`
	}
	if err := req.Bind(&args); err != nil {
		return nil, err
	}
	return pluginproto.TextResult("Hello, " + args.Name + "!"), nil
}

func slowCompute(ctx context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
	var args struct {
		Seconds float64 `json:"seconds"`
		Label   string  `json:"label"`
	}
	if err := req.Bind(&args); err != nil {
		return nil, err
	}
	done := fmt.Sprintf("slow_compute %q computed for %g s", args.Label, args.Seconds)
	if args.Seconds == 0 {
		return pluginproto.TextResult(done), nil // nothing to wait for: no task
	}
	req.RunAsTask()
	for elapsed := 0.0; elapsed < args.Seconds; {
		req.Progress(elapsed, args.Seconds, fmt.Sprintf("%s: %g of %g s", args.Label, elapsed, args.Seconds))
		step := min(1, args.Seconds-elapsed)
		if err := pause(ctx, time.Duration(step*float64(time.Second))); err != nil {
			return nil, fmt.Errorf("slow_compute %q cancelled after %g of %g s: %w", args.Label, elapsed, args.Seconds, err)
		}
		elapsed += step
	}
	req.Progress(args.Seconds, args.Seconds, args.Label+": done")
	return pluginproto.TextResult(done), nil
}

func failingJob(ctx context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
	req.RunAsTask()
	if err := pause(ctx, jobTime); err != nil {
		return nil, fmt.Errorf("failing_job cancelled: %w", err)
	}
	return pluginproto.ErrorResult(failingJobText), nil
}

func protocolErrorJob(_ context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
	req.RunAsTask()
	panic(protocolPanic)
}

func confirmDelete(ctx context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
	var args struct {
		Filename string `json:"filename"`
	}
	if err := req.Bind(&args); err != nil {
		return nil, err
	}
	// A task first: the question is asked through it (the task waits in
	// input_required), and the handler runs again with the answer.
	req.RunAsTask()
	res, err := req.Elicit(ctx, askDelete(args.Filename))
	if err != nil {
		return asked(err, "elicitation")
	}
	if !confirmed(res) {
		return pluginproto.TextResult(fmt.Sprintf("Kept %s: the user did not confirm (%s)", args.Filename, res.Action)), nil
	}
	return pluginproto.TextResult(fmt.Sprintf("Deleted %s (nothing was deleted: this is a test fixture)", args.Filename)), nil
}

// confirmed reports whether the user accepted a form with confirm: true.
func confirmed(res *pluginproto.ElicitResult) bool {
	var form struct {
		Confirm bool `json:"confirm"`
	}
	_ = json.Unmarshal(res.Content, &form) // absent or null content: not confirmed
	return res.Action == "accept" && form.Confirm
}

func multiInput(ctx context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
	req.RunAsTask()
	// Both are asked before either answer is looked at, so that they go
	// to the client together: two keys pending at once.
	name, errName := req.Elicit(ctx, askMultiName)
	confirm, errConfirm := req.Elicit(ctx, askMultiConfirm)
	if err := firstError(errName, errConfirm); err != nil {
		return asked(err, "elicitation")
	}
	who, why := accepted(name, "name")
	if who == "" {
		return pluginproto.ErrorResult("No name: %s", why), nil
	}
	return pluginproto.TextResult(fmt.Sprintf("name: %s, confirmed: %v", who, confirmed(confirm))), nil
}

func toolWithTask(ctx context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
	// The name is asked before RunAsTask: an ordinary input round, which
	// the client answers by retrying the call; the retry with the answer
	// goes on as a task.
	res, err := req.Elicit(ctx, askUserName)
	if err != nil {
		return asked(err, "elicitation")
	}
	name, why := accepted(res, "name")
	if name == "" {
		return pluginproto.ErrorResult("No name to greet: %s", why), nil
	}
	req.RunAsTask()
	if err := pause(ctx, withTaskWait); err != nil {
		return nil, fmt.Errorf("test_tool_with_task cancelled: %w", err)
	}
	return pluginproto.TextResult("Hello, " + name + "! (from a task)"), nil
}
