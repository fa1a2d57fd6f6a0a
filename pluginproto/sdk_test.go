package pluginproto

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/internal/pluginwire"
)

func nopHandler(context.Context, *Request) (*Result, error) { return TextResult("ok"), nil }

func TestAddToolEncodesMCPTool(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		tool Tool
		want string
	}{
		"nil schema means no arguments": {
			tool: Tool{Name: "a"},
			want: `{"name":"a","inputSchema":{"type":"object"}}`,
		},
		"raw schema is compacted": {
			tool: Tool{Name: "b.c-d_1", InputSchema: json.RawMessage("{ \"type\" : \"object\" }")},
			want: `{"name":"b.c-d_1","inputSchema":{"type":"object"}}`,
		},
		"map schema, output schema, every field": {
			tool: Tool{
				Name: "full", Title: "Full", Description: "Does it all.",
				InputSchema:  map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "integer"}}},
				OutputSchema: []byte(`{"type":"object"}`),
				Annotations: &Annotations{
					Title: "T", ReadOnlyHint: new(true), DestructiveHint: new(false),
					IdempotentHint: new(true), OpenWorldHint: new(false),
				},
				TaskSupport: TaskOptional,
			},
			want: `{"name":"full","title":"Full","description":"Does it all.",` +
				`"inputSchema":{"properties":{"x":{"type":"integer"}},"type":"object"},"outputSchema":{"type":"object"},` +
				`"annotations":{"title":"T","readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false},` +
				`"execution":{"taskSupport":"optional"}}`,
		},
		"task support required": {
			tool: Tool{Name: "r", TaskSupport: TaskRequired},
			want: `{"name":"r","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}}`,
		},
		"task support forbidden is left out": {
			tool: Tool{Name: "f", TaskSupport: TaskForbidden},
			want: `{"name":"f","inputSchema":{"type":"object"}}`,
		},
		"struct schema": {
			tool: Tool{Name: "s", InputSchema: struct {
				Type string `json:"type"`
			}{"object"}},
			want: `{"name":"s","inputSchema":{"type":"object"}}`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := New("test", "0")
			p.AddTool(tc.tool, nopHandler)
			got := p.Tools()
			if len(got) != 1 {
				t.Fatalf("Tools() has %d entries, want 1", len(got))
			}
			if diff := cmp.Diff(tc.want, string(got[0])); diff != "" {
				t.Errorf("tool JSON (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAddToolPanicsOnInvalidTool(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		tool    Tool
		handler Handler
		want    string
	}{
		"empty name":          {Tool{Name: ""}, nopHandler, `tool name "" does not match`},
		"space in name":       {Tool{Name: "a b"}, nopHandler, `tool name "a b" does not match`},
		"slash in name":       {Tool{Name: "a/b"}, nopHandler, `tool name "a/b" does not match`},
		"name too long":       {Tool{Name: strings.Repeat("x", 129)}, nopHandler, "does not match"},
		"schema not object":   {Tool{Name: "a", InputSchema: json.RawMessage(`[1]`)}, nopHandler, "InputSchema: schema is not a JSON object"},
		"schema invalid JSON": {Tool{Name: "a", InputSchema: json.RawMessage(`{"type":`)}, nopHandler, "InputSchema: schema is not a JSON object"},
		"schema type missing": {Tool{Name: "a", InputSchema: map[string]any{}}, nopHandler, `InputSchema: schema's "type" is missing, want "object"`},
		"schema type string":  {Tool{Name: "a", InputSchema: map[string]any{"type": "string"}}, nopHandler, `InputSchema: schema's "type" is "string", want "object"`},
		"output schema array": {Tool{Name: "a", OutputSchema: map[string]any{"type": "array"}}, nopHandler, `OutputSchema: schema's "type" is "array"`},
		"unmarshalable":       {Tool{Name: "a", InputSchema: func() {}}, nopHandler, "InputSchema: json: unsupported type"},
		"nil handler":         {Tool{Name: "a"}, nil, `tool "a" has a nil handler`},
		"task support spelled out": {Tool{Name: "a", TaskSupport: "forbidden"}, nopHandler,
			`tool "a": TaskSupport "forbidden" is none of TaskForbidden (""), TaskOptional and TaskRequired`},
		"task support unknown": {Tool{Name: "a", TaskSupport: "always"}, nopHandler, `TaskSupport "always" is none of`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := New("test", "0")
			defer func() {
				v := recover()
				msg, _ := v.(string)
				if !strings.HasPrefix(msg, "pluginproto: AddTool: ") || !strings.Contains(msg, tc.want) {
					t.Errorf("AddTool panicked with %v, want a message containing %q", v, tc.want)
				}
				if n := len(p.Tools()); n != 0 {
					t.Errorf("invalid tool was added: %d tools", n)
				}
			}()
			p.AddTool(tc.tool, tc.handler)
		})
	}
}

