package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/plughost/plughost/host/tool"
)

func TestComplete(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		params   string
		wantErr  error
		want     string // the error's text, or the result
		provider string // which provider was asked ("" for none)
		got      string // the params it got
	}{
		"a prompt, renamed": {
			params:   `{"ref":{"type":"ref/prompt","name":"a__greet"},"argument":{"name":"who","value":"A"},"context":{"arguments":{"style":"warm"}},"_meta":{"k":1}}`,
			want:     `{"completion":{"values":["a"]}}`,
			provider: "a",
			got:      `{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"who","value":"A"},"context":{"arguments":{"style":"warm"}},"_meta":{"k":1}}`,
		},
		"a prompt, member order kept and compacted": {
			params:   `{ "argument": {"value": "", "name": "who"}, "ref": {"name": "b__greet", "type": "ref/prompt"} }`,
			want:     `{"completion":{"values":["b"]}}`,
			provider: "b",
			got:      `{"argument":{"value":"","name":"who"},"ref":{"name":"greet","type":"ref/prompt"}}`,
		},
		"a template: the first in routing order": {
			params:   `{"ref":{"type":"ref/resource","uri":"file:///{path}"},"argument":{"name":"path","value":"no"}}`,
			want:     `{"completion":{"values":["a"]}}`,
			provider: "a",
			got:      `{"ref":{"type":"ref/resource","uri":"file:///{path}"},"argument":{"name":"path","value":"no"}}`,
		},
		"a template of one provider": {
			params:   `{"ref":{"type":"ref/resource","uri":"docs://{id}"},"argument":{"name":"id","value":"4"}}`,
			want:     `{"completion":{"values":["b"]}}`,
			provider: "b",
			got:      `{"ref":{"type":"ref/resource","uri":"docs://{id}"},"argument":{"name":"id","value":"4"}}`,
		},
		"a listed resource is not a template": {
			params:  `{"ref":{"type":"ref/resource","uri":"file:///readme"},"argument":{"name":"any","value":""}}`,
			wantErr: tool.ErrBadArguments,
			want:    `invalid completion/complete params: /ref/uri: "file:///readme" is the URI of a resource, not a resource template: it has no variables to complete`,
		},
		"a provider without completions": {
			params: `{"ref":{"type":"ref/prompt","name":"quiet"},"argument":{"name":"x","value":""}}`,
			want:   `{"completion":{"values":[]}}`,
		},
		"an unknown prompt": {
			params:  `{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"who","value":""}}`,
			wantErr: tool.ErrUnknownPrompt, want: `unknown prompt: "greet"`,
		},
		"an unknown resource": {
			params:  `{"ref":{"type":"ref/resource","uri":"file:///{other}"},"argument":{"name":"other","value":""}}`,
			wantErr: tool.ErrUnknownResource, want: `unknown resource: no resource or resource template "file:///{other}"`,
		},
		"a URI a template matches is not a template": {
			params:  `{"ref":{"type":"ref/resource","uri":"file:///x"},"argument":{"name":"path","value":""}}`,
			wantErr: tool.ErrBadArguments,
			want:    `invalid completion/complete params: /ref/uri: "file:///x" is the URI of a resource, not a resource template: it has no variables to complete`,
		},
		"a URI nothing serves": {
			params:  `{"ref":{"type":"ref/resource","uri":"zzz://nothing"},"argument":{"name":"path","value":""}}`,
			wantErr: tool.ErrUnknownResource, want: `unknown resource: no resource or resource template "zzz://nothing"`,
		},
		"an argument the prompt does not declare": {
			params:  `{"ref":{"type":"ref/prompt","name":"a__greet"},"argument":{"name":"mood","value":""}}`,
			wantErr: tool.ErrBadArguments, want: `invalid completion/complete params: /argument/name: prompt "a__greet" has no argument "mood"`,
		},
		"a variable the template does not have": {
			params:  `{"ref":{"type":"ref/resource","uri":"docs://{id}"},"argument":{"name":"path","value":""}}`,
			wantErr: tool.ErrBadArguments, want: `invalid completion/complete params: /argument/name: resource template "docs://{id}" has no variable "path"`,
		},
		"absent params": {
			params:  ``,
			wantErr: tool.ErrBadArguments, want: "invalid completion/complete params:\n- /argument: missing\n- /ref: missing",
		},
		"not an object": {
			params:  `[1]`,
			wantErr: tool.ErrBadArguments, want: `invalid completion/complete params: params is not a JSON object`,
		},
		"not JSON": {
			params:  `{"ref":`,
			wantErr: tool.ErrBadArguments, want: `invalid completion/complete params: params is not valid JSON: unexpected end of JSON input`,
		},
		"every problem": {
			params:  `{"ref":{"type":"ref/tool","name":"x"},"argument":{"name":1},"context":{"arguments":{"a":"ok","b":2}}}`,
			wantErr: tool.ErrBadArguments,
			want: "invalid completion/complete params:\n" +
				"- /argument/name: must be a string, got number\n" +
				"- /argument/value: missing\n" +
				"- /context/arguments/b: must be a string, got number\n" +
				`- /ref/type: must be "ref/prompt" or "ref/resource", got "ref/tool"`,
		},
		"ref shapes": {
			params:  `{"ref":{"type":"ref/prompt","uri":"x"},"argument":[]}`,
			wantErr: tool.ErrBadArguments,
			want:    "invalid completion/complete params:\n- /argument: must be an object, got array\n- /ref/name: missing",
		},
		"resource ref without uri": {
			params:  `{"ref":{"type":"ref/resource","name":"x"},"argument":{"name":"a","value":"b"},"context":[]}`,
			wantErr: tool.ErrBadArguments,
			want:    "invalid completion/complete params:\n- /context: must be an object, got array\n- /ref/uri: missing",
		},
		"empty ref type": {
			params:  `{"ref":{"type":"","name":"a__greet"},"argument":{"name":"who","value":""}}`,
			wantErr: tool.ErrBadArguments, want: `invalid completion/complete params: /ref/type: must be "ref/prompt" or "ref/resource", got ""`,
		},
		"ref type not a string": {
			params:  `{"ref":{"type":1},"argument":{"name":"a","value":"b"}}`,
			wantErr: tool.ErrBadArguments, want: "invalid completion/complete params: /ref/type: must be a string, got number",
		},
		"ref without type": {
			params:  `{"ref":{},"argument":{"name":"a","value":"b"}}`,
			wantErr: tool.ErrBadArguments, want: "invalid completion/complete params: /ref/type: missing",
		},
		"ref member twice": {
			params:  `{"ref":{"type":"ref/prompt","type":"ref/prompt"},"argument":{"name":"a","value":"b"}}`,
			wantErr: tool.ErrBadArguments, want: `invalid completion/complete params: /ref: object has member "type" twice`,
		},
	}
	f := newFixture(t, nil)
	a := newServer("a").with("greet:who", "file:///{path}")
	b := newServer("b").with("greet:who", "file:///{path}", "docs://{id}", "file:///readme")
	q := newServer("q").with("quiet:x")
	q.offers.Completions = false
	f.cat.SetAll(a, b, q)
	servers := map[string]*fakeServer{"a": a, "b": b, "q": q}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			// Not parallel: each case reads what the servers recorded.
			before := map[string]int{}
			for n, s := range servers {
				before[n] = len(s.record(&s.completes))
			}
			res, err := f.cat.Complete(context.Background(), json.RawMessage(tc.params))
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("error %v, want one wrapping %v", err, tc.wantErr)
				}
				if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
					t.Errorf("error text (-want +got):\n%s", diff)
				}
			} else if err != nil || string(res) != tc.want {
				t.Errorf("Complete = %s, %v; want %s", res, err, tc.want)
			}
			for n, s := range servers {
				got := s.record(&s.completes)[before[n]:]
				var want []string
				if n == tc.provider {
					want = []string{tc.got}
				}
				if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("provider %s got (-want +got):\n%s", n, diff)
				}
			}
		})
	}
}

