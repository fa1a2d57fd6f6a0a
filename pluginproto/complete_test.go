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
	"github.com/plughost/plughost/internal/pluginwire"
)

func TestComplete(t *testing.T) {
	t.Parallel()
	p := New("test", "0")
	p.Logger().SetLevel(hclog.Off)
	noPrompt := func(context.Context, *PromptGet) (*PromptResult, error) { return &PromptResult{}, nil }
	p.AddPrompt(Prompt{Name: "many", Arguments: []PromptArgument{{Name: "n"}, {Name: "total"}}, Complete: func(_ context.Context, r *CompleteRequest) (*Completion, error) {
		n := 150
		fmt.Sscan(r.Value, &n)
		c := &Completion{}
		for i := range n {
			c.Values = append(c.Values, fmt.Sprint(i))
		}
		if r.Argument == "total" {
			c.Total = 1000
		}
		return c, nil
	}}, noPrompt)
	p.AddPrompt(Prompt{Name: "plain", Arguments: []PromptArgument{{Name: "a"}}}, noPrompt)
	p.AddPrompt(Prompt{Name: "odd", Arguments: []PromptArgument{{Name: "kind"}}, Complete: func(_ context.Context, r *CompleteRequest) (*Completion, error) {
		switch r.Value {
		case "refuses":
			return nil, fmt.Errorf("%w: not that", ErrInvalidArguments)
		case "fails":
			return nil, errors.New("no idea")
		case "panics":
			panic("boom")
		case "context":
			b, _ := json.Marshal(r.Context)
			return &Completion{Values: []string{string(b)}, HasMore: true}, nil
		}
		return nil, nil
	}}, noPrompt)
	p.AddResourceTemplate(ResourceTemplate{URITemplate: "repo://{owner}/{name}", Name: "repo", Complete: func(_ context.Context, r *CompleteRequest) (*Completion, error) {
		return &Completion{Values: []string{r.Argument + ":" + r.Value + ":" + r.Context["owner"]}}, nil
	}}, readsAs(""))

	params := func(ref, arg, value string) string {
		return fmt.Sprintf(`{"ref":%s,"argument":{"name":%q,"value":%q}}`, ref, arg, value)
	}
	many100 := strings.Trim(fmt.Sprintf("%q", seq(100)), "[]")
	many100 = strings.ReplaceAll(many100, " ", ",")
	tests := map[string]struct {
		params string
		want   string
		is     error
	}{
		"at most 100 values, the rest counted": {params: params(`{"type":"ref/prompt","name":"many"}`, "n", ""), want: `{"completion":{"values":[` + many100 + `],"total":150,"hasMore":true}}`},
		"a total of the completer's kept":      {params: params(`{"type":"ref/prompt","name":"many"}`, "total", "101"), want: `{"completion":{"values":[` + many100 + `],"total":1000,"hasMore":true}}`},
		"no values":                            {params: params(`{"type":"ref/prompt","name":"many"}`, "n", "0"), want: `{"completion":{"values":[]}}`},
		"no completer: nothing to suggest":     {params: params(`{"type":"ref/prompt","name":"plain"}`, "a", "x"), want: `{"completion":{"values":[]}}`},
		"a nil completion":                     {params: params(`{"type":"ref/prompt","name":"odd"}`, "kind", "nil"), want: `{"completion":{"values":[]}}`},
		"context and hasMore":                  {params: `{"ref":{"type":"ref/prompt","name":"odd"},"argument":{"name":"kind","value":"context"},"context":{"arguments":{"a":"b"}}}`, want: `{"completion":{"values":["{\"a\":\"b\"}"],"hasMore":true}}`},
		"a template's variable":                {params: `{"ref":{"type":"ref/resource","uri":"repo://{owner}/{name}"},"argument":{"name":"name","value":"pl"},"context":{"arguments":{"owner":"me"}}}`, want: `{"completion":{"values":["name:pl:me"]}}`},
		"unknown prompt":                       {params: params(`{"type":"ref/prompt","name":"nope"}`, "a", ""), want: `complete: unknown prompt or resource template: no prompt "nope"`, is: pluginwire.ErrUnknownReference},
		"unknown template":                     {params: params(`{"type":"ref/resource","uri":"repo://{x}"}`, "x", ""), want: `complete: unknown prompt or resource template: no resource template "repo://{x}"`, is: pluginwire.ErrUnknownReference},
		"unknown argument":                     {params: params(`{"type":"ref/prompt","name":"plain"}`, "b", ""), want: `complete: invalid arguments: prompt "plain" has no argument "b"`, is: ErrInvalidArguments},
		"unknown variable":                     {params: params(`{"type":"ref/resource","uri":"repo://{owner}/{name}"}`, "id", ""), want: `complete: invalid arguments: resource template "repo://{owner}/{name}" has no argument "id"`, is: ErrInvalidArguments},
		"unknown ref type":                     {params: params(`{"type":"ref/tool","name":"x"}`, "a", ""), want: `complete: invalid arguments: ref type "ref/tool" is neither ref/prompt nor ref/resource`, is: ErrInvalidArguments},
		"no argument name":                     {params: `{"ref":{"type":"ref/prompt","name":"plain"}}`, want: `complete: invalid arguments: argument.name is missing`, is: ErrInvalidArguments},
		"params not an object":                 {params: `[]`, want: `complete: invalid arguments: the params are not a CompleteRequest's: []`, is: ErrInvalidArguments},
		"the completer refuses":                {params: params(`{"type":"ref/prompt","name":"odd"}`, "kind", "refuses"), want: `complete: invalid arguments: not that`, is: ErrInvalidArguments},
		"the completer fails":                  {params: params(`{"type":"ref/prompt","name":"odd"}`, "kind", "fails"), want: `complete: the plugin failed (Unknown): no idea`},
		"the completer panics":                 {params: params(`{"type":"ref/prompt","name":"odd"}`, "kind", "panics"), want: `complete: the plugin failed (Unknown): completion of prompt "odd" panicked: boom`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res, err := pluginhost.Of(p).Complete(t.Context(), json.RawMessage(tc.params))
			got := string(res)
			if err != nil {
				got = err.Error()
			}
			if got != tc.want || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Errorf("Complete = %s\nwant %s (errors.Is %v)", got, tc.want, tc.is)
			}
		})
	}
}