func toolNames(t *testing.T, tools []json.RawMessage) []string {
	t.Helper()
	names := make([]string, len(tools))
	for i, raw := range tools {
		var tool struct{ Name string }
		if err := json.Unmarshal(raw, &tool); err != nil {
			t.Fatal(err)
		}
		names[i] = tool.Name
	}
	return names
}

func TestAddAndRemoveKeepOrderAndSignalChanges(t *testing.T) {
	t.Parallel()
	p := New("test", "0")
	changed := func() <-chan struct{} {
		p.mu.RLock()
		defer p.mu.RUnlock()
		return p.changed
	}
	isClosed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}

	ch := changed()
	p.AddTool(Tool{Name: "a"}, nopHandler)
	p.AddTool(Tool{Name: "b"}, nopHandler)
	p.AddTool(Tool{Name: "c"}, nopHandler)
	if !isClosed(ch) {
		t.Error("AddTool did not signal a change")
	}
	ch = changed()
	p.AddTool(Tool{Name: "a", Description: "replaced"}, nopHandler)
	if !isClosed(ch) {
		t.Error("replacing a tool did not signal a change")
	}
	ch = changed()
	p.RemoveTool("b")
	if !isClosed(ch) {
		t.Error("RemoveTool did not signal a change")
	}
	ch = changed()
	p.RemoveTool("absent")
	if isClosed(ch) {
		t.Error("removing an absent tool signalled a change")
	}
	if diff := cmp.Diff([]string{"a", "c"}, toolNames(t, p.Tools())); diff != "" {
		t.Errorf("tool order (-want +got):\n%s", diff)
	}
	if got := string(p.Tools()[0]); !strings.Contains(got, "replaced") {
		t.Errorf("replaced tool is %s, want the new definition", got)
	}
}

