package pluginproto

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/plughost/plughost/internal/pluginhost"
)

// The canned answers of the MCP conformance suite.
const (
	acceptAlice = `{"action":"accept","content":{"name":"Alice"}}`
	helloThere  = `{"role":"assistant","content":{"type":"text","text":"Hello there!"},"model":"test-model","stopReason":"endTurn"}`
	testRoot    = `{"roots":[{"uri":"file:///test/root","name":"Test Root"}]}`
)

// A handler that names its requests' keys: the three kinds together, one
// after another, and mixed with numbered ones.
var (
	askNamed = func(ctx context.Context, r *Request) (string, error) {
		var errs []error
		e, err := r.Elicit(ctx, ElicitParams{Key: "user_name", Message: "What is your name?"})
		errs = append(errs, err)
		s, err := r.Sample(ctx, SampleParams{Key: "greeting", Messages: []Message{{Role: "user", Content: Text("Generate a greeting")}}, MaxTokens: 50})
		errs = append(errs, err)
		roots, err := r.RootsKeyed(ctx, "client_roots")
		errs = append(errs, err)
		if err := errors.Join(errs...); err != nil {
			return "", err
		}
		return fmt.Sprintf("%s %s %s", e.Content, s.Text(), roots[0].URI), nil
	}
	askInTurn = func(ctx context.Context, r *Request) (string, error) {
		e1, err := r.Elicit(ctx, ElicitParams{Key: "step1", Message: "Step 1"})
		if err != nil {
			return "", err
		}
		e2, err := r.Elicit(ctx, ElicitParams{Key: "step2", Message: "Step 2"})
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s %s", e1.Content, e2.Content), nil
	}
	askMixed = func(ctx context.Context, r *Request) (string, error) {
		var errs []error
		_, err := r.Elicit(ctx, ElicitParams{Message: "first"})
		errs = append(errs, err)
		_, err = r.RootsKeyed(ctx, "named")
		errs = append(errs, err)
		_, err = r.Roots(ctx)
		errs = append(errs, err)
		return "ok", errors.Join(errs...)
	}
)

// textTool is a plugin whose tool "t" returns what ask returns, or its
// error.
func textTool(ask func(context.Context, *Request) (string, error)) *Plugin {
	p := New("test", "0")
	p.AddTool(Tool{Name: "t"}, func(ctx context.Context, r *Request) (*Result, error) {
		s, err := ask(ctx, r)
		if err != nil {
			return nil, err
		}
		return TextResult(s), nil
	})
	return p
}

// askedOf returns an InputRequiredError's requests as key → method.
func askedOf(t *testing.T, ir *InputRequiredError) map[string]string {
	t.Helper()
	var reqs map[string]struct{ Method string }
	if err := json.Unmarshal(ir.Requests, &reqs); err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string)
	for k, r := range reqs {
		out[k] = r.Method
	}
	return out
}

// A round of a keyed test: the retry's responses (none on the first
// round), whether it carries the previous round's state, and what the
// round answers: the requests (key → method) or the result's text.
type keyedRound struct {
	responses string
	noState   bool
	asks      map[string]string
	text      string
}

