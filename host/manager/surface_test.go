package manager

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/host/expose"
	"github.com/plughost/plughost/host/tool"
)

// server returns the published provider of e as a tool.Server.
func server(t *testing.T, e event) tool.Server {
	t.Helper()
	s, ok := e.p.(tool.Server)
	if !ok {
		t.Fatalf("the provider %T is not a tool.Server", e.p)
	}
	return s
}

func TestPluginResourcesPromptsAndCompletion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	h := start(t, dir, Options{})
	s := server(t, h.expect("set", "tp"))
	ctx := t.Context()

	if diff := cmp.Diff(tool.Offers{Resources: true, Subscriptions: true, Prompts: true, Completions: true}, s.Offers()); diff != "" {
		t.Errorf("offers (-want +got):\n%s", diff)
	}
	if r, tm, p := s.Resources(), s.Templates(), s.Prompts(); len(r) != 1 || r[0].URI != "test://doc" ||
		len(tm) != 1 || tm[0].URITemplate != "test://item/{id}" || len(p) != 1 || p[0].Name != "greet" {
		t.Errorf("lists: resources %v, templates %v, prompts %v", r, tm, p)
	}
	if st := h.status("tp"); st.Resources != 1 || st.Templates != 1 || st.Prompts != 1 {
		t.Errorf("status counts = %+v", st)
	}

	for uri, want := range map[string]string{"test://doc": "the doc", "test://item/7": "item 7"} {
		res, err := s.ReadResource(ctx, &tool.Read{URI: uri})
		if err != nil || !strings.Contains(string(res), `"text":"`+want+`"`) {
			t.Errorf("read %s = %s, %v; want text %q", uri, res, err, want)
		}
	}
	if _, err := s.ReadResource(ctx, &tool.Read{URI: "test://nothing"}); !errors.Is(err, tool.ErrUnknownResource) {
		t.Errorf("read of an unknown URI: error %v, want tool.ErrUnknownResource", err)
	}

	res, err := s.GetPrompt(ctx, &tool.PromptGet{Name: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
	if err != nil || !strings.Contains(string(res), "Hello, Ada") {
		t.Errorf("get greet = %s, %v", res, err)
	}
	if _, err := s.GetPrompt(ctx, &tool.PromptGet{Name: "greet", Arguments: json.RawMessage(`{}`)}); !errors.Is(err, tool.ErrBadArguments) ||
		!strings.Contains(err.Error(), "name") {
		t.Errorf("get greet without its argument: error %v, want tool.ErrBadArguments naming it", err)
	}
	if _, err := s.GetPrompt(ctx, &tool.PromptGet{Name: "nope", Arguments: json.RawMessage(`{}`)}); !errors.Is(err, tool.ErrUnknownPrompt) {
		t.Errorf("get of an unknown prompt: error %v, want tool.ErrUnknownPrompt", err)
	}
	res, err = s.Complete(ctx, json.RawMessage(`{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"name","value":"A"}}`))
	if err != nil || !strings.Contains(string(res), `"values":["Ada","Alan"]`) {
		t.Errorf("complete = %s, %v", res, err)
	}

	// A subscribed resource's update reaches the publisher; a new resource
	// republishes the provider with it.
	if err := s.SubscribeResource(ctx, "test://doc", true); err != nil {
		t.Fatal(err)
	}
	mustCall(t, s, "touch", "")
	up := h.expect("updated", "tp")
	if diff := cmp.Diff([]string{"test://doc"}, up.tools); diff != "" {
		t.Errorf("updated (-want +got):\n%s", diff)
	}
	s2 := server(t, h.expect("set", "tp"))
	var uris []string
	for _, r := range s2.Resources() {
		uris = append(uris, r.URI)
	}
	if diff := cmp.Diff([]string{"test://added", "test://doc"}, slices.Sorted(slices.Values(uris))); diff != "" {
		t.Errorf("resources after touch (-want +got):\n%s", diff)
	}
}

func TestPluginInputRounds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	h := start(t, dir, Options{})
	s := server(t, h.expect("set", "tp"))
	caps := json.RawMessage(`{"elicitation":{}}`)

	_, err := s.CallTool(t.Context(), &tool.Call{Name: "ask", Arguments: json.RawMessage(`{}`), ClientCapabilities: caps})
	var ir *tool.InputRequired
	if !errors.As(err, &ir) {
		t.Fatalf("call ask: error %v, want *tool.InputRequired", err)
	}
	var reqs map[string]struct {
		Method string
		Params json.RawMessage
	}
	if err := json.Unmarshal(ir.Requests, &reqs); err != nil || len(reqs) != 1 || reqs["1"].Method != "elicitation/create" {
		t.Fatalf("input requests %s (%v): want one elicitation/create keyed 1", ir.Requests, err)
	}
	res, err := s.CallTool(t.Context(), &tool.Call{
		Name: "ask", Arguments: json.RawMessage(`{}`), ClientCapabilities: caps,
		Input: &tool.Input{Responses: json.RawMessage(`{"1":{"action":"accept","content":{}}}`), State: ir.State},
	})
	if err != nil || !strings.Contains(string(res), "answer: accept") {
		t.Errorf("retried call = %s, %v; want the answer", res, err)
	}

	// A client that cannot elicit: the tool is told at once, and returns
	// that error, so the call needs the capability (CallTool and StartCall
	// alike).
	noCaps := &tool.Call{Name: "ask", Arguments: json.RawMessage(`{}`), ClientCapabilities: json.RawMessage(`{}`)}
	res, err = s.CallTool(t.Context(), noCaps)
	started := make(chan error, 1)
	s.(tool.Starter).StartCall(t.Context(), noCaps, func(_ json.RawMessage, err error) { started <- err })
	for how, err := range map[string]error{"CallTool": err, "StartCall": <-started} {
		var cr *tool.CapabilityRequired
		if !errors.As(err, &cr) {
			t.Fatalf("%s of ask without the capability = %s, %v; want a *tool.CapabilityRequired", how, res, err)
		}
		want := `tool "ask" of plugin tp needs client capabilities the client did not declare ({"elicitation":{}}): ` +
			"elicitation/create: the client did not declare the capability elicitation (form mode)"
		if string(cr.Capabilities) != `{"elicitation":{}}` || cr.Message != want {
			t.Errorf("%s: capabilities %s, message %q; want {\"elicitation\":{}} and %q", how, cr.Capabilities, cr.Message, want)
		}
		// A session (2025-11-25) gets an isError result carrying the message.
		if res, rpcErr := tool.Outcome(err); rpcErr != nil || string(res) != string(tool.ErrorResult(want)) {
			t.Errorf("%s: tool.Outcome = %s, %v; want an isError result carrying the message", how, res, rpcErr)
		}
	}
}

