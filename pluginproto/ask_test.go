package pluginproto

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/plughost/plughost/internal/pluginhost"
)

// askTool is a plugin whose tool "ask" runs ask and returns the text of its
// error, or "ok".
func askTool(ask func(context.Context, *Request) error) *Plugin {
	p := New("test", "0")
	p.AddTool(Tool{Name: "ask"}, func(ctx context.Context, r *Request) (*Result, error) {
		if err := ask(ctx, r); err != nil {
			return nil, err
		}
		return TextResult("ok"), nil
	})
	return p
}

func TestAskChecksTheClientsCapabilities(t *testing.T) {
	t.Parallel()
	elicitForm := func(ctx context.Context, r *Request) error {
		_, err := r.Elicit(ctx, ElicitParams{Message: "?"})
		return err
	}
	elicitURL := func(ctx context.Context, r *Request) error {
		_, err := r.Elicit(ctx, ElicitParams{Message: "sign in", URL: "https://example.com/login"})
		return err
	}
	sample := func(ctx context.Context, r *Request) error {
		_, err := r.Sample(ctx, SampleParams{Messages: []Message{{Role: "user", Content: Text("hi")}}, MaxTokens: 10})
		return err
	}
	sampleTools := func(ctx context.Context, r *Request) error {
		_, err := r.Sample(ctx, SampleParams{Raw: json.RawMessage(`{"messages":[],"maxTokens":5,"tools":[]}`)})
		return err
	}
	roots := func(ctx context.Context, r *Request) error {
		_, err := r.Roots(ctx)
		return err
	}
	tests := map[string]struct {
		caps string
		ask  func(context.Context, *Request) error
		// unsupported names the capability the client lacks, and required
		// is the ClientCapabilities object the call then says it needs;
		// "" means the request is asked.
		unsupported, required string
	}{
		"sampling, none declared":           {`{}`, sample, "sampling", `{"sampling":{}}`},
		"sampling, declared null":           {`{"sampling":null}`, sample, "sampling", `{"sampling":{}}`},
		"sampling":                          {`{"sampling":{}}`, sample, "", ""},
		"sampling with tools, no tools":     {`{"sampling":{}}`, sampleTools, "sampling.tools", `{"sampling":{"tools":{}}}`},
		"sampling with tools":               {`{"sampling":{"tools":{}}}`, sampleTools, "", ""},
		"elicitation {} means form":         {`{"elicitation":{}}`, elicitForm, "", ""},
		"elicitation {} is not url":         {`{"elicitation":{}}`, elicitURL, "elicitation.url", `{"elicitation":{"url":{}}}`},
		"elicitation url only is not form":  {`{"elicitation":{"url":{}}}`, elicitForm, "elicitation (form mode)", `{"elicitation":{}}`},
		"elicitation url":                   {`{"elicitation":{"url":{}}}`, elicitURL, "", ""},
		"elicitation form and url, form":    {`{"elicitation":{"form":{},"url":{}}}`, elicitForm, "", ""},
		"elicitation, none declared":        {`{"roots":{}}`, elicitForm, "elicitation (form mode)", `{"elicitation":{}}`},
		"roots, none declared":              {`{"sampling":{}}`, roots, "roots", `{"roots":{}}`},
		"roots":                             {`{"roots":{"listChanged":true}}`, roots, "", ""},
		"nil capabilities mean none at all": {``, roots, "roots", `{"roots":{}}`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var asked error
			p := askTool(func(ctx context.Context, r *Request) error {
				asked = tc.ask(ctx, r)
				return asked
			})
			res, err := pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{Tool: "ask", ClientCapabilities: json.RawMessage(tc.caps)})
			var ir *InputRequiredError
			if tc.unsupported == "" {
				if !errors.As(err, &ir) {
					t.Fatalf("CallTool = %s, %v; want an *InputRequiredError", res, err)
				}
				return
			}
			if !errors.Is(asked, ErrClientUnsupported) || !strings.HasSuffix(asked.Error(), "the client did not declare the capability "+tc.unsupported) {
				t.Errorf("the request's error = %v; want ErrClientUnsupported naming %s", asked, tc.unsupported)
			}
			// The handler returned it: the call needs the capability.
			var cr *CapabilityRequiredError
			if !errors.As(err, &cr) {
				t.Fatalf("CallTool = %s, %v; want a *CapabilityRequiredError", res, err)
			}
			if want := (&CapabilityRequiredError{Capabilities: json.RawMessage(tc.required), Message: asked.Error()}); !cmp.Equal(want, cr) {
				t.Errorf("CallTool's error = %#v (%s), want %#v (%s)", cr, cr.Capabilities, want, want.Capabilities)
			}
		})
	}
}

func TestHandBuiltRequestAsksNothing(t *testing.T) {
	t.Parallel()
	_, err := (&Request{Tool: "t"}).Roots(t.Context())
	if !errors.Is(err, ErrClientUnsupported) {
		t.Errorf("Roots of a hand-built Request = %v, want ErrClientUnsupported", err)
	}
}