func TestAskNamedKeys(t *testing.T) {
	t.Parallel()
	all := map[string]string{"user_name": methodElicit, "greeting": methodSample, "client_roots": methodRoots}
	tests := map[string]struct {
		ask    func(context.Context, *Request) (string, error)
		rounds []keyedRound
	}{
		"named keys in one round": {askNamed, []keyedRound{
			{asks: all},
			{responses: `{"user_name":` + acceptAlice + `,"greeting":` + helloThere + `,"client_roots":` + testRoot + `}`,
				text: `{"name":"Alice"} Hello there! file:///test/root`},
		}},
		"some answered: the state keeps them, the rest are asked again": {askNamed, []keyedRound{
			{asks: all},
			{responses: `{"greeting":` + helloThere + `}`, asks: map[string]string{"user_name": methodElicit, "client_roots": methodRoots}},
			{responses: `{"user_name":` + acceptAlice + `,"client_roots":` + testRoot + `}`, text: `{"name":"Alice"} Hello there! file:///test/root`},
		}},
		"named keys across rounds": {askInTurn, []keyedRound{
			{asks: map[string]string{"step1": methodElicit}},
			{responses: `{"step1":` + acceptAlice + `}`, asks: map[string]string{"step2": methodElicit}},
			{responses: `{"step2":{"action":"accept","content":{"color":"blue"}}}`, text: `{"name":"Alice"} {"color":"blue"}`},
		}},
		"named requests take no number": {askMixed, []keyedRound{
			{asks: map[string]string{"1": methodElicit, "named": methodRoots, "2": methodRoots}},
			{responses: `{"1":{"action":"decline"},"named":{"roots":[]},"2":{"roots":[]}}`, text: "ok"},
		}},
		"responses without a state": {askNamed, []keyedRound{
			{noState: true, responses: `{"user_name":` + acceptAlice + `,"greeting":` + helloThere + `,"client_roots":` + testRoot + `}`,
				text: `{"name":"Alice"} Hello there! file:///test/root`},
		}},
		"responses without a state, numbered": {askMixed, []keyedRound{
			{noState: true, responses: `{"1":{"action":"cancel"},"named":{"roots":[]},"2":{"roots":[]}}`, text: "ok"},
		}},
		"the state lost: what it held is asked again": {askInTurn, []keyedRound{
			{asks: map[string]string{"step1": methodElicit}},
			{responses: `{"step1":` + acceptAlice + `}`, asks: map[string]string{"step2": methodElicit}},
			{noState: true, responses: `{"step2":{"action":"accept","content":{"color":"blue"}}}`, asks: map[string]string{"step1": methodElicit}},
		}},
		"unknown keys are ignored": {askNamed, []keyedRound{
			{noState: true, responses: `{"user_name":` + acceptAlice + `,"greeting":` + helloThere + `,"client_roots":` + testRoot +
				`,"unknown_extra_key":{"action":"accept","content":{"foo":"bar"}},"another_unexpected":{"action":"accept","content":{"baz":123}},"3":{"roots":[]}}`,
				text: `{"name":"Alice"} Hello there! file:///test/root`},
		}},
		"an answer under the wrong key is none": {askInTurn, []keyedRound{
			{noState: true, responses: `{"wrong_key":{"action":"accept","content":{"data":"wrong"}}}`, asks: map[string]string{"step1": methodElicit}},
		}},
		"numbered answers do not answer named requests": {askInTurn, []keyedRound{
			{noState: true, responses: `{"1":` + acceptAlice + `}`, asks: map[string]string{"step1": methodElicit}},
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := textTool(tc.ask)
			req := &pluginhost.CallRequest{Tool: "t", ClientCapabilities: everything}
			state := ""
			for i, r := range tc.rounds {
				if r.responses != "" {
					req.Input = &pluginhost.Input{Responses: json.RawMessage(r.responses), State: state}
					if r.noState {
						req.Input.State = ""
					}
				}
				res, err := pluginhost.Of(p).CallTool(t.Context(), req)
				if r.asks == nil {
					want, _ := TextResult(r.text).encode()
					if err != nil || string(res) != string(want) {
						t.Fatalf("round %d = %s, %v; want %s", i+1, res, err, want)
					}
					continue
				}
				var ir *InputRequiredError
				if !errors.As(err, &ir) {
					t.Fatalf("round %d = %s, %v; want the requests %v", i+1, res, err, r.asks)
				}
				if diff := cmp.Diff(r.asks, askedOf(t, ir)); diff != "" {
					t.Fatalf("round %d: requests (-want +got):\n%s", i+1, diff)
				}
				state = ir.State
			}
		})
	}
}

// The state keeps the answers to the requests the handler made, and
// nothing else: not the client's extras, nor an answer it did not take.
func TestAskStateKeepsOnlyTheAnswersAsked(t *testing.T) {
	t.Parallel()
	p := textTool(askNamed)
	_, err := pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{Tool: "t", ClientCapabilities: everything, Input: &pluginhost.Input{Responses: json.RawMessage(
		`{"greeting":` + helloThere + `,"user_name":12345,"extra":{"roots":[]},"1":{"roots":[]}}`)}})
	var ir *InputRequiredError
	if !errors.As(err, &ir) {
		t.Fatalf("err = %v, want an *InputRequiredError", err)
	}
	st, err := decodeState(ir.State)
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(maps.Keys(st.Answers)); !slices.Equal(got, []string{"greeting"}) {
		t.Errorf("the state keeps the answers %v, want [greeting]", got)
	}
	if diff := cmp.Diff(map[string]string{"user_name": methodElicit, "client_roots": methodRoots}, askedOf(t, ir)); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// An answer that is not the result its request expects is no answer: the
