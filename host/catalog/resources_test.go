package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/plughost/plughost/host/tool"
)

// The interface the protocol layer consumes, beside tools.
var _ interface {
	ListResources(cursor string) ([]json.RawMessage, string, error)
	ListResourceTemplates(cursor string) ([]json.RawMessage, string, error)
	ListPrompts(cursor string) ([]json.RawMessage, string, error)
	ReadResource(ctx context.Context, r *tool.Read) (json.RawMessage, error)
	GetPrompt(ctx context.Context, g *tool.PromptGet) (json.RawMessage, error)
	Complete(ctx context.Context, params json.RawMessage) (json.RawMessage, error)
	SubscribeResource(ctx context.Context, uri string) (release func(), err error)
	OnResourceUpdated(fn func(uri string)) (cancel func())
} = (*Catalog)(nil)

// What the plugin manager reports through.
var _ interface{ ResourceUpdated(provider, uri string) } = (*Catalog)(nil)

// Definitions are checked when published; a bad one is skipped with a
// warning and listed by Skipped, the good ones beside it are served,
// compacted and otherwise as written.
func TestResourceDefinitions(t *testing.T) {
	t.Parallel()
	res := func(uri, js string) tool.Resource { return tool.Resource{URI: uri, JSON: json.RawMessage(js)} }
	tmpl := func(ut, js string) tool.Template { return tool.Template{URITemplate: ut, JSON: json.RawMessage(js)} }
	tests := map[string]struct {
		resource *tool.Resource
		template *tool.Template
		skip     Skip // Provider "p" implied; Reason is a part of the reason
	}{
		"resource not JSON":   {resource: ptr(res("a:x", `{"uri":`)), skip: Skip{Kind: KindResource, Name: "a:x", Reason: "resource definition is not valid JSON"}},
		"resource an array":   {resource: ptr(res("a:x", `["a:x"]`)), skip: Skip{Kind: KindResource, Name: "a:x", Reason: "resource definition is not a JSON object"}},
		"no uri":              {resource: ptr(res("a:x", `{"name":"x"}`)), skip: Skip{Kind: KindResource, Name: "a:x", Reason: `resource definition has no "uri"`}},
		"uri not a string":    {resource: ptr(res("", `{"uri":7,"name":"x"}`)), skip: Skip{Kind: KindResource, Name: "", Reason: `"uri" is not a string, got number`}},
		"relative uri":        {resource: ptr(res("", `{"uri":"notes/today","name":"x"}`)), skip: Skip{Kind: KindResource, Name: "notes/today", Reason: `"uri" "notes/today" is not an absolute URI: it has no scheme`}},
		"unparsable uri":      {resource: ptr(res("", `{"uri":"a://x/%zz","name":"x"}`)), skip: Skip{Kind: KindResource, Name: "a://x/%zz", Reason: `"uri" "a://x/%zz" is not a URI: invalid URL escape "%zz"`}},
		"control character":   {resource: ptr(res("", `{"uri":"a:x\ty","name":"x"}`)), skip: Skip{Kind: KindResource, Name: "a:x\ty", Reason: "is not a URI"}},
		"empty uri":           {resource: ptr(res("", `{"uri":"","name":"x"}`)), skip: Skip{Kind: KindResource, Name: "", Reason: `"uri" is empty`}},
		"uri differs":         {resource: ptr(res("a:x", `{"uri":"a:y","name":"x"}`)), skip: Skip{Kind: KindResource, Name: "a:x", Reason: `the definition's "uri" "a:y" is not the resource's URI "a:x"`}},
		"no name":             {resource: ptr(res("a:x", `{"uri":"a:x"}`)), skip: Skip{Kind: KindResource, Name: "a:x", Reason: `resource definition has no "name"`}},
		"name not a string":   {resource: ptr(res("a:x", `{"uri":"a:x","name":null}`)), skip: Skip{Kind: KindResource, Name: "a:x", Reason: `"name" is not a string, got null`}},
		"member twice":        {resource: ptr(res("a:x", `{"uri":"a:x","name":"x","name":"y"}`)), skip: Skip{Kind: KindResource, Name: "a:x", Reason: `resource definition has member "name" twice`}},
		"template not JSON":   {template: ptr(tmpl("a:{x}", `{`)), skip: Skip{Kind: KindTemplate, Name: "a:{x}", Reason: "resource template definition is not valid JSON"}},
		"no uriTemplate":      {template: ptr(tmpl("", `{"name":"t"}`)), skip: Skip{Kind: KindTemplate, Name: "", Reason: `resource template definition has no "uriTemplate"`}},
		"not RFC 6570":        {template: ptr(tmpl("", `{"uriTemplate":"a:{x","name":"t"}`)), skip: Skip{Kind: KindTemplate, Name: "a:{x", Reason: `"uriTemplate" "a:{x" is not an RFC 6570 URI template`}},
		"bad variable name":   {template: ptr(tmpl("a:{x y}", `{"uriTemplate":"a:{x y}","name":"t"}`)), skip: Skip{Kind: KindTemplate, Name: "a:{x y}", Reason: "is not an RFC 6570 URI template"}},
		"empty uriTemplate":   {template: ptr(tmpl("", `{"uriTemplate":"","name":"t"}`)), skip: Skip{Kind: KindTemplate, Name: "", Reason: `"uriTemplate" "" is empty`}},
		"uriTemplate differs": {template: ptr(tmpl("a:{x}", `{"uriTemplate":"b:{x}","name":"t"}`)), skip: Skip{Kind: KindTemplate, Name: "a:{x}", Reason: `the definition's "uriTemplate" "b:{x}" is not the template's "a:{x}"`}},
		"template no name":    {template: ptr(tmpl("a:{x}", `{"uriTemplate":"a:{x}"}`)), skip: Skip{Kind: KindTemplate, Name: "a:{x}", Reason: `resource template definition has no "name"`}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			p := newServer("p").with("good://r", "good://{t}")
			if tc.resource != nil {
				p.resources = append(p.resources, *tc.resource)
			}
			if tc.template != nil {
				p.templates = append(p.templates, *tc.template)
			}
			f.cat.Set(p)
			skipped := f.cat.Skipped()
			if len(skipped) != 1 {
				t.Fatalf("Skipped() = %+v, want one", skipped)
			}
			got := skipped[0]
			if got.Provider != "p" || got.Kind != tc.skip.Kind || got.Name != tc.skip.Name || !strings.Contains(got.Reason, tc.skip.Reason) {
				t.Errorf("Skipped() = %+v, want %+v with a reason containing %q", got, tc.skip, tc.skip.Reason)
			}
			if diff := cmp.Diff([]string{"good://r"}, listKeys(t, "uri", f.cat.ListResources)); diff != "" {
				t.Errorf("resources (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"good://{t}"}, listKeys(t, "uriTemplate", f.cat.ListResourceTemplates)); diff != "" {
				t.Errorf("templates (-want +got):\n%s", diff)
			}
			if log := f.log.String(); !strings.Contains(log, "skipping "+string(tc.skip.Kind)) || !strings.Contains(log, "provider=p") {
				t.Errorf("no warning naming the kind and provider:\n%s", log)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// A provider offering a URI or URI template twice keeps the first.
func TestResourceDuplicates(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	p := newServer("p").with("a://x", "a://{x}")
	p.resources = append(p.resources, tool.Resource{URI: "a://x", JSON: json.RawMessage(`{"uri":"a://x","name":"second"}`)})
	p.templates = append(p.templates, tool.Template{URITemplate: "a://{x}", JSON: json.RawMessage(`{"uriTemplate":"a://{x}","name":"second"}`)})
	f.cat.Set(p)
	want := []Skip{
		{"p", KindResource, "a://x", "the provider offers this URI more than once; keeping the first"},
		{"p", KindTemplate, "a://{x}", "the provider offers this URI template more than once; keeping the first"},
	}
	if diff := cmp.Diff(want, f.cat.Skipped()); diff != "" {
		t.Errorf("Skipped (-want +got):\n%s", diff)
	}
	if got := f.cat.Resources(); len(got) != 1 || got[0].Name != "r" {
		t.Errorf("Resources() = %+v, want the first definition", got)
	}
}

// Served JSON is the provider's, compacted: member order and unknown
// fields survive, nothing is renamed.
func TestResourceJSON(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	p := newServer("p")
	p.resources = []tool.Resource{{URI: "a://x", JSON: json.RawMessage(`{ "x-future": [1, 2], "name": "n", "uri": "a://x", "_meta": {"k": "v"} }`)}}
	p.templates = []tool.Template{{JSON: json.RawMessage(`{"name":"t", "uriTemplate":"a://{x}", "mimeType":"text/plain"}`)}} // URITemplate taken from the JSON
	f.cat.Set(p)
	f.cat.Set(newServer("q").with("a://x")) // a clash: p still owns it
	page, _, err := f.cat.ListResources("")
	if err != nil || len(page) != 1 {
		t.Fatalf("ListResources: %d items, %v", len(page), err)
	}
	if got, want := string(page[0]), `{"x-future":[1,2],"name":"n","uri":"a://x","_meta":{"k":"v"}}`; got != want {
		t.Errorf("resource JSON\n got %s\nwant %s", got, want)
	}
	page, _, err = f.cat.ListResourceTemplates("")
	if err != nil || len(page) != 1 {
		t.Fatalf("ListResourceTemplates: %d items, %v", len(page), err)
	}
	if got, want := string(page[0]), `{"name":"t","uriTemplate":"a://{x}","mimeType":"text/plain"}`; got != want {
		t.Errorf("template JSON\n got %s\nwant %s", got, want)
	}
}

// A provider that does not offer resources is not asked for them; one
// that is not a tool.Server has none.
func TestOffersRespected(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	p := &panicky{newServer("p").with("a://x", "a://{x}", "greet")}
	p.offers = tool.Offers{Completions: true}
	f.cat.Set(p)
	f.cat.Set(newProvider("plain", "x"))
	if r, tp, pr := f.cat.Resources(), f.cat.Templates(), f.cat.Prompts(); len(r)+len(tp)+len(pr) != 0 {
		t.Errorf("served %v %v %v from providers that offer none", r, tp, pr)
	}
	if _, err := f.cat.ReadResource(context.Background(), &tool.Read{URI: "a://x"}); !errors.Is(err, tool.ErrUnknownResource) {
		t.Errorf("ReadResource: %v, want ErrUnknownResource", err)
	}
}

// panicky is a fakeServer whose lists must not be read.
type panicky struct{ *fakeServer }

func (panicky) Resources() []tool.Resource { panic("Resources called") }
func (panicky) Templates() []tool.Template { panic("Templates called") }
func (panicky) Prompts() []tool.Prompt     { panic("Prompts called") }

// Two providers offering one URI: the one whose name sorts first serves
// it, whatever the order of Set; the other's is hidden, listed by Skipped
// naming the owner, and a warning is logged once per change of the clash.
func TestResourceClash(t *testing.T) {
	t.Parallel()
	for _, order := range [][]string{{"a", "b"}, {"b", "a"}} {
		t.Run(strings.Join(order, ","), func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			servers := map[string]*fakeServer{
				"a": newServer("a").with("file:///shared", "file:///only-a"),
				"b": newServer("b").with("file:///shared", "file:///only-b"),
			}
			for _, name := range order {
				f.cat.Set(servers[name])
			}
			want := []ResourceEntry{
				{Provider: "a", URI: "file:///only-a", Name: "r", Description: "about file:///only-a"},
				{Provider: "b", URI: "file:///only-b", Name: "r", Description: "about file:///only-b"},
				{Provider: "a", URI: "file:///shared", Name: "r", Description: "about file:///shared"},
			}
			if diff := cmp.Diff(want, f.cat.Resources()); diff != "" {
				t.Errorf("Resources (-want +got):\n%s", diff)
			}
			wantSkip := []Skip{{"b", KindResource, "file:///shared", `provider "a" offers the same URI and serves it (of the providers offering one URI, the one whose name sorts first)`}}
			if diff := cmp.Diff(wantSkip, f.cat.Skipped()); diff != "" {
				t.Errorf("Skipped (-want +got):\n%s", diff)
			}
			readBy(t, f.cat, "file:///shared", "a")
			readBy(t, f.cat, "file:///only-b", "b")

			f.cat.Set(newProvider("c", "x"))
			f.cat.Set(servers["b"])
			log := f.log.String()
			if n := strings.Count(log, "resource URI clash"); n != 1 {
				t.Errorf("the clash was logged %d times, want once:\n%s", n, log)
			}
			if !strings.Contains(log, `uri=file:///shared providers=["a", "b"] owner=a`) {
				t.Errorf("the clash warning does not name the URI, providers and owner:\n%s", log)
			}

			f.cat.Remove("a")
			readBy(t, f.cat, "file:///shared", "b")
			if s := f.cat.Skipped(); len(s) != 0 {
				t.Errorf("Skipped after the clash = %+v", s)
			}
			if !strings.Contains(f.log.String(), "resource URI clash resolved") {
				t.Errorf("no note that the clash was resolved:\n%s", f.log)
			}
		})
	}
}

// readBy reads uri and checks which provider answered.
func readBy(t *testing.T, c *Catalog, uri, provider string) {
	t.Helper()
	res, err := c.ReadResource(context.Background(), &tool.Read{URI: uri})
	if err != nil {
		t.Fatalf("ReadResource(%q): %v", uri, err)
	}
	var r struct{ Contents []struct{ URI, Text string } }
	if err := json.Unmarshal(res, &r); err != nil || len(r.Contents) != 1 {
		t.Fatalf("ReadResource(%q) = %s, %v", uri, res, err)
	}
	if r.Contents[0].Text != provider || r.Contents[0].URI != uri {
		t.Errorf("ReadResource(%q) answered by %q for %q, want %q", uri, r.Contents[0].Text, r.Contents[0].URI, provider)
	}
}

// A read goes to the resource of its exact URI, else to the first
// template that matches, by provider name, then the provider's order.
func TestTemplateRouting(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.cat.Set(newServer("b").with("file:///{name}", "file:///{+path}", "docs://{id}/page"))
	f.cat.Set(newServer("a").with("file:///exact/x", "docs://{id}/page", "mail://{box}{?q}"))
	f.cat.Set(newServer("c").with("file:///exact/x", "file:///{+path}"))
	tests := map[string]string{ // URI → the provider that serves it, "" for none
		"file:///exact/x":       "a", // an exact resource beats every template; a sorts before c
		"file:///notes":         "b", // b's first template
		"file:///notes/today":   "b", // b's second; c's same template comes after b
		"docs://42/page":        "a", // both a and b; a sorts first
		"mail://inbox?q=urgent": "a",
		"mail://inbox":          "a",
		"docs://42/other":       "",
		"gopher://x":            "",
		"":                      "",
	}
	for uri, want := range tests {
		if want == "" {
			_, err := f.cat.ReadResource(context.Background(), &tool.Read{URI: uri})
			if !errors.Is(err, tool.ErrUnknownResource) || !strings.Contains(err.Error(), `"`+uri+`"`) {
				t.Errorf("ReadResource(%q) = %v, want ErrUnknownResource naming the URI", uri, err)
			}
			continue
		}
		readBy(t, f.cat, uri, want)
	}
	// Overlaps between providers are logged once per pair of templates,
	// naming the winner.
	readBy(t, f.cat, "docs://7/page", "a")
	readBy(t, f.cat, "file:///a/b", "b")
	log := f.log.String()
	for _, line := range []string{
		"served_by=a template=docs://{id}/page also_matched_by=b other_template=docs://{id}/page",
		`served_by=b template=file:///{name} also_matched_by=c other_template="file:///{+path}"`,
		`served_by=b template="file:///{+path}" also_matched_by=c other_template="file:///{+path}"`,
	} {
		if n := strings.Count(log, line); n != 1 {
			t.Errorf("overlap %q logged %d times, want once:\n%s", line, n, log)
		}
	}
	if strings.Contains(log, `also_matched_by=b other_template="file:///{+path}"`) {
		t.Errorf("an overlap of one provider's own templates was logged:\n%s", log)
	}
	// When a template goes, its pairs are forgotten, and logged again
	// should it come back.
	f.cat.Remove("c")
	f.cat.Set(newServer("c").with("file:///exact/x", "file:///{+path}"))
	readBy(t, f.cat, "file:///notes", "b")
	if n := strings.Count(f.log.String(), `template=file:///{name} also_matched_by=c other_template="file:///{+path}"`); n != 2 {
		t.Errorf("after c came back, its overlap with b's first template was logged %d times in all, want 2", n)
	}
}

// Lists are sorted (resources by URI, templates by URI template, then
// provider), paged by Options.PageSize, and each list's cursors are its
// own.
func TestResourcePagination(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &Options{PageSize: 2})
	f.cat.Set(newServer("b").with("z://1", "a://2", "m://3", "a://{x}", "m://{x}"))
	f.cat.Set(newServer("a").with("c://4", "m://{x}", "b://{x}"))
	if diff := cmp.Diff([]string{"a://2", "c://4", "m://3", "z://1"}, listKeys(t, "uri", f.cat.ListResources)); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a://{x}", "b://{x}", "m://{x}", "m://{x}"}, listKeys(t, "uriTemplate", f.cat.ListResourceTemplates)); diff != "" {
		t.Errorf("templates (-want +got):\n%s", diff)
	}
	wantT := []TemplateEntry{
		{Provider: "b", URITemplate: "a://{x}", Name: "t"},
		{Provider: "a", URITemplate: "b://{x}", Name: "t"},
		{Provider: "a", URITemplate: "m://{x}", Name: "t"},
		{Provider: "b", URITemplate: "m://{x}", Name: "t"},
	}
	if diff := cmp.Diff(wantT, f.cat.Templates()); diff != "" {
		t.Errorf("Templates (-want +got):\n%s", diff)
	}

	// A page's cursor survives a change: the next page starts after it.
	page, next, err := f.cat.ListResourceTemplates("")
	if err != nil || len(page) != 2 || next == "" {
		t.Fatalf("first page: %d items, next %q, %v", len(page), next, err)
	}
	f.cat.Remove("a")
	rest, next2, err := f.cat.ListResourceTemplates(next)
	if err != nil || next2 != "" || len(rest) != 1 || !strings.Contains(string(rest[0]), "m://{x}") {
		t.Errorf("after a change: %s, next %q, %v; want b's m://{x} alone", rest, next2, err)
	}

	// Cursors of one list are refused by the others.
	_, toolCursor, _ := func() ([]json.RawMessage, string, error) {
		f.cat.Set(newProvider("t", "x", "y", "z"))
		return f.cat.ListTools("")
	}()
	_, resCursor, _ := f.cat.ListResources("")
	for name, call := range map[string]func() error{
		"a tools cursor for resources":     func() error { _, _, err := f.cat.ListResources(toolCursor); return err },
		"a resources cursor for templates": func() error { _, _, err := f.cat.ListResourceTemplates(resCursor); return err },
		"a resources cursor for prompts":   func() error { _, _, err := f.cat.ListPrompts(resCursor); return err },
		"a resources cursor for tools":     func() error { _, _, err := f.cat.ListTools(resCursor); return err },
		"garbage for resources":            func() error { _, _, err := f.cat.ListResources("!!"); return err },
	} {
		if err := call(); !errors.Is(err, tool.ErrInvalidCursor) {
			t.Errorf("%s: %v, want ErrInvalidCursor", name, err)
		}
	}
}

// A provider's errors: typed ones (an InputRequired among them) pass as
// they are, others are wrapped naming resource and provider.
func TestReadResourceErrors(t *testing.T) {
	t.Parallel()
	errDisk := errors.New("disk on fire")
	gone := tool.Errorf(tool.ErrGone, "plugin p exited")
	input := &tool.InputRequired{Requests: json.RawMessage(`{"k":{"method":"roots/list"}}`), State: "s1"}
	tests := map[string]struct {
		err  error
		want func(t *testing.T, err error)
	}{
		"untyped": {errDisk, func(t *testing.T, err error) {
			if !errors.Is(err, errDisk) || err.Error() != `resource "file:///x" of provider "p": disk on fire` {
				t.Errorf("error %q, want errDisk naming resource and provider", err)
			}
		}},
		"typed": {gone, func(t *testing.T, err error) {
			if err != gone {
				t.Errorf("error %v, want the provider's as it is", err)
			}
		}},
		"input required": {input, func(t *testing.T, err error) {
			var ir *tool.InputRequired
			if !errors.As(err, &ir) || string(ir.Requests) != string(input.Requests) || ir.State != "s1" || ir.Provider != "p" {
				t.Errorf("error %v, want the provider's InputRequired naming it", err)
			}
		}},
		"the provider has no such resource": {tool.ErrUnknownResource, func(t *testing.T, err error) {
			if !errors.Is(err, tool.ErrUnknownResource) || !strings.Contains(err.Error(), `provider "p"`) {
				t.Errorf("error %v, want ErrUnknownResource naming the provider", err)
			}
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			p := newServer("p").with("file:///{x}")
			p.read = func(context.Context, *tool.Read) (json.RawMessage, error) { return nil, tc.err }
			f.cat.Set(p)
			_, err := f.cat.ReadResource(context.Background(), &tool.Read{URI: "file:///x"})
			tc.want(t, err)
		})
	}
}

// The read reaches the provider as the client sent it.
func TestReadResourcePassesThrough(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	var got tool.Read
	p := newServer("p").with("file:///x")
	p.read = func(_ context.Context, r *tool.Read) (json.RawMessage, error) {
		got = *r
		return json.RawMessage(`{"contents":[]}`), nil
	}
	f.cat.Set(p)
	in := &tool.Read{URI: "file:///x", ClientCapabilities: json.RawMessage(`{"roots":{}}`), Input: &tool.Input{State: "s", Provider: "p"}}
	res, err := f.cat.ReadResource(context.Background(), in)
	if err != nil || string(res) != `{"contents":[]}` {
		t.Fatalf("ReadResource = %s, %v", res, err)
	}
	if diff := cmp.Diff(*in, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("the provider got (-sent +got):\n%s", diff)
	}
	if _, err := f.cat.ReadResource(context.Background(), nil); err == nil {
		t.Error("ReadResource(nil) succeeded")
	}
}

// The provider read is published again while it answers (a plugin's
// lists changed): contents of its own other resources are still its own.
func TestReadResourceContentsAcrossRepublish(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	p := newServer("p").with("file:///x", "file:///x2", "dir://{name}")
	p.read = func(context.Context, *tool.Read) (json.RawMessage, error) {
		f.cat.Set(p.publish("file:///x", "file:///x2", "file:///new", "dir://{name}"))
		return json.RawMessage(`{"contents":[{"uri":"file:///x"},{"uri":"file:///x2"},{"uri":"dir://a"}]}`), nil
	}
	f.cat.Set(p)
	if _, err := f.cat.ReadResource(context.Background(), &tool.Read{URI: "file:///x"}); err != nil {
		t.Errorf("ReadResource: %v", err)
	}
}

func TestReadResourceChecksContents(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		result, wantErr string
	}{
		"own and unlisted URIs": {result: `{"contents":[{"uri":"file:///x","text":"a"},{"uri":"file:///x/child","text":"b"}]}`},
		"another's URI":         {result: `{"contents":[{"uri":"file:///y","text":"stolen"}]}`, wantErr: `contents of "file:///y", which provider "q" serves`},
		"a URI another's template serves": {result: `{"contents":[{"uri":"file:///x","text":"a"},{"uri":"tmpl://1","text":"stolen"}]}`,
			wantErr: `contents of "tmpl://1", which provider "q" serves`},
		"own URIs another's template matches too": {result: `{"contents":[{"uri":"tmpl://own","text":"a"},{"uri":"mine://1","text":"b"}]}`},
		"no contents":          {result: `{"text":"a"}`, wantErr: `not a ReadResourceResult`},
		"contents not objects": {result: `{"contents":["a"]}`, wantErr: `not a ReadResourceResult`},
		"contents without uri": {result: `{"contents":[{"text":"a"}]}`, wantErr: `contents 0 has no "uri"`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			// p lists tmpl://own, which q's template matches too (the
			// listed resource wins); mine://{x} is p's, though r's
			// template matches it too (p sorts first). q's and r's
			// templates overlap at tmpl://1.
			p := newServer("p").with("file:///x", "tmpl://own", "mine://{x}")
			p.read = func(context.Context, *tool.Read) (json.RawMessage, error) { return json.RawMessage(tc.result), nil }
			f.cat.Set(p)
			f.cat.Set(newServer("q").with("file:///y", "tmpl://{id}"))
			f.cat.Set(newServer("r").with("tmpl://{any}", "mine://{y}"))
			res, err := f.cat.ReadResource(context.Background(), &tool.Read{URI: "file:///x"})
			switch {
			case tc.wantErr == "" && (err != nil || string(res) != tc.result):
				t.Errorf("ReadResource = %s, %v; want the provider's result", res, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("ReadResource = %s, %v; want an error containing %q", res, err, tc.wantErr)
			}
			if log := f.log.String(); strings.Contains(log, "match the same URI") {
				t.Errorf("checking the contents logged a template overlap:\n%s", log)
			}
		})
	}
}
