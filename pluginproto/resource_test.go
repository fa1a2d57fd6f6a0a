package pluginproto

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
	"github.com/plughost/plughost/internal/pluginhost"
)

func readsAs(text string) ResourceHandler {
	return func(context.Context, *ResourceRead) (*ResourceResult, error) { return TextContents("", text), nil }
}

func TestAddResourceEncodesMCPResource(t *testing.T) {
	t.Parallel()
	p := New("test", "0")
	p.AddResource(Resource{URI: "file:///a.txt", Name: "a"}, readsAs("a"))
	p.AddResource(Resource{
		URI: "db://rows/1", Name: "row", Title: "Row 1", Description: "The first row.", MIMEType: "application/json",
		Size:        new(int64(12)),
		Annotations: &ResourceAnnotations{Audience: []string{"assistant"}, Priority: new(0.5), LastModified: "2026-01-02T03:04:05Z"},
	}, readsAs("{}"))
	p.AddResourceTemplate(ResourceTemplate{URITemplate: "file:///{+path}", Name: "file", Description: "Any file.", MIMEType: "text/plain"}, readsAs(""))
	want := []string{
		`{"uri":"file:///a.txt","name":"a"}`,
		`{"uri":"db://rows/1","name":"row","title":"Row 1","description":"The first row.","mimeType":"application/json","size":12,` +
			`"annotations":{"audience":["assistant"],"priority":0.5,"lastModified":"2026-01-02T03:04:05Z"}}`,
	}
	if diff := cmp.Diff(want, jsonStrings(p.Resources())); diff != "" {
		t.Errorf("Resources (-want +got):\n%s", diff)
	}
	wantT := []string{`{"uriTemplate":"file:///{+path}","name":"file","description":"Any file.","mimeType":"text/plain"}`}
	if diff := cmp.Diff(wantT, jsonStrings(p.ResourceTemplates())); diff != "" {
		t.Errorf("ResourceTemplates (-want +got):\n%s", diff)
	}
	// Replacing keeps the place; removing tells nothing of the others.
	p.AddResource(Resource{URI: "file:///a.txt", Name: "a2"}, readsAs("a"))
	p.RemoveResource("db://rows/1")
	p.RemoveResource("db://none")
	p.RemoveResourceTemplate("file:///{+path}")
	if diff := cmp.Diff([]string{`{"uri":"file:///a.txt","name":"a2"}`}, jsonStrings(p.Resources())); diff != "" {
		t.Errorf("Resources after replace and remove (-want +got):\n%s", diff)
	}
	if n := len(p.ResourceTemplates()); n != 0 {
		t.Errorf("%d templates after RemoveResourceTemplate", n)
	}
}

func jsonStrings[T ~[]byte](items []T) []string {
	out := make([]string, len(items))
	for i, b := range items {
		out[i] = string(b)
	}
	return out
}

func TestAddResourcePanicsOnInvalidResource(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		add  func(*Plugin)
		want string
	}{
		"relative URI": {func(p *Plugin) { p.AddResource(Resource{URI: "a.txt", Name: "a"}, readsAs("")) }, `AddResource: URI "a.txt" is not an absolute URI`},
		"no name":      {func(p *Plugin) { p.AddResource(Resource{URI: "x://a"}, readsAs("")) }, `resource "x://a" has no name`},
		"nil handler":  {func(p *Plugin) { p.AddResource(Resource{URI: "x://a", Name: "a"}, nil) }, `resource "x://a" has a nil handler`},
		"NaN priority": {func(p *Plugin) {
			p.AddResource(Resource{URI: "x://a", Name: "a", Annotations: &ResourceAnnotations{Priority: new(nan())}}, readsAs(""))
		}, "unsupported value: NaN"},
		"bad template": {func(p *Plugin) {
			p.AddResourceTemplate(ResourceTemplate{URITemplate: "x://{a", Name: "a"}, readsAs(""))
		}, `AddResourceTemplate: "x://{a" is not a URI template`},
		"template no name":    {func(p *Plugin) { p.AddResourceTemplate(ResourceTemplate{URITemplate: "x://{a}"}, readsAs("")) }, `template "x://{a}" has no name`},
		"template no handler": {func(p *Plugin) { p.AddResourceTemplate(ResourceTemplate{URITemplate: "x://{a}", Name: "a"}, nil) }, `template "x://{a}" has a nil handler`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := New("test", "0")
			defer func() {
				msg, _ := recover().(string)
				if !strings.HasPrefix(msg, "pluginproto: ") || !strings.Contains(msg, tc.want) {
					t.Errorf("panicked with %q, want a message containing %q", msg, tc.want)
				}
				if o := p.Offers(); o.Resources {
					t.Error("an invalid resource was added")
				}
			}()
			tc.add(p)
		})
	}
}

