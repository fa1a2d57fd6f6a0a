// Command askplugin is a plugin of the end-to-end tests: its tools ask the
// client something while they run, so that a test can follow a plugin's
// requests through the host to a real client and back.
//
//   - roots: returns the client's roots, one URI per line;
//   - twice: asks the user to confirm (elicitation), then the client's LLM
//     (sampling), and returns both answers: two input rounds;
//   - wait_for_user: asks the user to confirm and returns the answer; the
//     tests cancel it while the user is being asked.
//   - build: goes on as a task when the client takes one, asks the user to
//     confirm (the task's input), and returns "built after <answer>";
//   - forever: goes on as a task and works until cancelled, then writes
//     "forever: cancelled <id>" to stderr (the host logs it).
//   - trace: returns the W3C trace context the call carried, as
//     "traceparent=<…> tracestate=<…>" (empty values when none);
//   - read_note: reads the file named by its argument "file" in the
//     directory the operator granted it under the name "notes" (a plugin
//     asking for a directory it does not choose).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/plughost/plughost/pluginproto"
)

func main() {
	p := pluginproto.New("askplugin", "1")
	// More than a test's configuration grants: `plughost plugins` shows
	// the difference. The name is localhost: a granted allow_net list's
	// names must resolve when the plugin starts, on any machine.
	p.Request(pluginproto.Requests{Net: []string{"localhost:443"}, Env: []string{"ASKPLUGIN_TOKEN"}})
	p.AddTool(pluginproto.Tool{Name: "read_note", Description: "Reads a file of the notes directory.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"file":{"type":"string"}},"required":["file"]}`)},
		func(ctx context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
			var args struct{ File string }
			if err := req.Bind(&args); err != nil {
				return nil, err
			}
			notes, err := pluginproto.Granted().Dir("notes")
			if err != nil {
				return nil, err
			}
			b, err := os.ReadFile(filepath.Join(notes, filepath.Clean("/"+args.File)))
			if err != nil {
				return nil, err
			}
			return pluginproto.TextResult(string(b)), nil
		})
	p.AddTool(pluginproto.Tool{Name: "trace", Description: "Returns the call's trace context."},
		func(_ context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
			return pluginproto.TextResult("traceparent=" + req.TraceParent + " tracestate=" + req.TraceState), nil
		})
	p.AddTool(pluginproto.Tool{Name: "whoami", Description: "Returns who the call acts for, as the host told it."},
		func(_ context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
			b, err := json.Marshal(req.Caller)
			if err != nil {
				return nil, err
			}
			return pluginproto.TextResult(string(b)), nil
		})
	p.AddTool(pluginproto.Tool{Name: "roots", Description: "Lists the client's roots."},
		func(ctx context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
			roots, err := req.Roots(ctx)
			if err != nil {
				return failed(err)
			}
			var uris []string
			for _, r := range roots {
				uris = append(uris, r.URI)
			}
			return pluginproto.TextResult(strings.Join(uris, "\n")), nil
		})
	p.AddTool(pluginproto.Tool{Name: "twice", Description: "Asks the user, then the client's LLM."},
		func(ctx context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
			ok, err := req.Elicit(ctx, pluginproto.ElicitParams{Message: "Go on?"})
			if err != nil {
				return failed(err)
			}
			answer, err := req.Sample(ctx, pluginproto.SampleParams{
				Messages:  []pluginproto.Message{{Role: "user", Content: pluginproto.Text("the user said " + ok.Action)}},
				MaxTokens: 10,
			})
			if err != nil {
				return failed(err)
			}
			return pluginproto.TextResult(ok.Action + ", then " + answer.Text()), nil
		})
	p.AddTool(pluginproto.Tool{Name: "wait_for_user", Description: "Asks the user to confirm."},
		func(ctx context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
			ok, err := req.Elicit(ctx, pluginproto.ElicitParams{Message: "Take your time."})
			if err != nil {
				return failed(err)
			}
			return pluginproto.TextResult(ok.Action), nil
		})
	p.AddTool(pluginproto.Tool{Name: "build", Description: "Builds, as a task, after the user confirms.", TaskSupport: pluginproto.TaskOptional},
		func(ctx context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
			req.RunAsTask()
			req.Progress(1, 2, "building")
			ok, err := req.Elicit(ctx, pluginproto.ElicitParams{Key: "go", Message: "Build it?"})
			if err != nil {
				return failed(err)
			}
			return pluginproto.TextResult("built after " + ok.Action), nil
		})
	p.AddTool(pluginproto.Tool{Name: "forever", Description: "Works, as a task, until cancelled.", TaskSupport: pluginproto.TaskRequired,
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"id": map[string]any{"type": "string"}}}},
		func(ctx context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
			var args struct{ ID string }
			if err := req.Bind(&args); err != nil {
				return nil, err
			}
			req.RunAsTask()
			req.Progress(1, 0, "working on "+args.ID)
			<-ctx.Done()
			fmt.Fprintln(os.Stderr, "forever: cancelled", args.ID)
			return nil, ctx.Err()
		})
	pluginproto.Serve(p)
}

// failed returns err while the client's answer is awaited (the SDK asks
// and runs the tool again), else an isError result naming it.
func failed(err error) (*pluginproto.Result, error) {
	if errors.Is(err, pluginproto.ErrInputRequired) {
		return nil, err
	}
	return pluginproto.ErrorResult("asking the client failed: %v", err), nil
}