// A provider's errors: typed ones pass as they are, others are wrapped
// naming the reference and the provider.
func TestCompleteErrors(t *testing.T) {
	t.Parallel()
	errBoom := errors.New("index offline")
	refused := tool.Errorf(tool.ErrRefused, "plugin p is stopping")
	f := newFixture(t, nil)
	p := newServer("p").with("greet:who", "docs://{id}")
	p.complete = func(_ context.Context, params json.RawMessage) (json.RawMessage, error) {
		if bytes.Contains(params, []byte("ref/prompt")) {
			return nil, refused
		}
		return nil, errBoom
	}
	f.cat.Set(p)
	_, err := f.cat.Complete(context.Background(), json.RawMessage(`{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"who","value":""}}`))
	if err != refused {
		t.Errorf("error %v, want the provider's typed error as it is", err)
	}
	_, err = f.cat.Complete(context.Background(), json.RawMessage(`{"argument":{"name":"id","value":""},"ref":{"type":"ref/resource","uri":"docs://{id}"}}`))
	if !errors.Is(err, errBoom) || err.Error() != `completing resource template "docs://{id}" of provider "p": index offline` {
		t.Errorf("error %v, want errBoom naming the template and provider", err)
	}
}

// A provider's "unknown reference" comes back as the reference's kind:
// ErrUnknownResource for a ref/resource, ErrUnknownPrompt for a
// ref/prompt, whichever the provider said (a plugin's arrives as
// ErrUnknownPrompt), and never both.
func TestCompleteUnknownReference(t *testing.T) {
	t.Parallel()
	const (
		promptRef   = `{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"who","value":""}}`
		templateRef = `{"ref":{"type":"ref/resource","uri":"docs://{id}"},"argument":{"name":"id","value":""}}`
	)
	// As the plugin manager reports a plugin's unknown reference.
	fromPlugin := fmt.Errorf("%w: completion of plugin p: %w", tool.ErrUnknownPrompt, errors.New(`complete: unknown prompt or resource template: no such thing`))
	fromOther := fmt.Errorf("%w: no such thing", tool.ErrUnknownResource)
	tests := map[string]struct {
		params        string
		err           error // the provider's
		want, notWant error
		text          string
	}{
		"a template, unknown prompt": {templateRef, fromPlugin, tool.ErrUnknownResource, tool.ErrUnknownPrompt,
			`unknown resource: completing resource template "docs://{id}" of provider "p": completion of plugin p: complete: unknown prompt or resource template: no such thing`},
		"a template, unknown resource": {templateRef, fromOther, tool.ErrUnknownResource, tool.ErrUnknownPrompt,
			`completing resource template "docs://{id}" of provider "p": unknown resource: no such thing`},
		"a prompt, unknown prompt": {promptRef, fromPlugin, tool.ErrUnknownPrompt, tool.ErrUnknownResource,
			`completing prompt "greet" of provider "p": unknown prompt: completion of plugin p: complete: unknown prompt or resource template: no such thing`},
		"a prompt, unknown resource": {promptRef, fromOther, tool.ErrUnknownPrompt, tool.ErrUnknownResource,
			`unknown prompt: completing prompt "greet" of provider "p": no such thing`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			p := newServer("p").with("greet:who", "docs://{id}")
			p.complete = func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, tc.err }
			f.cat.Set(p)
			_, err := f.cat.Complete(context.Background(), json.RawMessage(tc.params))
			if !errors.Is(err, tc.want) || errors.Is(err, tc.notWant) {
				t.Errorf("error %v: want one wrapping %v and not %v", err, tc.want, tc.notWant)
			}
			if err != nil && err.Error() != tc.text {
				t.Errorf("error text (-want +got):\n%s", cmp.Diff(tc.text, err.Error()))
			}
		})
	}
}

