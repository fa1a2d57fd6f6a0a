package catalog

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/plughost/plughost/host/tool"
)

// A call's offer of a task (tool.Call.Tasks) reaches the provider only
// for a tool whose definition declares execution.taskSupport "optional"
// or "required", with its Detach as given; a "required" tool refuses a
// call without the offer before its provider runs, naming the tasks
// extension and the tool by its exposed name, through CallTool and
// StartCall alike.
func TestCallTasks(t *testing.T) {
	t.Parallel()
	def := func(name, execution string) tool.Def {
		js := `{"name":"` + name + `","inputSchema":{}`
		if execution != "" {
			js += `,"execution":` + execution
		}
		return tool.Def{Name: name, JSON: json.RawMessage(js + "}")}
	}
	p := &fakeProvider{name: "p", tools: []tool.Def{
		def("sync", ""),
		def("forbidden", `{"taskSupport":"forbidden"}`),
		def("no_support", `{}`),
		def("optional", `{"taskSupport":"optional"}`),
		def("job.required", `{"taskSupport":"required"}`), // exposed as job_required
	}}
	p.call = func(_ context.Context, c *tool.Call) (json.RawMessage, error) {
		if c.Detach != nil {
			c.Detach()
		}
		return tool.TextResult("ok"), nil
	}
	f := newFixture(t, nil)
	f.cat.Set(p)
	tests := map[string]struct {
		exposed string
		offer   bool
		tasks   bool // what the provider gets
		refused bool
	}{
		"no execution":                  {"sync", true, false, false},
		"forbidden":                     {"forbidden", true, false, false},
		"execution without taskSupport": {"no_support", true, false, false},
		"optional, offered":             {"optional", true, true, false},
		"optional, not offered":         {"optional", false, false, false},
		"required, offered":             {"job_required", true, true, false},
		"required, not offered":         {"job_required", false, false, true},
	}
	for name, tc := range tests {
		for _, start := range []bool{false, true} {
			before := len(p.received())
			detached := 0
			call := &tool.Call{Name: tc.exposed, Tasks: tc.offer, Detach: func() { detached++ }}
			var err error
			if start {
				done := make(chan error, 1)
				f.cat.StartCall(context.Background(), call, func(_ json.RawMessage, err error) { done <- err })
				err = <-done
			} else {
				_, err = f.cat.CallTool(context.Background(), call)
			}
			received := p.received()[before:]
			if tc.refused {
				want := &tool.CapabilityRequired{
					Capabilities: json.RawMessage(`{"extensions":{"io.modelcontextprotocol/tasks":{}}}`),
					Message:      `tool "job_required" runs only as a task: the client must declare the io.modelcontextprotocol/tasks extension`,
				}
				cr, _ := err.(*tool.CapabilityRequired)
				if cr == nil || string(cr.Capabilities) != string(want.Capabilities) || cr.Message != want.Message {
					t.Errorf("%s (StartCall %v): error %v, want %+v", name, start, err, want)
				}
				if len(received) != 0 {
					t.Errorf("%s (StartCall %v): the provider was called", name, start)
				}
				continue
			}
			if err != nil || len(received) != 1 {
				t.Fatalf("%s (StartCall %v): %v; the provider got %d calls", name, start, err, len(received))
			}
			if got := received[0].Tasks; got != tc.tasks {
				t.Errorf("%s (StartCall %v): the provider got Tasks %v, want %v", name, start, got, tc.tasks)
			}
			if detached != 1 {
				t.Errorf("%s (StartCall %v): the provider's Detach is not the caller's: the caller's ran %d times", name, start, detached)
			}
		}
	}
}
