package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/host/tool"
)

func TestPromptDefinitions(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		name, json string
		reason     string // a part of the Skip's reason
	}{
		"bad name":              {"has space", `{"name":"has space"}`, `invalid prompt name "has space": want 1 to 128 of [A-Za-z0-9_.-]`},
		"empty name":            {"", `{}`, `invalid prompt name ""`},
		"not JSON":              {"p", `{"name":`, "prompt definition is not valid JSON"},
		"not an object":         {"p", `"p"`, "prompt definition is not a JSON object"},
		"member twice":          {"p", `{"name":"p","name":"p"}`, `prompt definition has member "name" twice`},
		"arguments not array":   {"p", `{"name":"p","arguments":{"who":{}}}`, `"arguments" is not an array, got object`},
		"argument not object":   {"p", `{"name":"p","arguments":["who"]}`, `"arguments"[0] is not an object, got string`},
		"argument without name": {"p", `{"name":"p","arguments":[{"name":"a"},{"description":"x"}]}`, `"arguments"[1] has no string "name"`},
		"argument name number":  {"p", `{"name":"p","arguments":[{"name":1}]}`, `"arguments"[0] has no string "name"`},
		"argument Name":         {"p", `{"name":"p","arguments":[{"Name":"a"}]}`, `"arguments"[0] has no string "name"`},
		"argument name empty":   {"p", `{"name":"p","arguments":[{"name":""}]}`, `"arguments"[0] has an empty "name"`},
		"argument twice":        {"p", `{"name":"p","arguments":[{"name":"a"},{"name":"a"}]}`, `"arguments" declares "a" more than once`},
		"required not boolean":  {"p", `{"name":"p","arguments":[{"name":"a","required":"yes"}]}`, `"arguments"[0] "required" is not a boolean, got string`},
		"required null":         {"p", `{"name":"p","arguments":[{"name":"a","required":null}]}`, `"arguments"[0] "required" is not a boolean, got null`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			p := newServer("p").with("good")
			p.prompts = append(p.prompts, tool.Prompt{Name: tc.name, JSON: json.RawMessage(tc.json)})
			f.cat.Set(p)
			skipped := f.cat.Skipped()
			if len(skipped) != 1 || skipped[0].Provider != "p" || skipped[0].Kind != KindPrompt || skipped[0].Name != tc.name || !strings.Contains(skipped[0].Reason, tc.reason) {
				t.Fatalf("Skipped() = %+v, want p's prompt %q with a reason containing %q", skipped, tc.name, tc.reason)
			}
			if diff := cmp.Diff([]string{"good"}, listKeys(t, "name", f.cat.ListPrompts)); diff != "" {
				t.Errorf("prompts (-want +got):\n%s", diff)
			}
			if log := f.log.String(); !strings.Contains(log, "skipping prompt") || !strings.Contains(log, "provider=p prompt=") {
				t.Errorf("no warning naming provider and prompt:\n%s", log)
			}
		})
	}
}

// Prompt names follow the tools' rules in a namespace of their own: a
// clash in one publication prefixes every provider's prompt, '.' becomes
// '_', a name keeps the name it had while its provider offers it, and a
// tool of
// the same name clashes with nothing. The exposed JSON has "name"
// rewritten and nothing else changed.
func TestPromptNames(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	a := newServer("a").with("greet", "files.summary", "only_a")
	a.tools = []tool.Def{toolDef("greet", objectSchema)}
	a.prompts = append(a.prompts, tool.Prompt{Name: "x", JSON: json.RawMessage(`{ "x-future": true, "description": "no name member" }`)})
	// c's tool only_a does not clash with a's prompt.
	f.cat.SetAll(a, newServer("b").with("greet"), newProvider("c", "only_a"))

	want := []PromptEntry{
		{Provider: "a", Prompt: "greet", ExposedName: "a__greet", Description: "does greet"},
		{Provider: "b", Prompt: "greet", ExposedName: "b__greet", Description: "does greet"},
		{Provider: "a", Prompt: "files.summary", ExposedName: "files_summary", Description: "does files.summary"},
		{Provider: "a", Prompt: "only_a", ExposedName: "only_a", Description: "does only_a"},
		{Provider: "a", Prompt: "x", ExposedName: "x", Description: "no name member"},
	}
	if diff := cmp.Diff(want, f.cat.Prompts()); diff != "" {
		t.Errorf("Prompts (-want +got):\n%s", diff)
	}
	if got := allNames(t, f.cat); !cmp.Equal(got, []string{"greet", "only_a"}) {
		t.Errorf("tools %v: a prompt clash renamed a tool", got)
	}
	page, _, err := f.cat.ListPrompts("")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range page {
		got = append(got, string(p))
	}
	wantJSON := []string{
		`{"name":"a__greet","description":"does greet"}`,
		`{"name":"b__greet","description":"does greet"}`,
		`{"name":"files_summary","description":"does files.summary"}`,
		`{"name":"only_a","description":"does only_a"}`,
		`{"name":"x","x-future":true,"description":"no name member"}`,
	}
	if diff := cmp.Diff(wantJSON, got); diff != "" {
		t.Errorf("prompt JSON (-want +got):\n%s", diff)
	}
	log := f.log.String()
	// One line per provider: a's names both renames, b's its one.
	if !strings.Contains(log, `prompts exposed under other names: provider=a count=2 first=["files.summary as files_summary ('.' is not allowed in exposed names)", "greet as a__greet (name clash between providers)"]`) {
		t.Errorf("no summary of a's renamed prompts:\n%s", log)
	}
	if !strings.Contains(log, `prompt exposed under another name: provider=b prompt=greet exposed=b__greet reason="name clash between providers"`) {
		t.Errorf("no prompt clash warning for b:\n%s", log)
	}
	if strings.Contains(log, "tool exposed") {
		t.Errorf("a prompt clash was logged as a tool clash:\n%s", log)
	}
	f.cat.Remove("b")
	if got := f.cat.Prompts()[0]; got.Provider != "a" || got.ExposedName != "a__greet" {
		t.Errorf("after b left, the first prompt is %+v, want a's greet still exposed as a__greet", got)
	}
}

