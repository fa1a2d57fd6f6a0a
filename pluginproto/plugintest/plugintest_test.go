package plugintest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/catalog"
	"github.com/plughost/plughost/host/naming"
	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/pluginproto"
	"github.com/plughost/plughost/pluginproto/plugintest"
)

// counter is a plugin whose tool count takes {"n": 0 or more} and
// answers {"count": n}; its handler does what the arguments' "mode" says,
// so that a test can make it misbehave. ran counts the handler's runs.
func counter(ran *atomic.Int32) *pluginproto.Plugin {
	p := pluginproto.New("counter", "1.0.0")
	p.AddTool(pluginproto.Tool{
		Name: "count",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","minimum":0},
			"mode":{"enum":["ok","string","none","error","raw"]}}}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"count":{"type":"integer"}},"required":["count"]}`),
	}, func(_ context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
		ran.Add(1)
		var args struct {
			N    int
			Mode string
		}
		if err := req.Bind(&args); err != nil {
			return nil, err
		}
		switch args.Mode {
		case "string":
			return &pluginproto.Result{StructuredContent: map[string]any{"count": fmt.Sprint(args.N)}}, nil
		case "none":
			return pluginproto.TextResult(fmt.Sprint(args.N)), nil
		case "error":
			return nil, errors.New("the counter is broken") // isError, no structuredContent: exempt
		case "raw":
			return &pluginproto.Result{Content: []pluginproto.Content{pluginproto.Text(string(req.Arguments))},
				StructuredContent: map[string]int{"count": 0}}, nil
		}
		return &pluginproto.Result{StructuredContent: map[string]int{"count": args.N}}, nil
	})
	return p
}

// An author's unit test: plugintest refuses the calls and results the
// host refuses, where pluginhost.Of(p).CallTool lets them through.
func TestCallToolFailsWhereTheHostRefuses(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		args    string
		wantErr error
		want    string // the error's text, or the result
		ran     bool   // whether the handler runs
	}{
		"valid": {
			args: `{"n":3}`, ran: true,
			want: `{"content":[{"type":"text","text":"{\"count\":3}"}],"structuredContent":{"count":3}}`,
		},
		"arguments below the minimum": {
			args: `{"n":-5}`, wantErr: plugintest.ErrBadArguments,
			want: `invalid arguments for tool "count": /n: minimum: got -5, want 0`,
		},
		"arguments of the wrong type": {
			args: `{"n":"3"}`, wantErr: plugintest.ErrBadArguments,
			want: `invalid arguments for tool "count": /n: must be integer, got string`,
		},
		"arguments not an object": {
			args: `[3]`, wantErr: plugintest.ErrBadArguments,
			want: `invalid arguments for tool "count": arguments must be a JSON object, got array`,
		},
		"structuredContent of the wrong type": {
			args: `{"n":3,"mode":"string"}`, wantErr: plugintest.ErrBadResult, ran: true,
			want: `tool "count" returned a result that breaks its outputSchema: structuredContent/count: must be integer, got string`,
		},
		"no structuredContent": {
			args: `{"n":3,"mode":"none"}`, wantErr: plugintest.ErrBadResult, ran: true,
			want: `tool "count" returned no structuredContent, but its outputSchema requires structured results`,
		},
		"an error result is exempt": {
			args: `{"mode":"error"}`, ran: true,
			want: `{"content":[{"type":"text","text":"the counter is broken"}],"isError":true}`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var ran atomic.Int32
			p := counter(&ran)
			req := &plugintest.CallRequest{Tool: "count", Arguments: json.RawMessage(tc.args)}
			res, err := plugintest.CallTool(t.Context(), p, req)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("CallTool: %v", err)
				}
				if string(res) != tc.want {
					t.Errorf("result = %s, want %s", res, tc.want)
				}
			} else if !errors.Is(err, tc.wantErr) || err.Error() != tc.want || res != nil {
				t.Errorf("CallTool = %s, %v; want the error %q matching %v", res, err, tc.want, tc.wantErr)
			}
			if got := ran.Load() == 1; got != tc.ran {
				t.Errorf("the handler ran: %v, want %v", got, tc.ran)
			}
			// pluginhost.Of(p).CallTool, the plugin's own view, sees no problem at all.
			if _, err := pluginhost.Of(p).CallTool(t.Context(), req); err != nil {
				t.Errorf("pluginhost.Of(p).CallTool: %v", err)
			}
		})
	}
}

// Absent arguments (none, blank, null) reach the handler as {}, as from
// the host; others as they are.
func TestCallToolDefaultsAbsentArguments(t *testing.T) {
	t.Parallel()
	p := pluginproto.New("echo", "0")
	p.AddTool(pluginproto.Tool{Name: "args"}, func(_ context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
		return pluginproto.TextResult(string(req.Arguments)), nil
	})
	for args, want := range map[string]string{"": "{}", " ": "{}", "null": "{}", ` {"a":1}`: ` {"a":1}`} {
		res, err := plugintest.CallTool(t.Context(), p, &plugintest.CallRequest{Tool: "args", Arguments: json.RawMessage(args)})
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		text, _ := json.Marshal(want)
		if w := `{"content":[{"type":"text","text":` + string(text) + `}]}`; string(res) != w {
			t.Errorf("%q: result %s, want %s", args, res, w)
		}
	}
}

// A tool the host would not list (its schema does not compile) is refused
// by CheckTools and by CallTool, which does not run it; the plugin's
// other tools are called as before. An unknown tool is pluginhost.Of(p).CallTool's
// error.
func TestRefusedTools(t *testing.T) {
	t.Parallel()
	var ran atomic.Int32
	p := counter(&ran)
	p.AddTool(pluginproto.Tool{Name: "bad", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"pattern":"(?=x)"}}}`)},
		func(context.Context, *pluginproto.Request) (*pluginproto.Result, error) {
			ran.Add(100)
			return pluginproto.TextResult("ran"), nil
		})
	p.AddTool(pluginproto.Tool{Name: "bad.out", OutputSchema: json.RawMessage(`{"type":"object","required":"count"}`)},
		func(context.Context, *pluginproto.Request) (*pluginproto.Result, error) { return nil, nil })
	want := `tool "bad": the host would not list it: inputSchema does not compile: breaks the rules of JSON Schema: ` +
		"/properties/a/pattern: '(?=x)' is not valid regex: error parsing regexp: invalid or unsupported Perl syntax: `(?=`\n" +
		`tool "bad.out": the host would not list it: outputSchema does not compile: breaks the rules of JSON Schema: /required: must be array, got string`
	err := plugintest.CheckTools(p)
	if !errors.Is(err, plugintest.ErrToolRefused) || err.Error() != want {
		t.Errorf("CheckTools = %v, want\n%s", err, want)
	}
	_, err = plugintest.CallTool(t.Context(), p, &plugintest.CallRequest{Tool: "bad"})
	if !errors.Is(err, plugintest.ErrToolRefused) || !strings.HasPrefix(err.Error(), `tool "bad": the host would not list it: inputSchema does not compile`) {
		t.Errorf("CallTool(bad) = %v, want the refusal", err)
	}
	if ran.Load() != 0 {
		t.Error("a refused tool ran")
	}
	if _, err := plugintest.CallTool(t.Context(), p, &plugintest.CallRequest{Tool: "count"}); err != nil {
		t.Errorf("CallTool(count): %v", err)
	}
	_, err = plugintest.CallTool(t.Context(), p, &plugintest.CallRequest{Tool: "nope"})
	if !errors.Is(err, plugintest.ErrUnknownTool) {
		t.Errorf("CallTool(nope) = %v, want ErrUnknownTool", err)
	}
	if err := plugintest.CheckTools(pluginproto.New("empty", "0")); err != nil {
		t.Errorf("CheckTools of a plugin without tools = %v", err)
	}
}