func TestCompleteChecksTheResult(t *testing.T) {
	t.Parallel()
	values := make([]string, 101)
	for i := range values {
		values[i] = fmt.Sprintf("%q", fmt.Sprint(i))
	}
	for name, tc := range map[string]struct{ result, wantErr string }{
		"valid":          {result: `{"completion":{"values":["a"],"hasMore":true}}`},
		"no completion":  {result: `{"values":["a"]}`, wantErr: "not a CompleteResult"},
		"not strings":    {result: `{"completion":{"values":[1]}}`, wantErr: "not a CompleteResult"},
		"too many":       {result: `{"completion":{"values":[` + strings.Join(values, ",") + `]}}`, wantErr: "101 values, more than the 100 MCP allows"},
		"values missing": {result: `{"completion":{}}`, wantErr: "not a CompleteResult"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			p := newServer("p").with("greet:who")
			p.complete = func(context.Context, json.RawMessage) (json.RawMessage, error) {
				return json.RawMessage(tc.result), nil
			}
			f.cat.Set(p)
			res, err := f.cat.Complete(context.Background(), json.RawMessage(`{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"who","value":""}}`))
			switch {
			case tc.wantErr == "" && (err != nil || string(res) != tc.result):
				t.Errorf("Complete = %s, %v; want the provider's result", res, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Complete = %s, %v; want an error containing %q", res, err, tc.wantErr)
			}
		})
	}
}