// seq returns "0" to n-1.
func seq(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint(i)
	}
	return out
}

func TestOffersFollowWhatIsRegistered(t *testing.T) {
	t.Parallel()
	noPrompt := func(context.Context, *PromptGet) (*PromptResult, error) { return &PromptResult{}, nil }
	complete := func(context.Context, *CompleteRequest) (*Completion, error) { return nil, nil }
	tests := map[string]struct {
		setup func(*Plugin)
		want  Offers
	}{
		"tools only": {func(p *Plugin) { p.AddTool(Tool{Name: "t"}, nopHandler) }, Offers{}},
		"a resource": {func(p *Plugin) { p.AddResource(Resource{URI: "x://a", Name: "a"}, readsAs("")) }, Offers{Resources: true, ResourceSubscriptions: true}},
		"a template": {func(p *Plugin) {
			p.AddResourceTemplate(ResourceTemplate{URITemplate: "x://{a}", Name: "a"}, readsAs(""))
		}, Offers{Resources: true, ResourceSubscriptions: true}},
		"a template's completer": {func(p *Plugin) {
			p.AddResourceTemplate(ResourceTemplate{URITemplate: "x://{a}", Name: "a", Complete: complete}, readsAs(""))
		}, Offers{Resources: true, ResourceSubscriptions: true, Completions: true}},
		"a prompt":               {func(p *Plugin) { p.AddPrompt(Prompt{Name: "p"}, noPrompt) }, Offers{Prompts: true}},
		"a prompt's completer":   {func(p *Plugin) { p.AddPrompt(Prompt{Name: "p", Complete: complete}, noPrompt) }, Offers{Prompts: true, Completions: true}},
		"declared, for later":    {func(p *Plugin) { p.Offer(Offers{Prompts: true}); p.Offer(Offers{Completions: true}) }, Offers{Prompts: true, Completions: true}},
		"subscriptions declared": {func(p *Plugin) { p.Offer(Offers{ResourceSubscriptions: true}) }, Offers{Resources: true, ResourceSubscriptions: true}},
		"removed is not offered": {func(p *Plugin) { p.AddPrompt(Prompt{Name: "p"}, noPrompt); p.RemovePrompt("p") }, Offers{}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := New("test", "0")
			tc.setup(p)
			if diff := cmp.Diff(tc.want, p.Offers()); diff != "" {
				t.Errorf("Offers (-want +got):\n%s", diff)
			}
		})
	}
}