func TestPromptPagination(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &Options{PageSize: 2})
	f.cat.Set(newServer("p").with("e", "d", "c", "b", "a"))
	var got []string
	cursor, pages := "", 0
	for {
		page, next, err := f.cat.ListPrompts(cursor)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, raw := range page {
			got = append(got, nameOf(t, raw))
		}
		if pages == 1 {
			f.cat.Set(newServer("p").with("e", "d", "b", "a")) // the cursor's prompt goes
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if diff := cmp.Diff([]string{"a", "b", "d", "e"}, got); diff != "" || pages != 2 {
		t.Errorf("%d pages (-want +got):\n%s", pages, diff)
	}
}

func TestGetPrompt(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		name     string // exposed
		args     string
		wantErr  error  // nil when the get goes through
		wantText string // the error's text, or the arguments the provider got
	}{
		"valid":               {"a__greet", `{"who":"Ada","style":"warm"}`, nil, `{"who":"Ada","style":"warm"}`},
		"absent arguments":    {"plain", ``, nil, `{}`},
		"null arguments":      {"plain", ` null `, nil, `{}`},
		"undeclared argument": {"plain", `{"extra":"x"}`, nil, `{"extra":"x"}`},
		"bytes as sent":       {"a__greet", `{ "who" : "Ada" }`, nil, `{ "who" : "Ada" }`},
		"missing required":    {"a__greet", `{}`, tool.ErrBadArguments, `invalid arguments for prompt "a__greet": /who: missing required argument`},
		"absent, required":    {"a__greet", ``, tool.ErrBadArguments, `invalid arguments for prompt "a__greet": /who: missing required argument`},
		"not a string":        {"a__greet", `{"who":"Ada","style":3}`, tool.ErrBadArguments, `invalid arguments for prompt "a__greet": /style: must be a string, got number`},
		"every problem": {"a__greet", `{"style":{"a":1},"x/y":null}`, tool.ErrBadArguments,
			"invalid arguments for prompt \"a__greet\":\n- /style: must be a string, got object\n- /who: missing required argument\n- /x~1y: must be a string, got null"},
		"an array":                       {"plain", `["x"]`, tool.ErrBadArguments, `invalid arguments for prompt "plain": arguments must be a JSON object, got array`},
		"a string":                       {"plain", `"x"`, tool.ErrBadArguments, `invalid arguments for prompt "plain": arguments must be a JSON object, got string`},
		"not JSON":                       {"plain", `{"x":`, tool.ErrBadArguments, `invalid arguments for prompt "plain": not valid JSON: unexpected end of JSON input`},
		"unknown prompt":                 {"greet", `{}`, tool.ErrUnknownPrompt, `unknown prompt: "greet"`},
		"own name of a sanitized prompt": {"files.summary", `{}`, tool.ErrUnknownPrompt, `unknown prompt: "files.summary"`},
	}
	f := newFixture(t, nil)
	a := newServer("a").with("greet:who!,style", "plain", "files.summary")
	a.get = func(_ context.Context, g *tool.PromptGet) (json.RawMessage, error) {
		return json.RawMessage(fmt.Sprintf(`{"messages":[{"role":"user","content":{"type":"text","text":%q}}]}`, g.Name+" "+string(g.Arguments))), nil
	}
	f.cat.SetAll(a, newServer("b").with("greet"))
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res, err := f.cat.GetPrompt(context.Background(), &tool.PromptGet{Name: tc.name, Arguments: json.RawMessage(tc.args)})
			if tc.wantErr == nil {
				if err != nil {
					t.Fatal(err)
				}
				own := map[string]string{"a__greet": "greet", "plain": "plain"}[tc.name]
				var got struct {
					Messages []struct{ Content struct{ Text string } }
				}
				if err := json.Unmarshal(res, &got); err != nil || len(got.Messages) != 1 {
					t.Fatalf("result %s: %v", res, err)
				}
				if got, want := got.Messages[0].Content.Text, own+" "+tc.wantText; got != want {
					t.Errorf("the provider got %q, want %q", got, want)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error %v, want one wrapping %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantText, err.Error()); diff != "" {
				t.Errorf("error text (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("sanitized name", func(t *testing.T) {
		t.Parallel()
		res, err := f.cat.GetPrompt(context.Background(), &tool.PromptGet{Name: "files_summary"})
		if err != nil || !strings.Contains(string(res), `"text":"files.summary {}"`) {
			t.Errorf("GetPrompt(files_summary) = %s, %v; want the provider's own name", res, err)
		}
	})
	t.Run("nil", func(t *testing.T) {
		t.Parallel()
		if _, err := f.cat.GetPrompt(context.Background(), nil); err == nil {
			t.Error("GetPrompt(nil) succeeded")
		}
	})
}

// A flood of bad arguments is cut after argcheck.MaxViolations lines.
func TestGetPromptBounded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.cat.Set(newServer("p").with("x"))
	var args []string
	for i := range 25 {
		args = append(args, `"a`+string(rune('a'+i))+`":1`)
	}
	_, err := f.cat.GetPrompt(context.Background(), &tool.PromptGet{Name: "x", Arguments: json.RawMessage("{" + strings.Join(args, ",") + "}")})
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 12 || lines[1] != "- /aa: must be a string, got number" || lines[11] != "- … and 15 more" {
		t.Errorf("error:\n%s", err)
	}
}

