package pluginclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plughost/plughost/host/pluginclient"
	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/pluginproto"
)

// addSurface gives helperPlugin resources, a template, prompts, completion,
// tools that ask the client, and tools that change what it offers.
func addSurface(p *pluginproto.Plugin) {
	text := func(s string) pluginproto.ResourceHandler {
		return func(context.Context, *pluginproto.ResourceRead) (*pluginproto.ResourceResult, error) {
			return pluginproto.TextContents("", s), nil
		}
	}
	p.AddResource(pluginproto.Resource{URI: "mem://greeting", Name: "greeting", MIMEType: "text/plain"}, text("hello"))
	// big is larger than gRPC's default 4 MiB message.
	p.AddResource(pluginproto.Resource{URI: "mem://big", Name: "big"}, text(strings.Repeat("b", 5<<20)))
	// huge is over the host's bound of a read's answer (MaxContentsSize).
	p.AddResource(pluginproto.Resource{URI: "mem://huge", Name: "huge"}, func(context.Context, *pluginproto.ResourceRead) (*pluginproto.ResourceResult, error) {
		return pluginproto.TextContents("", strings.Repeat("h", pluginclient.MaxContentsSize)), nil
	})
	// secret asks the user for a password first.
	p.AddResource(pluginproto.Resource{URI: "mem://secret", Name: "secret"}, func(ctx context.Context, r *pluginproto.ResourceRead) (*pluginproto.ResourceResult, error) {
		e, err := r.Elicit(ctx, pluginproto.ElicitParams{Message: "Password?"})
		if err != nil {
			return nil, err
		}
		return pluginproto.TextContents("", "the secret, after "+e.Action), nil
	})
	notes := []string{"alpha", "beta", "gamma"}
	p.AddResourceTemplate(pluginproto.ResourceTemplate{
		URITemplate: "mem://notes/{name}", Name: "note",
		Complete: func(_ context.Context, r *pluginproto.CompleteRequest) (*pluginproto.Completion, error) {
			var c pluginproto.Completion
			for _, n := range notes {
				if strings.HasPrefix(n, r.Value) {
					c.Values = append(c.Values, n)
				}
			}
			return &c, nil
		},
	}, func(_ context.Context, r *pluginproto.ResourceRead) (*pluginproto.ResourceResult, error) {
		if r.Vars["name"] == "missing" {
			return nil, fmt.Errorf("%w: no note %q", pluginproto.ErrUnknownResource, r.Vars["name"])
		}
		return pluginproto.TextContents("text/markdown", "# "+r.Vars["name"]), nil
	})
	p.AddPrompt(pluginproto.Prompt{
		Name: "greet", Description: "Greets someone.",
		Arguments: []pluginproto.PromptArgument{{Name: "name", Required: true}},
		Complete: func(_ context.Context, r *pluginproto.CompleteRequest) (*pluginproto.Completion, error) {
			return &pluginproto.Completion{Values: []string{r.Value + "da", r.Value + "lan"}}, nil
		},
	}, func(_ context.Context, g *pluginproto.PromptGet) (*pluginproto.PromptResult, error) {
		return &pluginproto.PromptResult{Messages: []pluginproto.Message{{Role: "user", Content: pluginproto.Text("Greet " + g.Arguments["name"])}}}, nil
	})
	// haiku asks the client's LLM.
	p.AddPrompt(pluginproto.Prompt{Name: "haiku"}, func(ctx context.Context, g *pluginproto.PromptGet) (*pluginproto.PromptResult, error) {
		s, err := g.Sample(ctx, pluginproto.SampleParams{Messages: []pluginproto.Message{{Role: "user", Content: pluginproto.Text("A haiku")}}, MaxTokens: 30})
		if err != nil {
			return nil, err
		}
		return &pluginproto.PromptResult{Messages: []pluginproto.Message{{Role: "assistant", Content: pluginproto.Text(s.Text())}}}, nil
	})
	// survey asks the user's name, then the client's LLM to greet them:
	// two rounds.
	p.AddTool(pluginproto.Tool{Name: "survey"}, func(ctx context.Context, r *pluginproto.Request) (*pluginproto.Result, error) {
		e, err := r.Elicit(ctx, pluginproto.ElicitParams{
			Message:         "Your name?",
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`),
		})
		if errors.Is(err, pluginproto.ErrClientUnsupported) {
			return pluginproto.ErrorResult("survey needs to ask: %v", err), nil
		}
		if err != nil {
			return nil, err
		}
		var form struct{ Name string }
		if err := json.Unmarshal(e.Content, &form); err != nil {
			return nil, err
		}
		s, err := r.Sample(ctx, pluginproto.SampleParams{Messages: []pluginproto.Message{{Role: "user", Content: pluginproto.Text("Greet " + form.Name)}}, MaxTokens: 20})
		if err != nil {
			return nil, err
		}
		return pluginproto.TextResult(s.Text()), nil
	})
	type uriArgs struct{ URI, Name string }
	p.AddTool(pluginproto.Tool{Name: "touch"}, func(_ context.Context, r *pluginproto.Request) (*pluginproto.Result, error) {
		var args uriArgs
		if err := r.Bind(&args); err != nil {
			return nil, err
		}
		p.ResourceUpdated(args.URI)
		return pluginproto.TextResult("touched"), nil
	})
	p.AddTool(pluginproto.Tool{Name: "add_resource"}, func(_ context.Context, r *pluginproto.Request) (*pluginproto.Result, error) {
		var args uriArgs
		if err := r.Bind(&args); err != nil {
			return nil, err
		}
		p.AddResource(pluginproto.Resource{URI: args.URI, Name: "added"}, text("added"))
		return pluginproto.TextResult("added"), nil
	})
	p.AddTool(pluginproto.Tool{Name: "add_prompt"}, func(_ context.Context, r *pluginproto.Request) (*pluginproto.Result, error) {
		var args uriArgs
		if err := r.Bind(&args); err != nil {
			return nil, err
		}
		p.AddPrompt(pluginproto.Prompt{Name: args.Name}, func(context.Context, *pluginproto.PromptGet) (*pluginproto.PromptResult, error) {
			return &pluginproto.PromptResult{}, nil
		})
		return pluginproto.TextResult("added"), nil
	})
}

// described starts helperPlugin and describes it, so that its Client knows
// its offers.
func described(t *testing.T) *pluginclient.Client {
	t.Helper()
	c := startHelper(t)
	if _, err := c.Describe(t.Context(), "test-host"); err != nil {
		t.Fatal(err)
	}
	return c
}

func uris(t *testing.T, items []json.RawMessage, field string) []string {
	t.Helper()
	var out []string
	for _, raw := range items {
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprint(m[field]))
	}
	return out
}

func TestEndToEndResources(t *testing.T) {
	t.Parallel()
	c := described(t)
	ctx := t.Context()
	resources, err := c.ListResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"mem://greeting", "mem://big", "mem://huge", "mem://secret"}, uris(t, resources, "uri")); diff != "" {
		t.Errorf("ListResources (-want +got):\n%s", diff)
	}
	templates, err := c.ListResourceTemplates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"uriTemplate":"mem://notes/{name}","name":"note"}`; len(templates) != 1 || string(templates[0]) != want {
		t.Errorf("ListResourceTemplates = %s, want %s", templates, want)
	}
	for uri, want := range map[string]string{
		"mem://greeting":    `{"contents":[{"uri":"mem://greeting","mimeType":"text/plain","text":"hello"}]}`,
		"mem://notes/alpha": `{"contents":[{"uri":"mem://notes/alpha","mimeType":"text/markdown","text":"# alpha"}]}`,
	} {
		res, err := c.ReadResource(ctx, &pluginhost.ReadRequest{URI: uri})
		if err != nil || string(res) != want {
			t.Errorf("ReadResource(%s) = %s, %v; want %s", uri, res, err, want)
		}
	}
	res, err := c.ReadResource(ctx, &pluginhost.ReadRequest{URI: "mem://big"})
	if want := fmt.Sprintf(`{"contents":[{"uri":"mem://big","text":%q}]}`, strings.Repeat("b", 5<<20)); err != nil || string(res) != want {
		t.Errorf("ReadResource of 5 MiB: %d bytes, %v; want %d bytes", len(res), err, len(want))
	}
	if _, err := c.ReadResource(ctx, &pluginhost.ReadRequest{URI: "mem://huge"}); status.Code(err) != codes.ResourceExhausted ||
		!strings.Contains(err.Error(), "larger than max") {
		t.Errorf("ReadResource over MaxContentsSize: %v; want ResourceExhausted naming the sizes", err)
	}
	for uri, want := range map[string]string{
		"mem://nothing":       `read resource "mem://nothing": unknown resource: no resource "mem://nothing"`,
		"mem://notes/missing": `read resource "mem://notes/missing": unknown resource: no note "missing"`,
	} {
		_, err := c.ReadResource(ctx, &pluginhost.ReadRequest{URI: uri})
		if !errors.Is(err, pluginproto.ErrUnknownResource) || err.Error() != want {
			t.Errorf("ReadResource(%s): err = %v, want %s", uri, err, want)
		}
	}
}

func TestEndToEndPromptsAndCompletion(t *testing.T) {
	t.Parallel()
	c := described(t)
	ctx := t.Context()
	prompts, err := c.ListPrompts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"name":"greet","description":"Greets someone.","arguments":[{"name":"name","required":true}]}`; len(prompts) != 2 || string(prompts[0]) != want {
		t.Errorf("ListPrompts = %s, want %s and haiku", prompts, want)
	}
	res, err := c.GetPrompt(ctx, &pluginhost.PromptRequest{Name: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
	if want := `{"messages":[{"role":"user","content":{"type":"text","text":"Greet Ada"}}]}`; err != nil || string(res) != want {
		t.Errorf("GetPrompt = %s, %v; want %s", res, err, want)
	}
	_, err = c.GetPrompt(ctx, &pluginhost.PromptRequest{Name: "greet"})
	if want := `get prompt "greet": invalid arguments: missing required argument "name"`; !errors.Is(err, pluginproto.ErrInvalidArguments) || err.Error() != want {
		t.Errorf("GetPrompt without its argument: %v, want %s", err, want)
	}
	_, err = c.GetPrompt(ctx, &pluginhost.PromptRequest{Name: "nope"})
	if !errors.Is(err, pluginproto.ErrUnknownPrompt) {
		t.Errorf("GetPrompt of an unknown prompt: %v, want ErrUnknownPrompt", err)
	}
	for params, want := range map[string]string{
		`{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"name","value":"A"}}`:               `{"completion":{"values":["Ada","Alan"]}}`,
		`{"ref":{"type":"ref/resource","uri":"mem://notes/{name}"},"argument":{"name":"name","value":"g"}}`: `{"completion":{"values":["gamma"]}}`,
		`{"ref":{"type":"ref/prompt","name":"haiku"},"argument":{"name":"x","value":""}}`:                   `complete: invalid arguments: prompt "haiku" has no argument "x"`,
		`{"ref":{"type":"ref/resource","uri":"mem://other/{name}"},"argument":{"name":"name","value":"g"}}`: `complete: unknown prompt or resource template: no resource template "mem://other/{name}"`,
	} {
		res, err := c.Complete(ctx, json.RawMessage(params))
		got := string(res)
		if err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("Complete(%s) = %s, want %s", params, got, want)
		}
	}
}

// inputRequired returns err as an *InputRequiredError, or fails.
func inputRequired(t *testing.T, err error) *pluginproto.InputRequiredError {
	t.Helper()
	var ir *pluginproto.InputRequiredError
	if !errors.As(err, &ir) {
		t.Fatalf("err = %v, want an *InputRequiredError", err)
	}
	return ir
}

// A tool that asks the client twice takes three rounds; each retry carries
// only the newest answer and the state, and may reach another process of
// the plugin.
func TestEndToEndInputRounds(t *testing.T) {
	t.Parallel()
	a, b := described(t), described(t)
	ctx := t.Context()
	caps := json.RawMessage(`{"elicitation":{},"sampling":{}}`)
	req := &pluginhost.CallRequest{Tool: "survey", ClientCapabilities: caps}

	_, err := a.CallTool(ctx, req)
	ir := inputRequired(t, err)
	if want := `{"1":{"method":"elicitation/create","params":{"message":"Your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}}`; string(ir.Requests) != want || ir.State != "" {
		t.Errorf("round 1: requests %s, state %q; want %s and no state", ir.Requests, ir.State, want)
	}
	req.Input = &pluginhost.Input{Responses: json.RawMessage(`{"1":{"action":"accept","content":{"name":"Ada"}}}`), State: ir.State}
	_, err = b.CallTool(ctx, req) // another process
	ir = inputRequired(t, err)
	if want := `{"2":{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"Greet Ada"}}],"maxTokens":20}}}`; string(ir.Requests) != want || ir.State == "" {
		t.Errorf("round 2: requests %s, state %q; want %s and a state", ir.Requests, ir.State, want)
	}
	req.Input = &pluginhost.Input{Responses: json.RawMessage(`{"2":{"role":"assistant","model":"m","content":{"type":"text","text":"Hello, Ada!"}}}`), State: ir.State}
	res, err := a.CallTool(ctx, req)
	if want := `{"content":[{"type":"text","text":"Hello, Ada!"}]}`; err != nil || string(res) != want {
		t.Errorf("round 3 = %s, %v; want %s", res, err, want)
	}

	// A client that cannot be asked is told at once, with no round.
	res, err = a.CallTool(ctx, &pluginhost.CallRequest{Tool: "survey"})
	if want := `survey needs to ask: elicitation/create: the client did not declare the capability elicitation (form mode)`; err != nil || !strings.Contains(string(res), want) {
		t.Errorf("CallTool for a client without elicitation = %s, %v; want an isError result: %s", res, err, want)
	}

	// One that cannot be asked the second thing: the handler returns that
	// error, and the call needs the capability.
	_, err = b.CallTool(ctx, &pluginhost.CallRequest{Tool: "survey", ClientCapabilities: json.RawMessage(`{"elicitation":{}}`),
		Input: &pluginhost.Input{Responses: json.RawMessage(`{"1":{"action":"accept","content":{"name":"Ada"}}}`)}})
	var cr *pluginproto.CapabilityRequiredError
	if !errors.As(err, &cr) || string(cr.Capabilities) != `{"sampling":{}}` ||
		cr.Message != "sampling/createMessage: the client did not declare the capability sampling" {
		t.Errorf("CallTool for a client without sampling: err = %#v, want a *CapabilityRequiredError naming sampling", err)
	}

	// A read and a prompt ask too.
	read := &pluginhost.ReadRequest{URI: "mem://secret", ClientCapabilities: caps}
	_, err = a.ReadResource(ctx, read)
	ir = inputRequired(t, err)
	read.Input = &pluginhost.Input{Responses: json.RawMessage(`{"1":{"action":"decline"}}`), State: ir.State}
	res, err = b.ReadResource(ctx, read)
	if want := `{"contents":[{"uri":"mem://secret","text":"the secret, after decline"}]}`; err != nil || string(res) != want {
		t.Errorf("ReadResource, round 2 = %s, %v; want %s", res, err, want)
	}
	get := &pluginhost.PromptRequest{Name: "haiku", ClientCapabilities: caps}
	_, err = b.GetPrompt(ctx, get)
	ir = inputRequired(t, err)
	get.Input = &pluginhost.Input{Errors: map[string]pluginproto.InputError{"1": {Code: -1, Message: "the user refused"}}, State: ir.State}
	_, err = a.GetPrompt(ctx, get)
	if want := `get prompt "haiku": the plugin failed (Unknown): sampling/createMessage: the client answered with error -1: the user refused`; err == nil || err.Error() != want {
		t.Errorf("GetPrompt, refused = %v, want %s", err, want)
	}
}

// The plugin reports which lists changed, and updates of the resources the
// host subscribed to.
func TestEndToEndChanges(t *testing.T) {
	t.Parallel()
	c := described(t)
	ctx := t.Context()
	changes := make(chan pluginclient.Change, 64)
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Watch(wctx, func(ch pluginclient.Change) { changes <- ch }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Watch ended with %v", err)
		}
	})
	// await waits for a change with want in it (changes may be
	// coalesced, and the first lists are announced once the watch opens).
	await := func(want func(pluginclient.Change) bool, what string) {
		t.Helper()
		timeout := time.After(20 * time.Second)
		for {
			select {
			case ch := <-changes:
				if want(ch) {
					return
				}
			case <-timeout:
				t.Fatalf("no change: %s", what)
			}
		}
	}
	call := func(tool, args string) {
		t.Helper()
		if _, err := c.CallTool(ctx, &pluginhost.CallRequest{Tool: tool, Arguments: json.RawMessage(args)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, uri := range []string{"mem://greeting", "mem://notes/beta"} {
		if err := c.SubscribeResource(ctx, uri, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.SubscribeResource(ctx, "mem://nothing", true); !errors.Is(err, pluginproto.ErrUnknownResource) {
		t.Errorf("subscribing to an unknown resource: %v, want ErrUnknownResource", err)
	}
	call("touch", `{"URI":"mem://notes/beta"}`)
	await(func(ch pluginclient.Change) bool { return cmp.Equal(ch.Updated, []string{"mem://notes/beta"}) }, "mem://notes/beta updated")
	call("touch", `{"URI":"mem://greeting"}`)
	await(func(ch pluginclient.Change) bool { return cmp.Equal(ch.Updated, []string{"mem://greeting"}) }, "mem://greeting updated")
	call("add_resource", `{"URI":"mem://fresh"}`)
	await(func(ch pluginclient.Change) bool { return ch.Resources }, "resources changed")
	resources, err := c.ListResources(ctx)
	if err != nil || !strings.Contains(fmt.Sprint(uris(t, resources, "uri")), "mem://fresh") {
		t.Errorf("ListResources after add_resource = %s, %v", resources, err)
	}
	call("add_prompt", `{"Name":"fresh"}`)
	await(func(ch pluginclient.Change) bool { return ch.Prompts }, "prompts changed")
	if err := c.SubscribeResource(ctx, "mem://greeting", false); err != nil {
		t.Fatal(err)
	}
	// Unsubscribed: the update of greeting is not sent, the later change
	// of tools is, alone.
	call("touch", `{"URI":"mem://greeting"}`)
	call("add_tool", `{"Name":"fresh"}`)
	await(func(ch pluginclient.Change) bool {
		if len(ch.Updated) > 0 {
			t.Errorf("an update after unsubscribing: %+v", ch)
		}
		return ch.Tools
	}, "tools changed")
}

func startBad(t *testing.T) *pluginclient.Client {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"=bad")
	c, _ := startPlugin(t, cmd)
	if _, err := c.Describe(t.Context(), "test-host"); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestEndToEndMisbehavingPlugin(t *testing.T) {
	t.Parallel()
	c := startBad(t)
	ctx := t.Context()
	check := func(what string, err error, is error, want string) {
		t.Helper()
		if !errors.Is(err, is) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: err = %v\nwant %v: %s", what, err, is, want)
		}
	}
	_, err := c.ListResources(ctx)
	check("ListResources", err, pluginclient.ErrInvalidResult, `list resources: plugin sent an invalid result: item 1 of page 1 is not a JSON object: "\"x\""`)
	_, err = c.ListResourceTemplates(ctx)
	check("ListResourceTemplates", err, pluginclient.ErrInvalidResult, `list resource templates: plugin sent an invalid result: page 2 repeats the cursor "again"`)
	_, err = c.ListPrompts(ctx)
	check("ListPrompts", err, pluginclient.ErrTooLarge, `list prompts: over the host's limit: 12000 items`)
	for uri, want := range map[string]string{
		"bad://array":     `read resource "bad://array": plugin sent an invalid result: not a JSON object: "[]"`,
		"bad://truncated": `read resource "bad://truncated": plugin sent an invalid result: not a JSON object: "{\"contents\":"`,
		"bad://method":    `read resource "bad://method": plugin sent an invalid result: input_required: request "1": method "tools/call" is none of`,
		"bad://state":     `read resource "bad://state": plugin sent an invalid result: input_required: request_state of 65537 bytes, over the 65536 allowed`,
		"bad://many":      `read resource "bad://many": plugin sent an invalid result: input_required: more than 16 requests`,
	} {
		_, err := c.ReadResource(ctx, &pluginhost.ReadRequest{URI: uri})
		check(uri, err, pluginclient.ErrInvalidResult, want)
	}
	_, err = c.ReadResource(ctx, &pluginhost.ReadRequest{URI: "bad://none"})
	check("bad://none", err, pluginclient.ErrNoResult, `read resource "bad://none": plugin ended the call without a result`)
	_, err = c.GetPrompt(ctx, &pluginhost.PromptRequest{Name: "nope"})
	check("GetPrompt", err, pluginproto.ErrUnknownPrompt, `get prompt "nope": unknown prompt: nope`)
	_, err = c.GetPrompt(ctx, &pluginhost.PromptRequest{Name: "string"})
	check("GetPrompt", err, pluginclient.ErrInvalidResult, `get prompt "string": plugin sent an invalid result: not a JSON object`)
	_, err = c.Complete(ctx, json.RawMessage(`{}`))
	check("Complete", err, pluginclient.ErrUnknownReference, `complete: unknown prompt or resource template: nothing`)
	_, err = c.Complete(ctx, json.RawMessage(`{"bad":true}`))
	check("Complete", err, pluginclient.ErrInvalidResult, `complete: plugin sent an invalid result: not a JSON object: "null"`)
	err = c.SubscribeResource(ctx, "bad://x", true)
	check("SubscribeResource", err, pluginproto.ErrUnknownResource, `subscribe to resource "bad://x": unknown resource: bad://x`)
	_, err = c.CallTool(ctx, &pluginhost.CallRequest{Tool: "input"})
	check("CallTool", err, pluginclient.ErrInvalidResult, `call "input": plugin sent an invalid result: input_required: requests is empty`)
	_, err = c.CallTool(ctx, &pluginhost.CallRequest{Tool: "unknown"})
	check("CallTool", err, pluginclient.ErrUnknownTool, `call "unknown": unknown tool`)
	// The plugin's one stream survived every bad answer.
	res, err := c.CallTool(ctx, &pluginhost.CallRequest{Tool: "ok"})
	if err != nil || string(res) != `{"content":[]}` {
		t.Errorf("CallTool after bad answers = %s, %v", res, err)
	}
}