// everything is a client that declared every capability.
var everything = json.RawMessage(`{"sampling":{"tools":{}},"elicitation":{"form":{},"url":{}},"roots":{}}`)

// A handler that asks one thing after another takes a round per request;
// each retry carries only the newest answer, and the request state the
// rest, so each round replays the handler with every answer so far.
func TestAskRoundsReplayWithEveryAnswerSoFar(t *testing.T) {
	t.Parallel()
	var replays []string
	p := askTool(func(ctx context.Context, r *Request) error {
		var got []string
		defer func() { replays = append(replays, strings.Join(got, " ")) }()
		e, err := r.Elicit(ctx, ElicitParams{Message: "name?"})
		if err != nil {
			return err
		}
		got = append(got, "elicit:"+e.Action)
		s, err := r.Sample(ctx, SampleParams{Messages: []Message{{Role: "user", Content: Text("hi")}}, MaxTokens: 1})
		if err != nil {
			return err
		}
		got = append(got, "sample:"+s.Text())
		roots, err := r.Roots(ctx)
		if err != nil {
			return err
		}
		got = append(got, "roots:"+roots[0].URI)
		return nil
	})
	var asked []string
	answers := map[string]string{
		methodElicit: `{"action":"decline"}`,
		methodSample: `{"role":"assistant","model":"m","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`,
		methodRoots:  `{"roots":[{"uri":"file:///src"}]}`,
	}
	res, err := pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{Tool: "ask", ClientCapabilities: everything,
		AnswerInput: func(method string, _ json.RawMessage) (json.RawMessage, error) {
			asked = append(asked, method)
			return json.RawMessage(answers[method]), nil
		},
	})
	if err != nil || string(res) != `{"content":[{"type":"text","text":"ok"}]}` {
		t.Fatalf("CallTool = %s, %v", res, err)
	}
	if diff := cmp.Diff([]string{methodElicit, methodSample, methodRoots}, asked); diff != "" {
		t.Errorf("asked (-want +got):\n%s", diff)
	}
	want := []string{"", "elicit:decline", "elicit:decline sample:ab", "elicit:decline sample:ab roots:file:///src"}
	if diff := cmp.Diff(want, replays); diff != "" {
		t.Errorf("what each round saw (-want +got):\n%s", diff)
	}
}