// request is asked again, whether the answer came in the responses or in
// the state, under a named key or a number.
func TestAskMalformedAnswerIsAskedAgain(t *testing.T) {
	t.Parallel()
	elicit := func(key string) func(context.Context, *Request) (string, error) {
		return func(ctx context.Context, r *Request) (string, error) {
			e, err := r.Elicit(ctx, ElicitParams{Key: key, Message: "?"})
			if err != nil {
				return "", err
			}
			return e.Action, nil
		}
	}
	sample := func(ctx context.Context, r *Request) (string, error) {
		s, err := r.Sample(ctx, SampleParams{Key: "greeting", Messages: []Message{{Role: "user", Content: Text("hi")}}, MaxTokens: 5})
		if err != nil {
			return "", err
		}
		return s.Text(), nil
	}
	roots := func(key string) func(context.Context, *Request) (string, error) {
		return func(ctx context.Context, r *Request) (string, error) {
			roots, err := r.RootsKeyed(ctx, key)
			if err != nil {
				return "", err
			}
			return fmt.Sprint(len(roots)), nil
		}
	}
	tests := map[string]struct {
		ask       func(context.Context, *Request) (string, error)
		responses string
		key       string
	}{
		"a number for an elicitation":      {elicit("user_name"), `{"user_name":12345}`, "user_name"},
		"null for an elicitation":          {elicit("user_name"), `{"user_name":null}`, "user_name"},
		"an unknown action":                {elicit("user_name"), `{"user_name":{"action":"maybe"}}`, "user_name"},
		"no action":                        {elicit("user_name"), `{"user_name":{"content":{"name":"Alice"}}}`, "user_name"},
		"content not an object":            {elicit("user_name"), `{"user_name":{"action":"accept","content":"Alice"}}`, "user_name"},
		"roots for an elicitation":         {elicit("user_name"), `{"user_name":` + testRoot + `}`, "user_name"},
		"a numbered elicitation":           {elicit(""), `{"1":[1]}`, "1"},
		"a sample without a role":          {sample, `{"greeting":{"content":{"type":"text","text":"hi"},"model":"m"}}`, "greeting"},
		"a sample whose content is a text": {sample, `{"greeting":{"role":"assistant","content":"hi","model":"m"}}`, "greeting"},
		"an elicitation for a sample":      {sample, `{"greeting":` + acceptAlice + `}`, "greeting"},
		"roots not an array":               {roots("client_roots"), `{"client_roots":{"roots":"no"}}`, "client_roots"},
		"no roots":                         {roots("client_roots"), `{"client_roots":{}}`, "client_roots"},
		"a root without a uri":             {roots("client_roots"), `{"client_roots":{"roots":[{"name":"x"}]}}`, "client_roots"},
		"numbered roots not an array":      {roots(""), `{"1":{"roots":"no"}}`, "1"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := textTool(tc.ask)
			for _, in := range []*pluginhost.Input{
				{Responses: json.RawMessage(tc.responses)},
				{State: mustState(t, tc.responses)},
			} {
				res, err := pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{Tool: "t", ClientCapabilities: everything, Input: in})
				var ir *InputRequiredError
				if !errors.As(err, &ir) {
					t.Fatalf("CallTool with %+v = %s, %v; want the request asked again", in, res, err)
				}
				if got := askedOf(t, ir); len(got) != 1 || got[tc.key] == "" {
					t.Errorf("requests %v, want %q alone", got, tc.key)
				}
				if ir.State != "" {
					t.Errorf("state %q, want none: the malformed answer is not kept", ir.State)
				}
			}
		})
	}
}

