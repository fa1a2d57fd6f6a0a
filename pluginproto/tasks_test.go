package pluginproto

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/plughost/plughost/internal/pluginhost"
)

// job is a handler that goes on as a task when it can, reports progress,
// asks again, and returns whether it went on as a task each time.
func job(_ context.Context, r *Request) (*Result, error) {
	first := r.RunAsTask()
	r.Progress(1, 0, "working")
	second := r.RunAsTask()
	return TextResult(fmt.Sprintf("task %v %v", first, second)), nil
}

// RunAsTask sends Detach once, before everything the handler sends after
// it, when the call may be a task: the client accepts one (the Start's
// tasks) and the tool declares TaskSupport. Otherwise it reports false
// and sends nothing.
func TestRunAsTask(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		support TaskSupport
		tasks   bool
		notes   []string
		text    string
	}{
		"optional, the client accepts a task": {TaskOptional, true, []string{"detach", "progress 1/0 working"}, "task true true"},
		"required, the client accepts a task": {TaskRequired, true, []string{"detach", "progress 1/0 working"}, "task true true"},
		"the client accepts no task":          {TaskOptional, false, []string{"progress 1/0 working"}, "task false false"},
		"the tool declares no task support":   {TaskForbidden, true, []string{"progress 1/0 working"}, "task false false"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := New("test", "0")
			p.AddTool(Tool{Name: "job", TaskSupport: tc.support}, job)
			rec := &recorder{}
			res, err := p.call(t.Context(), "job", nil, true, rec, invocation{tasks: tc.tasks})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.notes, rec.notes); diff != "" {
				t.Errorf("sent (-want +got):\n%s", diff)
			}
			if want := fmt.Sprintf(`{"content":[{"type":"text","text":%q}]}`, tc.text); string(res) != want {
				t.Errorf("result %s, want %s", res, want)
			}
		})
	}
}

// Once the handler has returned, RunAsTask sends nothing: the answer was
// the call's last frame.
func TestRunAsTaskAfterReturn(t *testing.T) {
	t.Parallel()
	p := New("test", "0")
	var late *Request
	p.AddTool(Tool{Name: "t", TaskSupport: TaskOptional}, func(_ context.Context, r *Request) (*Result, error) {
		late = r
		return TextResult("ok"), nil
	})
	rec := &recorder{}
	if _, err := p.call(t.Context(), "t", nil, false, rec, invocation{tasks: true}); err != nil {
		t.Fatal(err)
	}
	if late.RunAsTask() {
		t.Error("RunAsTask after the handler returned = true, want false")
	}
	if len(rec.notes) != 0 {
		t.Errorf("sent after the handler returned: %q", rec.notes)
	}
}

// Input rounds and tasks: a handler that asks before RunAsTask goes on as a
// task only in the round that has the answer (its input rounds are
// synchronous); one that asks after it went on as a task in the first
// round, and RunAsTask in the next round reports true again. Plugin.CallTool
// calls Detach once over all the rounds, as a host learns of the task once.
func TestRunAsTaskWithInputRounds(t *testing.T) {
	t.Parallel()
	ask := func(ctx context.Context, r *Request) (string, error) {
		res, err := r.Elicit(ctx, ElicitParams{Message: "Name?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)})
		if err != nil {
			return "", err
		}
		var form struct{ Name string }
		_ = json.Unmarshal(res.Content, &form)
		return form.Name, nil
	}
	tests := map[string]struct {
		handler Handler
		events  []string
	}{
		"ask, then go on as a task": {
			handler: func(ctx context.Context, r *Request) (*Result, error) {
				name, err := ask(ctx, r)
				if err != nil {
					return nil, err
				}
				return TextResult(fmt.Sprintf("%s %v", name, r.RunAsTask())), nil
			},
			events: []string{"ask", "detach"},
		},
		"go on as a task, then ask": {
			handler: func(ctx context.Context, r *Request) (*Result, error) {
				task := r.RunAsTask()
				name, err := ask(ctx, r)
				if err != nil {
					return nil, err
				}
				return TextResult(fmt.Sprintf("%s %v", name, task)), nil
			},
			events: []string{"detach", "ask"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := New("test", "0")
			p.AddTool(Tool{Name: "t", TaskSupport: TaskOptional}, tc.handler)
			var events []string
			res, err := pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{
				Tool: "t", ClientCapabilities: json.RawMessage(`{"elicitation":{}}`), Tasks: true,
				Detach: func() { events = append(events, "detach") },
				AnswerInput: func(string, json.RawMessage) (json.RawMessage, error) {
					events = append(events, "ask")
					return json.RawMessage(`{"action":"accept","content":{"name":"Alice"}}`), nil
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if want := `{"content":[{"type":"text","text":"Alice true"}]}`; string(res) != want {
				t.Errorf("result %s, want %s", res, want)
			}
			if diff := cmp.Diff(tc.events, events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}