func nan() float64 {
	zero := 0.0
	return zero / zero
}

func TestReadResource(t *testing.T) {
	t.Parallel()
	p := New("test", "0")
	p.Logger().SetLevel(hclog.Off)
	vars := func(_ context.Context, r *ResourceRead) (*ResourceResult, error) {
		var pairs []string
		for k, v := range r.Vars {
			pairs = append(pairs, k+"="+v)
		}
		slices.Sort(pairs)
		return TextContents("", strings.Join(pairs, " ")), nil
	}
	p.AddResource(Resource{URI: "file:///fixed.txt", Name: "fixed", MIMEType: "text/plain"}, readsAs("listed wins"))
	p.AddResourceTemplate(ResourceTemplate{URITemplate: "file:///{+path}", Name: "file", MIMEType: "text/x-any"}, vars)
	p.AddResourceTemplate(ResourceTemplate{URITemplate: "users://{id}/posts{?tag,lang}", Name: "posts"}, vars)
	p.AddResourceTemplate(ResourceTemplate{URITemplate: "odd://{kind}", Name: "odd"}, func(_ context.Context, r *ResourceRead) (*ResourceResult, error) {
		switch r.Vars["kind"] {
		case "many":
			return &ResourceResult{Contents: []ResourceContents{
				{URI: "odd://many/1", Text: "one"},
				{URI: "odd://many/2", MIMEType: "application/octet-stream", Blob: []byte{0, 1, 2}},
				{Blob: []byte{}},
			}}, nil
		case "both":
			return &ResourceResult{Contents: []ResourceContents{{Text: "t", Blob: []byte("b")}}}, nil
		case "nil":
			return nil, nil
		case "none":
			return nil, ErrUnknownResource
		case "fails":
			return nil, errors.New("disk on fire")
		case "panics":
			panic("boom")
		case "refuses":
			return nil, fmt.Errorf("%w: odd kind", ErrInvalidArguments)
		}
		return &ResourceResult{}, nil
	})
	tests := map[string]struct {
		uri  string
		want string // the result, or the error's text
		is   error
	}{
		"listed resource before templates":  {uri: "file:///fixed.txt", want: `{"contents":[{"uri":"file:///fixed.txt","mimeType":"text/plain","text":"listed wins"}]}`},
		"template with a reserved variable": {uri: "file:///a/b%20c.txt", want: `{"contents":[{"uri":"file:///a/b%20c.txt","mimeType":"text/x-any","text":"path=a/b c.txt"}]}`},
		"query variables":                   {uri: "users://42/posts?tag=go", want: `{"contents":[{"uri":"users://42/posts?tag=go","text":"id=42 tag=go"}]}`},
		"several contents, text and blob":   {uri: "odd://many", want: `{"contents":[{"uri":"odd://many/1","text":"one"},{"uri":"odd://many/2","mimeType":"application/octet-stream","blob":"AAEC"},{"uri":"odd://many","blob":""}]}`},
		"no contents":                       {uri: "odd://empty", want: `{"contents":[]}`},
		"unknown":                           {uri: "nothing://here", want: `read resource "nothing://here": unknown resource: no resource "nothing://here"`, is: ErrUnknownResource},
		"the handler's unknown":             {uri: "odd://none", want: `read resource "odd://none": unknown resource: unknown resource`, is: ErrUnknownResource},
		"the handler refuses":               {uri: "odd://refuses", want: `read resource "odd://refuses": invalid arguments: odd kind`, is: ErrInvalidArguments},
		"the handler fails":                 {uri: "odd://fails", want: `read resource "odd://fails": the plugin failed (Unknown): disk on fire`},
		"the handler panics":                {uri: "odd://panics", want: `read resource "odd://panics": the plugin failed (Unknown): resource odd://panics panicked: boom`},
		"text and blob":                     {uri: "odd://both", want: `read resource "odd://both": the plugin failed (Internal): resource "odd://both": the handler returned an invalid result: contents[0] has both Text and Blob`},
		"nil result":                        {uri: "odd://nil", want: `read resource "odd://nil": the plugin failed (Internal): resource "odd://nil": the handler returned neither a result nor an error`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res, err := pluginhost.Of(p).ReadResource(t.Context(), &pluginhost.ReadRequest{URI: tc.uri})
			got := string(res)
			if err != nil {
				got = err.Error()
			}
			if got != tc.want || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Errorf("ReadResource = %s\nwant %s (errors.Is %v)", got, tc.want, tc.is)
			}
		})
	}
}
