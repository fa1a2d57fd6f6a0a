package pluginproto

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
	"github.com/plughost/plughost/internal/pluginhost"
)

func TestAddPromptEncodesMCPPrompt(t *testing.T) {
	t.Parallel()
	p := New("test", "0")
	h := func(context.Context, *PromptGet) (*PromptResult, error) { return &PromptResult{}, nil }
	p.AddPrompt(Prompt{Name: "bare"}, h)
	p.AddPrompt(Prompt{Name: "full", Title: "Full", Description: "Everything.", Arguments: []PromptArgument{
		{Name: "a", Title: "A", Description: "The a.", Required: true}, {Name: "b"},
	}}, h)
	p.AddPrompt(Prompt{Name: "gone"}, h)
	p.RemovePrompt("gone")
	want := []string{
		`{"name":"bare"}`,
		`{"name":"full","title":"Full","description":"Everything.","arguments":[{"name":"a","title":"A","description":"The a.","required":true},{"name":"b"}]}`,
	}
	if diff := cmp.Diff(want, jsonStrings(p.Prompts())); diff != "" {
		t.Errorf("Prompts (-want +got):\n%s", diff)
	}
}

func TestAddPromptPanicsOnInvalidPrompt(t *testing.T) {
	t.Parallel()
	h := func(context.Context, *PromptGet) (*PromptResult, error) { return nil, nil }
	tests := map[string]struct {
		prompt  Prompt
		handler PromptHandler
		want    string
	}{
		"empty name":                  {Prompt{}, h, `prompt name "" does not match`},
		"space in name":               {Prompt{Name: "a b"}, h, `prompt name "a b" does not match`},
		"nil handler":                 {Prompt{Name: "a"}, nil, `prompt "a" has a nil handler`},
		"argument without name":       {Prompt{Name: "a", Arguments: []PromptArgument{{}}}, h, `prompt "a" has an argument named "" twice or without a name`},
		"argument named twice":        {Prompt{Name: "a", Arguments: []PromptArgument{{Name: "x"}, {Name: "x"}}}, h, `argument named "x" twice`},
		"argument named twice, apart": {Prompt{Name: "a", Arguments: []PromptArgument{{Name: "x"}, {Name: "y"}, {Name: "x"}}}, h, `argument named "x" twice`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := New("test", "0")
			defer func() {
				msg, _ := recover().(string)
				if !strings.HasPrefix(msg, "pluginproto: AddPrompt: ") || !strings.Contains(msg, tc.want) {
					t.Errorf("panicked with %q, want a message containing %q", msg, tc.want)
				}
				if n := len(p.Prompts()); n != 0 {
					t.Errorf("an invalid prompt was added: %d prompts", n)
				}
			}()
			p.AddPrompt(tc.prompt, tc.handler)
		})
	}
}