// mustState returns a request state holding the answers in responses.
func mustState(t *testing.T, responses string) string {
	t.Helper()
	var answers map[string]json.RawMessage
	if err := json.Unmarshal([]byte(responses), &answers); err != nil {
		t.Fatal(err)
	}
	s, err := encodeState(savedState{Answers: answers})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A named key may not be all digits, and no key may name two requests of
// one round: the request fails, saying so, and so does the call, even
// when the handler made other requests still unanswered.
func TestAskKeyRules(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		ask  func(context.Context, *Request) (string, error)
		want string
	}{
		"a key of digits": {func(ctx context.Context, r *Request) (string, error) {
			_, err := r.Elicit(ctx, ElicitParams{Key: "1", Message: "?"})
			return "", err
		}, `elicitation/create: the key \"1\" is all digits: those are the keys of requests without one (name it otherwise)`},
		"a key of digits, zero first": {func(ctx context.Context, r *Request) (string, error) {
			_, err := r.RootsKeyed(ctx, "007")
			return "", err
		}, `roots/list: the key \"007\" is all digits`},
		"a key twice": {func(ctx context.Context, r *Request) (string, error) {
			_, err1 := r.Elicit(ctx, ElicitParams{Key: "k", Message: "?"})
			_, err2 := r.Sample(ctx, SampleParams{Key: "k", Messages: []Message{{Role: "user", Content: Text("hi")}}, MaxTokens: 5})
			if !errors.Is(err1, ErrInputRequired) {
				return "", fmt.Errorf("the first request: %v", err1)
			}
			return "", err2
		}, `sampling/createMessage: the key \"k\" names two requests of one round: keys must be unique`},
		"a key twice, answered": {func(ctx context.Context, r *Request) (string, error) {
			if _, err := r.RootsKeyed(ctx, "k"); err != nil {
				return "", fmt.Errorf("the first request: %v", err)
			}
			_, err := r.RootsKeyed(ctx, "k")
			return "", err
		}, `roots/list: the key \"k\" names two requests of one round`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res, err := pluginhost.Of(textTool(tc.ask)).CallTool(t.Context(), &pluginhost.CallRequest{Tool: "t", ClientCapabilities: everything,
				Input: &pluginhost.Input{Responses: json.RawMessage(`{"k":{"roots":[]}}`)}})
			if err != nil || !strings.Contains(string(res), tc.want) || !strings.Contains(string(res), `"isError":true`) {
				t.Errorf("CallTool = %s, %v; want an isError result containing %s", res, err, tc.want)
			}
		})
	}
}

// A prompt's and a resource's handlers name keys as a tool's does; the
// keys are not sent to the client as params.
func TestAskKeysFromPromptsAndResources(t *testing.T) {
	t.Parallel()
	p := New("test", "0")
	p.AddPrompt(Prompt{Name: "p"}, func(ctx context.Context, g *PromptGet) (*PromptResult, error) {
		e, err := g.Elicit(ctx, ElicitParams{Key: "user_context", Message: "?"})
		if err != nil {
			return nil, err
		}
		roots, err := g.RootsKeyed(ctx, "roots")
		if err != nil {
			return nil, err
		}
		return &PromptResult{Messages: []Message{{Role: "user", Content: Text(string(e.Content) + " " + roots[0].URI)}}}, nil
	})
	p.AddResource(Resource{URI: "x://r", Name: "r"}, func(ctx context.Context, r *ResourceRead) (*ResourceResult, error) {
		s, err := r.Sample(ctx, SampleParams{Key: "s", Messages: []Message{{Role: "user", Content: Text("hi")}}, MaxTokens: 5})
		if err != nil {
			return nil, err
		}
		roots, err := r.RootsKeyed(ctx, "roots")
		if err != nil {
			return nil, err
		}
		return TextContents("", s.Text()+" "+roots[0].URI), nil
	})
	_, err := pluginhost.Of(p).GetPrompt(t.Context(), &pluginhost.PromptRequest{Name: "p", ClientCapabilities: everything})
	var ir *InputRequiredError
	if want := `{"user_context":{"method":"elicitation/create","params":{"message":"?","requestedSchema":{"type":"object","properties":{}}}}}`; !errors.As(err, &ir) || string(ir.Requests) != want {
		t.Errorf("GetPrompt = %v; want the requests %s", err, want)
	}
	res, err := pluginhost.Of(p).GetPrompt(t.Context(), &pluginhost.PromptRequest{Name: "p", ClientCapabilities: everything,
		Input: &pluginhost.Input{Responses: json.RawMessage(`{"user_context":{"action":"accept","content":{"context":"c"}},"roots":` + testRoot + `}`)}})
	if want := `{"messages":[{"role":"user","content":{"type":"text","text":"{\"context\":\"c\"} file:///test/root"}}]}`; err != nil || string(res) != want {
		t.Errorf("GetPrompt = %s, %v; want %s", res, err, want)
	}
	_, err = pluginhost.Of(p).ReadResource(t.Context(), &pluginhost.ReadRequest{URI: "x://r", ClientCapabilities: everything})
	if want := `{"s":{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":5}}}`; !errors.As(err, &ir) || string(ir.Requests) != want {
		t.Errorf("ReadResource = %v; want the requests %s", err, want)
	}
	res, err = pluginhost.Of(p).ReadResource(t.Context(), &pluginhost.ReadRequest{URI: "x://r", ClientCapabilities: everything,
		Input: &pluginhost.Input{Responses: json.RawMessage(`{"s":` + helloThere + `,"roots":` + testRoot + `}`)}})
	if want := `{"contents":[{"uri":"x://r","text":"Hello there! file:///test/root"}]}`; err != nil || string(res) != want {
		t.Errorf("ReadResource = %s, %v; want %s", res, err, want)
	}
}