func TestCallToolResults(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		handler Handler
		args    string
		want    string
	}{
		"text": {
			handler: func(context.Context, *Request) (*Result, error) { return TextResult("hi"), nil },
			want:    `{"content":[{"type":"text","text":"hi"}]}`,
		},
		"error return becomes isError": {
			handler: func(context.Context, *Request) (*Result, error) {
				return TextResult("ignored"), errors.New("disk full")
			},
			want: `{"content":[{"type":"text","text":"disk full"}],"isError":true}`,
		},
		"ErrorResult": {
			handler: func(context.Context, *Request) (*Result, error) { return ErrorResult("bad %s", "x"), nil },
			want:    `{"content":[{"type":"text","text":"bad x"}],"isError":true}`,
		},
		"nil result": {
			handler: func(context.Context, *Request) (*Result, error) { return nil, nil },
			want:    `{"content":[{"type":"text","text":"tool \"t\" returned neither a result nor an error"}],"isError":true}`,
		},
		"empty content is an empty array": {
			handler: func(context.Context, *Request) (*Result, error) { return &Result{}, nil },
			want:    `{"content":[]}`,
		},
		"structured content is mirrored as text when content is empty": {
			handler: func(context.Context, *Request) (*Result, error) {
				return &Result{StructuredContent: map[string]int{"n": 1}, Meta: map[string]any{"k": "v"}}, nil
			},
			want: `{"content":[{"type":"text","text":"{\"n\":1}"}],"structuredContent":{"n":1},"_meta":{"k":"v"}}`,
		},
		"structured content with content": {
			handler: func(context.Context, *Request) (*Result, error) {
				return &Result{Content: []Content{Text("n is 1")}, StructuredContent: json.RawMessage(`{"n":1}`)}, nil
			},
			want: `{"content":[{"type":"text","text":"n is 1"}],"structuredContent":{"n":1}}`,
		},
		"structured content not an object": {
			handler: func(context.Context, *Request) (*Result, error) { return &Result{StructuredContent: []int{1}}, nil },
			want:    `{"content":[{"type":"text","text":"tool \"t\" returned an invalid result: structuredContent is not a JSON object: [1]"}],"isError":true}`,
		},
		"zero content": {
			handler: func(context.Context, *Request) (*Result, error) { return &Result{Content: []Content{{}}}, nil },
			want:    `{"content":[{"type":"text","text":"tool \"t\" returned an invalid result: content[0] is the zero Content; build blocks with Text, Image, ..."}],"isError":true}`,
		},
		"raw content not an object": {
			handler: func(context.Context, *Request) (*Result, error) {
				return &Result{Content: []Content{RawContent(json.RawMessage(`"x"`))}}, nil
			},
			want: `{"content":[{"type":"text","text":"tool \"t\" returned an invalid result: content[0] is not a JSON object: \"x\""}],"isError":true}`,
		},
		"every content block": {
			handler: func(context.Context, *Request) (*Result, error) {
				return &Result{Content: []Content{
					Text("t"),
					Image([]byte{1, 2, 3}, "image/png"),
					Audio(nil, "audio/wav"),
					EmbeddedText("file:///a.txt", "text/plain", "A"),
					EmbeddedBlob("file:///b.bin", "", []byte("B")),
					ResourceLink("file:///c", "c", ""),
					RawContent(json.RawMessage(`{ "type": "text", "text": "raw", "annotations": {"priority": 1} }`)),
				}}, nil
			},
			want: `{"content":[{"type":"text","text":"t"},` +
				`{"type":"image","data":"AQID","mimeType":"image/png"},` +
				`{"type":"audio","data":"","mimeType":"audio/wav"},` +
				`{"type":"resource","resource":{"uri":"file:///a.txt","mimeType":"text/plain","text":"A"}},` +
				`{"type":"resource","resource":{"uri":"file:///b.bin","blob":"Qg=="}},` +
				`{"type":"resource_link","uri":"file:///c","name":"c"},` +
				`{"type":"text","text":"raw","annotations":{"priority":1}}]}`,
		},
		"bind error names tool and problem": {
			handler: func(_ context.Context, r *Request) (*Result, error) {
				var args struct{ N int }
				if err := r.Bind(&args); err != nil {
					return nil, err
				}
				return TextResult(fmt.Sprint(args.N)), nil
			},
			args: `{"N":"x"}`,
			want: `{"content":[{"type":"text","text":"invalid arguments for tool \"t\": json: cannot unmarshal string into Go struct field .N of type int"}],"isError":true}`,
		},
		"empty arguments bind as {}": {
			handler: func(_ context.Context, r *Request) (*Result, error) {
				var args map[string]any
				if err := r.Bind(&args); err != nil {
					return nil, err
				}
				return TextResult(fmt.Sprint(len(args))), nil
			},
			want: `{"content":[{"type":"text","text":"0"}]}`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := New("test", "0")
			p.logger.SetLevel(hclog.Off) // keep panic stacks out of the test output
			p.AddTool(Tool{Name: "t"}, tc.handler)
			got, err := pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{Tool: "t", Arguments: json.RawMessage(tc.args)})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if !json.Valid(got) {
				t.Errorf("result is not valid JSON: %s", got)
			}
		})
	}
}

// A handler's panic is no result: the plugin failed running the call
// (what a host's Client reports for the CallError INTERNAL the plugin
// sends), even when the handler asked the client something first.
func TestCallToolPanicIsAPluginFailure(t *testing.T) {
	t.Parallel()
	for name, h := range map[string]Handler{
		"panic": func(context.Context, *Request) (*Result, error) { panic("boom") },
		"panic after asking": func(ctx context.Context, r *Request) (*Result, error) {
			_, _ = r.Elicit(ctx, ElicitParams{Message: "Sure?"}) // ErrInputRequired
			panic("boom")
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := New("test", "0")
			p.logger.SetLevel(hclog.Off) // keep panic stacks out of the test output
			p.AddTool(Tool{Name: "t"}, h)
			res, err := pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{Tool: "t", ClientCapabilities: json.RawMessage(`{"elicitation":{}}`)})
			const want = `call "t": the plugin failed running the call: tool "t" panicked: boom`
			if !errors.Is(err, pluginwire.ErrPluginFailed) || err.Error() != want {
				t.Errorf("CallTool = %s, %v; want ErrPluginFailed: %s", res, err, want)
			}
		})
	}
}

func TestCallToolUnknownTool(t *testing.T) {
	t.Parallel()
	p := New("test", "0")
	_, err := pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{Tool: "nope"})
	if !errors.Is(err, pluginwire.ErrUnknownTool) || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("err = %v, want ErrUnknownTool naming the tool", err)
	}
}

type note struct {
	Kind, Level, Message string
	Progress, Total      float64
	Data                 string
}