// The get reaches the provider with its own name and everything else as
// sent; its errors come back typed as they are, others wrapped.
func TestGetPromptProvider(t *testing.T) {
	t.Parallel()
	errBoom := errors.New("template exploded")
	input := &tool.InputRequired{Requests: json.RawMessage(`{}`), State: "st"}
	f := newFixture(t, nil)
	p := newServer("p").with("boom", "ask", "echo")
	p.get = func(_ context.Context, g *tool.PromptGet) (json.RawMessage, error) {
		switch g.Name {
		case "boom":
			return nil, errBoom
		case "ask":
			return nil, input
		}
		return json.RawMessage(`{"messages":[]}`), nil
	}
	f.cat.Set(p)
	_, err := f.cat.GetPrompt(context.Background(), &tool.PromptGet{Name: "boom"})
	if !errors.Is(err, errBoom) || err.Error() != `prompt "boom" of provider "p": template exploded` {
		t.Errorf("error %v, want errBoom naming prompt and provider", err)
	}
	_, err = f.cat.GetPrompt(context.Background(), &tool.PromptGet{Name: "ask"})
	var ir *tool.InputRequired
	if !errors.As(err, &ir) || ir.State != "st" || ir.Provider != "p" {
		t.Errorf("error %v, want the provider's InputRequired naming it", err)
	}
	in := &tool.PromptGet{Name: "echo", Arguments: json.RawMessage(`{"a":"b"}`), ClientCapabilities: json.RawMessage(`{}`), Input: &tool.Input{State: "s", Provider: "p"}}
	if _, err := f.cat.GetPrompt(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	gets := p.gets
	if diff := cmp.Diff(*in, gets[len(gets)-1]); diff != "" {
		t.Errorf("the provider got (-sent +got):\n%s", diff)
	}
}

func TestGetPromptChecksTheResult(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct{ result, wantErr string }{
		"valid":              {result: `{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}]}`},
		"no messages":        {result: `{"description":"x"}`, wantErr: "not a GetPromptResult"},
		"message not object": {result: `{"messages":["hi"]}`, wantErr: "not a GetPromptResult"},
		"no content":         {result: `{"messages":[{"role":"user"}]}`, wantErr: `message 0 of the provider's result has no string "role" or no object "content"`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			a := newServer("a").with("p")
			a.get = func(context.Context, *tool.PromptGet) (json.RawMessage, error) {
				return json.RawMessage(tc.result), nil
			}
			f.cat.Set(a)
			res, err := f.cat.GetPrompt(context.Background(), &tool.PromptGet{Name: "p"})
			switch {
			case tc.wantErr == "" && (err != nil || string(res) != tc.result):
				t.Errorf("GetPrompt = %s, %v; want the provider's result", res, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), `provider "a"`)):
				t.Errorf("GetPrompt = %s, %v; want an error naming the provider and containing %q", res, err, tc.wantErr)
			}
		})
	}
}