// CallTool is pluginhost.Of(p).CallTool around the checks: notifications and input
// rounds work as there.
func TestCallToolKeepsPluginCallTool(t *testing.T) {
	t.Parallel()
	p := pluginproto.New("asker", "0")
	p.AddTool(pluginproto.Tool{Name: "ask"}, func(ctx context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
		req.Log(pluginproto.LevelNotice, "asking")
		req.Progress(1, 2, "")
		roots, err := req.Roots(ctx)
		if err != nil {
			return nil, err
		}
		return pluginproto.TextResult(fmt.Sprintf("%d roots", len(roots))), nil
	})
	var notes []string
	res, err := plugintest.CallTool(t.Context(), p, &plugintest.CallRequest{
		Tool:               "ask",
		ClientCapabilities: json.RawMessage(`{"roots":{}}`),
		AnswerInput: func(method string, _ json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"roots":[{"uri":"file:///a"}]}`), nil
		},
		Log:      func(level, _ string, data json.RawMessage) { notes = append(notes, level+" "+string(data)) },
		Progress: func(p, total float64, _ string) { notes = append(notes, fmt.Sprintf("progress %v/%v", p, total)) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"content":[{"type":"text","text":"1 roots"}]}`; string(res) != want {
		t.Errorf("result = %s, want %s", res, want)
	}
	// Two rounds: the first asks, the second answers.
	want := []string{`notice "asking"`, "progress 1/2", `notice "asking"`, "progress 1/2"}
	if diff := cmp.Diff(want, notes); diff != "" {
		t.Errorf("notifications (-want +got):\n%s", diff)
	}
}

// provider serves a plugin in-process to the host's catalog, as the plugin
// manager serves a running one.
type provider struct{ p *pluginproto.Plugin }

func (pr provider) Name() string { return "counter" }

func (pr provider) Tools() []tool.Def {
	var defs []tool.Def
	for _, raw := range pr.p.Tools() {
		var d struct{ Name string }
		_ = json.Unmarshal(raw, &d)
		defs = append(defs, tool.Def{Name: d.Name, JSON: raw})
	}
	return defs
}

func (pr provider) CallTool(ctx context.Context, c *tool.Call) (json.RawMessage, error) {
	return pluginhost.Of(pr.p).CallTool(ctx, &plugintest.CallRequest{Tool: c.Name, Arguments: c.Arguments, Tasks: c.Tasks, Detach: c.Detach})
}

// A call's offer of a task reaches the handler as the host lets it: only
// for a tool that declares TaskSupport; a TaskRequired tool without the
// offer is refused before its handler runs, as the host's catalog refuses
// it, with the same capabilities and message. Detach says whether the
// handler went on as a task, in both.
func TestCallToolTasks(t *testing.T) {
	t.Parallel()
	var ran atomic.Int32
	p := pluginproto.New("jobs", "1.0.0")
	for name, support := range map[string]pluginproto.TaskSupport{
		"sync": pluginproto.TaskForbidden, "maybe": pluginproto.TaskOptional, "only": pluginproto.TaskRequired,
	} {
		p.AddTool(pluginproto.Tool{Name: name, TaskSupport: support}, func(_ context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
			ran.Add(1)
			return pluginproto.TextResult(fmt.Sprintf("task: %v", req.RunAsTask())), nil
		})
	}
	cat := catalog.New(&catalog.Options{Logger: hclog.NewNullLogger()})
	t.Cleanup(cat.Close)
	cat.Set(provider{p})

	tests := map[string]struct {
		tool  string
		tasks bool
		task  bool // the handler went on as a task
		// refused: the call is refused, and the handler does not run
		refused bool
	}{
		"no task support, offered": {tool: "sync", tasks: true},
		"optional, offered":        {tool: "maybe", tasks: true, task: true},
		"optional, not offered":    {tool: "maybe"},
		"required, offered":        {tool: "only", tasks: true, task: true},
		"required, not offered":    {tool: "only", refused: true},
	}
	for name, tc := range tests {
		ranBefore := ran.Load()
		var detached [2]bool // the host's, plugintest's
		host, hostErr := cat.CallTool(t.Context(), &tool.Call{Name: tc.tool, Arguments: json.RawMessage(`{}`), Tasks: tc.tasks,
			Detach: func() { detached[0] = true }})
		ours, err := plugintest.CallTool(t.Context(), p, &plugintest.CallRequest{Tool: tc.tool, Tasks: tc.tasks,
			Detach: func() { detached[1] = true }})
		if tc.refused {
			var (
				cr     *pluginproto.CapabilityRequiredError
				hostCR *tool.CapabilityRequired
			)
			if !errors.As(err, &cr) || !errors.As(hostErr, &hostCR) || string(cr.Capabilities) != string(hostCR.Capabilities) || cr.Message != hostCR.Message {
				t.Errorf("%s: plugintest %v, the host %v; want the same capability required", name, err, hostErr)
			} else if want := `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`; string(cr.Capabilities) != want {
				t.Errorf("%s: capabilities %s, want %s", name, cr.Capabilities, want)
			}
			if ran.Load() != ranBefore {
				t.Errorf("%s: the handler ran", name)
			}
			continue
		}
		if err != nil || hostErr != nil {
			t.Fatalf("%s: plugintest %v, the host %v", name, err, hostErr)
		}
		if want := string(tool.TextResult(fmt.Sprintf("task: %v", tc.task))); string(ours) != want || string(host) != want {
			t.Errorf("%s: plugintest %s, the host %s; want %s", name, ours, host, want)
		}
		if detached != [2]bool{tc.task, tc.task} {
			t.Errorf("%s: detached (the host's, plugintest's) = %v, want %v", name, detached, tc.task)
		}
	}
}

// plugintest and the host's catalog agree on every case: what plugintest
// refuses, the host answers with an isError result whose text is the
// error's, and what it passes, the client gets as it is; a tool it
// refuses, the host skips for the same reason.
func TestAgreesWithTheHost(t *testing.T) {
	t.Parallel()
	var ran atomic.Int32
	p := counter(&ran)
	p.AddTool(pluginproto.Tool{Name: "bad", InputSchema: json.RawMessage(`{"type":"object","$ref":"other.json"}`)},
		func(context.Context, *pluginproto.Request) (*pluginproto.Result, error) { return nil, nil })
	cat := catalog.New(&catalog.Options{Logger: hclog.NewNullLogger()})
	t.Cleanup(cat.Close)
	cat.Set(provider{p})

	for _, args := range []string{``, `null`, `{"n":3}`, `{"n":-5}`, `{"n":1.5,"mode":"x"}`, `"x"`, `{"n":3} {}`,
		`{"n":3,"mode":"string"}`, `{"n":3,"mode":"none"}`, `{"mode":"error"}`, `{"mode":"raw"}`} {
		host, err := cat.CallTool(t.Context(), &tool.Call{Name: "count", Arguments: json.RawMessage(args)})
		if err != nil {
			var rpcErr *tool.RPCError
			if host, rpcErr = tool.Outcome(err); rpcErr != nil {
				t.Fatalf("%s: the host answers a JSON-RPC error %+v", args, rpcErr)
			}
		}
		ours, err := plugintest.CallTool(t.Context(), p, &plugintest.CallRequest{Tool: "count", Arguments: json.RawMessage(args)})
		if err != nil {
			ours = tool.ErrorResult(err.Error())
		}
		if string(ours) != string(host) {
			t.Errorf("%s:\nplugintest: %s\nthe host:   %s", args, ours, host)
		}
	}

	skipped := cat.Skipped()
	err := plugintest.CheckTools(p)
	if len(skipped) != 1 || err == nil || err.Error() != `tool "bad": the host would not list it: `+skipped[0].Reason {
		t.Errorf("CheckTools = %v; the host skipped %+v", err, skipped)
	}
}

// The SDK's AddTool refuses exactly the tool names the host refuses
// (pluginproto cannot import the host, so it checks the rule on its own).
func TestNamingRulesAgree(t *testing.T) {
	t.Parallel()
	names := []string{"", "a", "get_time", "a.b", "a-b", "A9", "has space", "ünï", "a/b", "a:b", "a__b",
		strings.Repeat("x", 64), strings.Repeat("x", 65), strings.Repeat("x", 128), strings.Repeat("x", 129)}
	for c := byte(0); c < 128; c++ {
		names = append(names, "t"+string(c))
	}
	for _, name := range names {
		hostErr := naming.CheckName(naming.Tool, name)
		sdkErr := func() (err error) {
			defer func() {
				if v := recover(); v != nil {
					err = fmt.Errorf("%v", v)
				}
			}()
			pluginproto.New("x", "0").AddTool(pluginproto.Tool{Name: name}, func(context.Context, *pluginproto.Request) (*pluginproto.Result, error) {
				return nil, nil
			})
			return nil
		}()
		if (hostErr == nil) != (sdkErr == nil) {
			t.Errorf("name %q: the host says %v, AddTool %v", name, hostErr, sdkErr)
		}
	}
}