func TestGetPrompt(t *testing.T) {
	t.Parallel()
	p := New("test", "0")
	p.Logger().SetLevel(hclog.Off)
	p.AddPrompt(Prompt{Name: "echo", Arguments: []PromptArgument{{Name: "a", Required: true}, {Name: "b", Required: true}, {Name: "c"}}},
		func(_ context.Context, g *PromptGet) (*PromptResult, error) {
			b, _ := json.Marshal(g.Arguments)
			return &PromptResult{Description: "args", Messages: []Message{
				{Role: "user", Content: Text(string(b))},
				{Role: "assistant", Content: EmbeddedText("x://a", "", "embedded")},
			}}, nil
		})
	p.AddPrompt(Prompt{Name: "odd", Arguments: []PromptArgument{{Name: "kind"}}}, func(_ context.Context, g *PromptGet) (*PromptResult, error) {
		switch g.Arguments["kind"] {
		case "refuses":
			return nil, fmt.Errorf("%w: kind must be sensible", ErrInvalidArguments)
		case "fails":
			return nil, errors.New("no inspiration")
		case "panics":
			panic("boom")
		case "role":
			return &PromptResult{Messages: []Message{{Role: "system", Content: Text("x")}}}, nil
		case "zero":
			return &PromptResult{Messages: []Message{{Role: "user"}}}, nil
		case "raw":
			return &PromptResult{Messages: []Message{{Role: "user", Content: RawContent(json.RawMessage(`[]`))}}}, nil
		case "nil":
			return nil, nil
		}
		return &PromptResult{}, nil
	})
	tests := map[string]struct {
		name, args string
		want       string
		is         error
	}{
		"arguments pass, extra ones too": {name: "echo", args: `{"a":"1","b":"","z":"extra"}`, want: `{"description":"args","messages":[{"role":"user","content":{"type":"text","text":"{\"a\":\"1\",\"b\":\"\",\"z\":\"extra\"}"}},{"role":"assistant","content":{"type":"resource","resource":{"uri":"x://a","text":"embedded"}}}]}`},
		"no arguments, none required":    {name: "odd", want: `{"messages":[]}`},
		"one missing":                    {name: "echo", args: `{"a":"1"}`, want: `get prompt "echo": invalid arguments: missing required argument "b"`, is: ErrInvalidArguments},
		"two missing":                    {name: "echo", args: `{"c":"1"}`, want: `get prompt "echo": invalid arguments: missing required arguments "a", "b"`, is: ErrInvalidArguments},
		"not a string":                   {name: "echo", args: `{"a":1,"b":"2"}`, want: `get prompt "echo": invalid arguments: argument "a" is not a string: 1`, is: ErrInvalidArguments},
		"not an object":                  {name: "echo", args: `["a"]`, want: `get prompt "echo": invalid arguments: the arguments are not a JSON object: ["a"]`, is: ErrInvalidArguments},
		"unknown prompt":                 {name: "nope", want: `get prompt "nope": unknown prompt: no prompt "nope"`, is: ErrUnknownPrompt},
		"the handler refuses":            {name: "odd", args: `{"kind":"refuses"}`, want: `get prompt "odd": invalid arguments: kind must be sensible`, is: ErrInvalidArguments},
		"the handler fails":              {name: "odd", args: `{"kind":"fails"}`, want: `get prompt "odd": the plugin failed (Unknown): no inspiration`},
		"the handler panics":             {name: "odd", args: `{"kind":"panics"}`, want: `get prompt "odd": the plugin failed (Unknown): prompt "odd" panicked: boom`},
		"a role MCP does not have":       {name: "odd", args: `{"kind":"role"}`, want: `get prompt "odd": the plugin failed (Internal): prompt "odd": the handler returned an invalid result: messages[0]: role "system" is neither user nor assistant`},
		"zero content":                   {name: "odd", args: `{"kind":"zero"}`, want: `get prompt "odd": the plugin failed (Internal): prompt "odd": the handler returned an invalid result: messages[0]: zero Content; build blocks with Text, Image, ...`},
		"content not an object":          {name: "odd", args: `{"kind":"raw"}`, want: `get prompt "odd": the plugin failed (Internal): prompt "odd": the handler returned an invalid result: messages[0]: content is not a JSON object: []`},
		"nil result":                     {name: "odd", args: `{"kind":"nil"}`, want: `get prompt "odd": the plugin failed (Internal): prompt "odd": the handler returned neither a result nor an error`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res, err := pluginhost.Of(p).GetPrompt(t.Context(), &pluginhost.PromptRequest{Name: tc.name, Arguments: json.RawMessage(tc.args)})
			got := string(res)
			if err != nil {
				got = err.Error()
			}
			if got != tc.want || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Errorf("GetPrompt = %s\nwant %s (errors.Is %v)", got, tc.want, tc.is)
			}
		})
	}
}

func TestMessageMarshalJSONChecks(t *testing.T) {
	t.Parallel()
	if _, err := json.Marshal(Message{Role: "robot", Content: Text("x")}); err == nil || !strings.Contains(err.Error(), `role "robot"`) {
		t.Errorf("Marshal of a bad role = %v", err)
	}
	b, err := json.Marshal(Message{Role: "assistant", Content: Text("x")})
	if want := `{"role":"assistant","content":{"type":"text","text":"x"}}`; err != nil || string(b) != want {
		t.Errorf("Marshal = %s, %v; want %s", b, err, want)
	}
}