// Requests made without waiting for their answers are asked together, 16
// at most per round; the rest come in the next round.
func TestAskBatchesRequestsMadeInALoop(t *testing.T) {
	t.Parallel()
	const n = 20
	p := askTool(func(ctx context.Context, r *Request) error {
		var errs []error
		for i := range n {
			_, err := r.Elicit(ctx, ElicitParams{Message: fmt.Sprint(i)})
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	})
	req := &pluginhost.CallRequest{Tool: "ask", ClientCapabilities: everything}
	var rounds []int
	for range 3 {
		_, err := pluginhost.Of(p).CallTool(t.Context(), req)
		var ir *InputRequiredError
		if !errors.As(err, &ir) {
			break
		}
		in, err := answerAll(ir, func(string, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"action":"accept","content":{}}`), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		var keys map[string]json.RawMessage
		_ = json.Unmarshal(ir.Requests, &keys)
		rounds = append(rounds, len(keys))
		req.Input = in
	}
	if diff := cmp.Diff([]int{16, 4}, rounds); diff != "" {
		t.Errorf("requests per round (-want +got):\n%s", diff)
	}
	res, err := pluginhost.Of(p).CallTool(t.Context(), req)
	if err != nil || string(res) != `{"content":[{"type":"text","text":"ok"}]}` {
		t.Errorf("last round = %s, %v", res, err)
	}
}

func TestAskRefusalIsAnInputError(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		answer error
		want   InputError
	}{
		"the client's error":   {&InputError{Code: -1, Message: "the user said no"}, InputError{Code: -1, Message: "the user said no"}},
		"any other error":      {errors.New("boom"), InputError{Code: -32603, Message: "boom"}},
		"wrapped client error": {fmt.Errorf("x: %w", &InputError{Code: -32601, Message: "no roots"}), InputError{Code: -32601, Message: "no roots"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var got *InputError
			p := askTool(func(ctx context.Context, r *Request) error {
				_, err := r.Roots(ctx)
				if !errors.As(err, &got) {
					return err
				}
				return nil
			})
			res, err := pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{Tool: "ask", ClientCapabilities: everything,
				AnswerInput: func(string, json.RawMessage) (json.RawMessage, error) { return nil, tc.answer },
			})
			if err != nil || got == nil {
				t.Fatalf("CallTool = %s, %v; the handler got %v", res, err, got)
			}
			if diff := cmp.Diff(tc.want, *got); diff != "" {
				t.Errorf("InputError (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAskRefusesMalformedRetries(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		input *pluginhost.Input
		want  string
	}{
		"state of another SDK":    {&pluginhost.Input{State: "opaque"}, "the retry's request state is malformed: not a state of this SDK"},
		"state not base64":        {&pluginhost.Input{State: stateVersion + "%%%"}, "the retry's request state is malformed: illegal base64"},
		"state not deflated":      {&pluginhost.Input{State: stateVersion + "AAAA"}, "the retry's request state is malformed"},
		"responses not an object": {&pluginhost.Input{Responses: json.RawMessage(`[1]`)}, "the retry's responses are not a JSON object"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := askTool(func(ctx context.Context, r *Request) error {
				_, err := r.Roots(ctx)
				return err
			})
			res, err := pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{Tool: "ask", ClientCapabilities: everything, Input: tc.input})
			if err != nil || !strings.Contains(string(res), tc.want) || !strings.Contains(string(res), `"isError":true`) {
				t.Errorf("CallTool = %s, %v; want an isError result containing %q", res, err, tc.want)
			}
		})
	}
}

// Answers that no longer fit the 64 KiB request state fail the call.
func TestAskStateTooLarge(t *testing.T) {
	t.Parallel()
	p := askTool(func(ctx context.Context, r *Request) error {
		for range 2 {
			if _, err := r.Sample(ctx, SampleParams{Messages: []Message{{Role: "user", Content: Text("hi")}}, MaxTokens: 1}); err != nil {
				return err
			}
		}
		return nil
	})
	noise := rand.Text() // incompressible
	for len(noise) < 120<<10 {
		noise += rand.Text()
	}
	res, err := pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{Tool: "ask", ClientCapabilities: everything,
		AnswerInput: func(string, json.RawMessage) (json.RawMessage, error) {
			return fmt.Appendf(nil, `{"role":"assistant","model":"m","content":{"type":"text","text":%q}}`, noise), nil
		},
	})
	if want := "bytes in the request state, over the 65536 allowed"; err != nil || !strings.Contains(string(res), want) {
		t.Errorf("CallTool = %.200s, %v; want an isError result containing %q", res, err, want)
	}
}

func TestStateRoundTrips(t *testing.T) {
	t.Parallel()
	st := savedState{
		Answers: map[string]json.RawMessage{"1": json.RawMessage(`{"action":"accept"}`), "10": json.RawMessage(`{"roots":[]}`)},
		Errors:  map[string]InputError{"2": {Code: -32601, Message: "no"}},
	}
	s, err := encodeState(st)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeState(s)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(st, got); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
	if s, _ := encodeState(savedState{}); s != "" {
		t.Errorf("empty state = %q, want \"\"", s)
	}
}

// A prompt or resource handler's requests work as a tool's; a malformed
// retry is refused as invalid arguments.
func TestAskFromPromptsAndResources(t *testing.T) {
	t.Parallel()
	p := New("test", "0")
	p.AddPrompt(Prompt{Name: "p"}, func(ctx context.Context, g *PromptGet) (*PromptResult, error) {
		roots, err := g.Roots(ctx)
		if err != nil {
			return nil, err
		}
		return &PromptResult{Messages: []Message{{Role: "user", Content: Text(roots[0].URI)}}}, nil
	})
	p.AddResource(Resource{URI: "x://r", Name: "r"}, func(ctx context.Context, r *ResourceRead) (*ResourceResult, error) {
		e, err := r.Elicit(ctx, ElicitParams{Message: "?"})
		if err != nil {
			return nil, err
		}
		return TextContents("", e.Action), nil
	})
	answer := func(method string, _ json.RawMessage) (json.RawMessage, error) {
		if method == methodRoots {
			return json.RawMessage(`{"roots":[{"uri":"file:///a"}]}`), nil
		}
		return json.RawMessage(`{"action":"cancel"}`), nil
	}
	res, err := pluginhost.Of(p).GetPrompt(t.Context(), &pluginhost.PromptRequest{Name: "p", ClientCapabilities: everything, AnswerInput: answer})
	if want := `{"messages":[{"role":"user","content":{"type":"text","text":"file:///a"}}]}`; err != nil || string(res) != want {
		t.Errorf("GetPrompt = %s, %v; want %s", res, err, want)
	}
	res, err = pluginhost.Of(p).ReadResource(t.Context(), &pluginhost.ReadRequest{URI: "x://r", ClientCapabilities: everything, AnswerInput: answer})
	if want := `{"contents":[{"uri":"x://r","text":"cancel"}]}`; err != nil || string(res) != want {
		t.Errorf("ReadResource = %s, %v; want %s", res, err, want)
	}
	_, err = pluginhost.Of(p).GetPrompt(t.Context(), &pluginhost.PromptRequest{Name: "p", ClientCapabilities: everything, Input: &pluginhost.Input{State: "tampered"}})
	if !errors.Is(err, ErrInvalidArguments) || !strings.Contains(err.Error(), "request state is malformed") {
		t.Errorf("GetPrompt with a tampered state = %v, want ErrInvalidArguments", err)
	}
}