// What Options.ExposeFor hides is never published: not the tools, the
// resources, the templates or the prompts it names; the status names it.
func TestExposeForHidesWhatItNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	tools, err := expose.Compile([]string{"pid", "crash", "variant_*"}, []string{"variant_v2"})
	if err != nil {
		t.Fatal(err)
	}
	resources, _ := expose.Compile(nil, []string{"test://item/*"})
	prompts, _ := expose.Compile(nil, []string{"*"})
	rules := &expose.Rules{Tools: tools, Resources: resources, Prompts: prompts}
	h := start(t, dir, Options{ExposeFor: func(name string) *expose.Rules {
		if name == "tp" {
			return rules
		}
		return nil
	}})
	e := h.expect("set", "tp")
	if diff := cmp.Diff([]string{"crash", "pid", "variant_v1"}, e.tools); diff != "" {
		t.Errorf("tools published (-want +got):\n%s", diff)
	}
	srv := e.p.(tool.Server)
	var uris []string
	for _, r := range srv.Resources() {
		uris = append(uris, r.URI)
	}
	if diff := cmp.Diff([]string{"test://doc"}, uris); diff != "" {
		t.Errorf("resources published (-want +got):\n%s", diff)
	}
	if n, m := len(srv.Templates()), len(srv.Prompts()); n != 0 || m != 0 {
		t.Errorf("%d templates and %d prompts published, want none", n, m)
	}
	st := h.status("tp")
	if !slices.Contains(st.Hidden, "tool spawn") || !slices.Contains(st.Hidden, "resource template test://item/{id}") ||
		!slices.Contains(st.Hidden, "prompt greet") || slices.Contains(st.Hidden, "tool pid") {
		t.Errorf("status Hidden = %q", st.Hidden)
	}
}