func TestNotificationsReachTheCallerInOrder(t *testing.T) {
	t.Parallel()
	p := New("test", "0")
	p.AddTool(Tool{Name: "t"}, func(_ context.Context, r *Request) (*Result, error) {
		r.Log(LevelDebug, "starting")
		r.Progress(1, 2, "half")
		r.Log(LevelWarning, map[string]int{"n": 1})
		r.Progress(2, 2, "")
		r.Log(LevelError, func() {}) // cannot be encoded
		return TextResult("done"), nil
	})
	var got []note
	_, err := pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{
		Tool: "t",
		Progress: func(progress, total float64, message string) {
			got = append(got, note{Kind: "progress", Progress: progress, Total: total, Message: message})
		},
		Log: func(level, logger string, data json.RawMessage) {
			got = append(got, note{Kind: "log", Level: level, Message: logger, Data: string(data)})
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []note{
		{Kind: "log", Level: "debug", Data: `"starting"`},
		{Kind: "progress", Progress: 1, Total: 2, Message: "half"},
		{Kind: "log", Level: "warning", Data: `{"n":1}`},
		{Kind: "progress", Progress: 2, Total: 2},
		{Kind: "log", Level: "error", Data: `"pluginproto: cannot encode log data of type func(): json: unsupported type: func()"`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("notifications (-want +got):\n%s", diff)
	}
}

// recorder is an emitter that records what reaches it.
type recorder struct {
	mu    sync.Mutex
	notes []string
}

func (r *recorder) progress(p, total float64, msg string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, fmt.Sprintf("progress %v/%v %s", p, total, msg))
	return nil
}

func (r *recorder) log(level string, data json.RawMessage) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, fmt.Sprintf("log %s %s", level, data))
	return nil
}

func (r *recorder) detach() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, "detach")
	return nil
}

func TestProgressIsDroppedUnlessAskedFor(t *testing.T) {
	t.Parallel()
	p := New("test", "0")
	p.AddTool(Tool{Name: "t"}, func(_ context.Context, r *Request) (*Result, error) {
		r.Progress(1, 0, "x")
		r.Log(LevelInfo, 1)
		return TextResult("ok"), nil
	})
	rec := &recorder{}
	if _, err := p.call(t.Context(), "t", nil, false, rec, invocation{}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"log info 1"}, rec.notes); diff != "" {
		t.Errorf("notifications (-want +got):\n%s", diff)
	}
}

func TestNotificationsAfterReturnAreDropped(t *testing.T) {
	t.Parallel()
	p := New("test", "0")
	var late *Request
	p.AddTool(Tool{Name: "t"}, func(_ context.Context, r *Request) (*Result, error) {
		late = r
		return TextResult("ok"), nil
	})
	rec := &recorder{}
	if _, err := p.call(t.Context(), "t", nil, true, rec, invocation{}); err != nil {
		t.Fatal(err)
	}
	late.Progress(1, 1, "late")
	late.Log(LevelInfo, "late")
	if len(rec.notes) != 0 {
		t.Errorf("notifications after the handler returned reached the host: %q", rec.notes)
	}
}

func TestConcurrentNotificationsAreSerialized(t *testing.T) {
	t.Parallel()
	p := New("test", "0")
	p.AddTool(Tool{Name: "t"}, func(_ context.Context, r *Request) (*Result, error) {
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				for j := range 50 {
					r.Progress(float64(i*50+j), 0, "")
					r.Log(LevelInfo, j)
				}
			})
		}
		wg.Wait()
		return TextResult("ok"), nil
	})
	var n int // not synchronized: the race detector checks that callbacks never overlap
	_, err := pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{
		Tool:     "t",
		Progress: func(float64, float64, string) { n++ },
		Log:      func(string, string, json.RawMessage) { n++ },
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 800 {
		t.Errorf("got %d notifications, want 800", n)
	}
}

func TestHandBuiltRequest(t *testing.T) {
	t.Parallel()
	r := &Request{Tool: "t", Arguments: json.RawMessage(`{"a":1}`)}
	r.Progress(1, 1, "no-op") // must not panic
	r.Log(LevelInfo, "no-op")
	if r.RunAsTask() {
		t.Error("RunAsTask = true for a hand-built Request, want false")
	}
	var args struct{ A int }
	if err := r.Bind(&args); err != nil || args.A != 1 {
		t.Errorf("Bind = %v, args %+v", err, args)
	}
}

func TestContentMarshalJSON(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal([]Content{Text("a")})
	if err != nil || string(b) != `[{"type":"text","text":"a"}]` {
		t.Errorf("json.Marshal(Text) = %s, %v", b, err)
	}
	if _, err := json.Marshal(Content{}); err == nil {
		t.Error("json.Marshal(Content{}) succeeded, want an error")
	}
}
