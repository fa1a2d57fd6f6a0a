package catalog

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/host/tool"
)

// The interface the protocol layer consumes.
var _ interface {
	ListTools(cursor string) (tools []json.RawMessage, nextCursor string, err error)
	CallTool(ctx context.Context, call *tool.Call) (json.RawMessage, error)
	Subscribe(fn func(tool.Change)) (cancel func())
} = (*Catalog)(nil)

// The interface the plugin manager publishes through.
var _ interface {
	Set(p tool.Provider)
	Remove(name string)
} = (*Catalog)(nil)

func TestToolJSON(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		provider string // second provider offering the same tool, to force a rename
		in       string
		want     string
	}{
		"unchanged but compacted": {
			in:   `{ "name": "t", "description": "d", "inputSchema": {"type": "object"} }`,
			want: `{"name":"t","description":"d","inputSchema":{"type":"object"}}`,
		},
		"unknown fields and member order survive a rename": {
			provider: "z",
			in:       `{"x-future":{"a":[1,2]},"inputSchema":{"type":"object"},"name":"t","_meta":{"k":"v"},"title":"T"}`,
			want:     `{"x-future":{"a":[1,2]},"inputSchema":{"type":"object"},"name":"p__t","_meta":{"k":"v"},"title":"T"}`,
		},
		"a missing name is added": {
			in:   `{"inputSchema":{"type":"object"}}`,
			want: `{"name":"t","inputSchema":{"type":"object"}}`,
		},
		"nested names are not touched": {
			provider: "z",
			in:       `{"name":"t","inputSchema":{"type":"object","properties":{"name":{"type":"string"}}},"annotations":{"name":"keep"}}`,
			want:     `{"name":"p__t","inputSchema":{"type":"object","properties":{"name":{"type":"string"}}},"annotations":{"name":"keep"}}`,
		},
		"escapes in other members are kept": {
			in:   `{"name":"t","description":"a \"quoted\" \u00e9 <b>","inputSchema":{"type":"object"}}`,
			want: `{"name":"t","description":"a \"quoted\" \u00e9 <b>","inputSchema":{"type":"object"}}`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			ps := []tool.Provider{&fakeProvider{name: "p", tools: []tool.Def{{Name: "t", JSON: json.RawMessage(tc.in)}}}}
			if tc.provider != "" {
				ps = append(ps, newProvider(tc.provider, "t")) // published together, both are prefixed
			}
			f.cat.SetAll(ps...)
			page, _, err := f.cat.ListTools("")
			if err != nil {
				t.Fatal(err)
			}
			if got := string(page[0]); got != tc.want {
				t.Errorf("tool JSON\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestBadDefinitions(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		json   string
		reason string // a part of the Skip's reason
	}{
		"not JSON":                {`{"name":`, "tool definition is not valid JSON"},
		"not an object":           {`["t"]`, "tool definition is not a JSON object"},
		"no inputSchema":          {`{"name":"t"}`, `tool definition has no "inputSchema"`},
		"inputSchema not object":  {`{"name":"t","inputSchema":true}`, `"inputSchema" is not a JSON object`},
		"duplicate member":        {`{"name":"t","name":"u","inputSchema":{}}`, `tool definition has member "name" twice`},
		"schema breaks the draft": {`{"name":"t","inputSchema":{"type":5}}`, "inputSchema does not compile"},
		"bad regexp":              {`{"name":"t","inputSchema":{"properties":{"a":{"pattern":"(?=x)"}}}}`, "inputSchema does not compile"},
		"remote reference":        {`{"name":"t","inputSchema":{"$ref":"https://example.com/s.json"}}`, "references to other documents are not allowed (https://example.com/s.json)"},
		"file reference":          {`{"name":"t","inputSchema":{"$ref":"file:///etc/passwd"}}`, "references to other documents are not allowed (file:///etc/passwd)"},
		"relative reference":      {`{"name":"t","inputSchema":{"$ref":"other.json"}}`, "references to other documents are not allowed"},
		"custom meta-schema":      {`{"name":"t","inputSchema":{"$schema":"https://example.com/meta"}}`, "references to other documents are not allowed (https://example.com/meta)"},
		"outputSchema not object": {`{"name":"t","inputSchema":{},"outputSchema":"object"}`, `"outputSchema" is not a JSON object`},
		"outputSchema null":       {`{"name":"t","inputSchema":{},"outputSchema":null}`, `"outputSchema" is not a JSON object`},
		"outputSchema breaks":     {`{"name":"t","inputSchema":{},"outputSchema":{"type":"integr"}}`, "outputSchema does not compile"},
		"outputSchema remote ref": {`{"name":"t","inputSchema":{},"outputSchema":{"$ref":"https://example.com/o.json"}}`, "references to other documents are not allowed (https://example.com/o.json)"},
		"execution not object":    {`{"name":"t","inputSchema":{},"execution":"async"}`, `"execution" is not a JSON object`},
		"taskSupport unknown":     {`{"name":"t","inputSchema":{},"execution":{"taskSupport":"sometimes"}}`, `"execution.taskSupport" is "sometimes"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			f.cat.Set(&fakeProvider{name: "p", tools: []tool.Def{{Name: "t", JSON: json.RawMessage(tc.json)}, toolDef("good", objectSchema)}})
			skipped := f.cat.Skipped()
			if len(skipped) != 1 || skipped[0].Provider != "p" || skipped[0].Name != "t" || !strings.Contains(skipped[0].Reason, tc.reason) {
				t.Fatalf("Skipped() = %+v, want p/t with a reason containing %q", skipped, tc.reason)
			}
			if got := allNames(t, f.cat); !cmp.Equal(got, []string{"good"}) {
				t.Errorf("exposed %v, want only the good tool", got)
			}
			if log := f.log.String(); !strings.Contains(log, "skipping tool") || !strings.Contains(log, "provider=p tool=t") {
				t.Errorf("no warning naming provider and tool:\n%s", log)
			}
		})
	}
}

func TestPagination(t *testing.T) {
	t.Parallel()
	tools := func(prefix string, n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("%s%03d", prefix, i))
		}
		return out
	}
	tests := map[string]struct {
		pageSize int
		tools    []string
		change   func(c *Catalog) // between the first and the second page
		want     []string         // every name seen, in order
		pages    int
	}{
		"one short page": {
			pageSize: 10, tools: tools("t", 3), want: tools("t", 3), pages: 1,
		},
		"exactly one page": {
			pageSize: 10, tools: tools("t", 10), want: tools("t", 10), pages: 1,
		},
		"several pages": {
			pageSize: 100, tools: tools("t", 250), want: tools("t", 250), pages: 3,
		},
		"empty": {
			pageSize: 10, want: nil, pages: 1,
		},
		"default page size": {
			tools: tools("t", 150), want: tools("t", 150), pages: 2,
		},
		"tools added before and after the cursor": {
			pageSize: 5, tools: tools("m", 10),
			change: func(c *Catalog) { c.Set(newProvider("q", "a_before", "z_after")) },
			want:   append(tools("m", 10), "z_after"), pages: 3,
		},
		"the tool at the cursor is removed": {
			pageSize: 5, tools: tools("m", 10),
			change: func(c *Catalog) {
				c.Set(&fakeProvider{name: "p", tools: []tool.Def{
					toolDef("m000", objectSchema), toolDef("m001", objectSchema), toolDef("m002", objectSchema), toolDef("m003", objectSchema),
					toolDef("m006", objectSchema), toolDef("m007", objectSchema), toolDef("m008", objectSchema), toolDef("m009", objectSchema),
				}})
			},
			want: append(tools("m", 5), "m006", "m007", "m008", "m009"), pages: 2,
		},
		"everything removed": {
			pageSize: 5, tools: tools("m", 10),
			change: func(c *Catalog) { c.Remove("p") },
			want:   tools("m", 5), pages: 2,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, &Options{PageSize: tc.pageSize})
			if len(tc.tools) > 0 {
				f.cat.Set(newProvider("p", tc.tools...))
			}
			var got []string
			cursor, pages := "", 0
			for {
				page, next, err := f.cat.ListTools(cursor)
				if err != nil {
					t.Fatalf("page %d: %v", pages, err)
				}
				if page == nil {
					t.Fatalf("page %d is nil, want an empty slice", pages)
				}
				pages++
				size := tc.pageSize
				if size == 0 {
					size = DefaultPageSize
				}
				if len(page) > size {
					t.Errorf("page %d has %d tools, more than %d", pages, len(page), size)
				}
				for _, raw := range page {
					got = append(got, nameOf(t, raw))
				}
				if pages == 1 && tc.change != nil {
					tc.change(f.cat)
				}
				if next == "" {
					break
				}
				cursor = next
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("names (-want +got):\n%s", diff)
			}
			if pages != tc.pages {
				t.Errorf("got %d pages, want %d", pages, tc.pages)
			}
		})
	}
}

func TestInvalidCursor(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &Options{PageSize: 1})
	f.cat.Set(newProvider("p", "a", "b"))
	_, next, err := f.cat.ListTools("")
	if err != nil || next == "" {
		t.Fatalf("first page: next %q, err %v", next, err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	for name, cursor := range map[string]string{
		"not base64":          "!!!",
		"padded base64":       base64.URLEncoding.EncodeToString([]byte("after:a")),
		"no prefix":           b64([]byte("a")),
		"not a name":          b64([]byte("after:a b")),
		"empty name":          b64([]byte("after:")),
		"a cursor, truncated": next[:len(next)-1],
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			page, next, err := f.cat.ListTools(cursor)
			if !errors.Is(err, tool.ErrInvalidCursor) {
				t.Errorf("ListTools(%q) error = %v, want one wrapping tool.ErrInvalidCursor", cursor, err)
			}
			if page != nil || next != "" {
				t.Errorf("got a page (%d tools, next %q) with the error", len(page), next)
			}
		})
	}
}

func TestUnknownTool(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.cat.SetAll(newProvider("a", "x", "files.read"), newProvider("b", "x"))
	for _, name := range []string{"nope", "x", "files.read", "", "a__files_read"} {
		_, err := f.cat.CallTool(context.Background(), &tool.Call{Name: name, Arguments: json.RawMessage(`{}`)})
		if !errors.Is(err, tool.ErrUnknownTool) {
			t.Errorf("CallTool(%q) error = %v, want one wrapping tool.ErrUnknownTool", name, err)
		} else if !strings.Contains(err.Error(), fmt.Sprintf("%q", name)) {
			t.Errorf("error %q does not name the tool", err)
		}
	}
	if _, err := f.cat.CallTool(context.Background(), nil); err == nil {
		t.Error("CallTool(nil) succeeded")
	}
}

func TestRouting(t *testing.T) {
	t.Parallel()
	errDead := errors.New("plugin died")
	a := newProvider("a", "x", "files.read")
	b := newProvider("b", "x")
	b.call = func(ctx context.Context, c *tool.Call) (json.RawMessage, error) {
		c.Progress(tool.Progress{Progress: 1, Total: 2})
		c.Log(tool.Log{Level: "info", Data: json.RawMessage(`"hi"`)})
		if string(c.Arguments) == `{"die":true}` {
			return nil, errDead
		}
		return tool.TextResult("b did it"), nil
	}
	f := newFixture(t, nil)
	f.cat.SetAll(a, b)

	var progress []tool.Progress
	var logs []string
	call := &tool.Call{
		Name:      "b__x",
		Arguments: json.RawMessage(`{ "k" : [1, 2] }`),
		Progress:  func(p tool.Progress) { progress = append(progress, p) },
		Log:       func(l tool.Log) { logs = append(logs, string(l.Data)) },
	}
	res, err := f.cat.CallTool(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	if string(res) != string(tool.TextResult("b did it")) {
		t.Errorf("result %s", res)
	}
	got := b.received()
	if len(got) != 1 || got[0].Name != "x" || string(got[0].Arguments) != `{ "k" : [1, 2] }` {
		t.Errorf("b received %+v, want name x and the arguments byte for byte", got)
	}
	if call.Name != "b__x" {
		t.Errorf("the caller's Call was modified: Name = %q", call.Name)
	}
	if diff := cmp.Diff([]tool.Progress{{Progress: 1, Total: 2}}, progress); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{`"hi"`}, logs); diff != "" {
		t.Errorf("logs (-want +got):\n%s", diff)
	}
	if n := len(a.received()); n != 0 {
		t.Errorf("a received %d calls", n)
	}

	// A sanitized name routes to the provider's own name.
	if _, err := f.cat.CallTool(context.Background(), &tool.Call{Name: "files_read", Arguments: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if got := a.received(); len(got) != 1 || got[0].Name != "files.read" {
		t.Errorf("a received %+v, want files.read", got)
	}

	// Empty arguments reach the provider as {}.
	if _, err := f.cat.CallTool(context.Background(), &tool.Call{Name: "a__x"}); err != nil {
		t.Fatal(err)
	}
	if got := a.received(); len(got) != 2 || got[1].Name != "x" || string(got[1].Arguments) != `{}` {
		t.Errorf("a received %+v, want x with {}", got)
	}

	// A provider's error comes back wrapped, naming tool and provider.
	_, err = f.cat.CallTool(context.Background(), &tool.Call{Name: "b__x", Arguments: json.RawMessage(`{"die":true}`), Progress: func(tool.Progress) {}, Log: func(tool.Log) {}})
	if !errors.Is(err, errDead) || !strings.Contains(err.Error(), `tool "x" of provider "b"`) {
		t.Errorf("error = %v, want errDead naming the tool and provider", err)
	}
}

// Absent arguments (nil, blank, null) reach the provider as {}; a
// provider's typed error (a *tool.CapabilityRequired too) comes back as it
// is, its text unchanged.
func TestCallDefaultsAndTypedErrors(t *testing.T) {
	t.Parallel()
	gone := tool.Errorf(tool.ErrGone, "plugin p exited")
	needs := &tool.CapabilityRequired{Capabilities: json.RawMessage(`{"sampling":{}}`), Message: "tool needs sampling"}
	p := newProvider("p", "x", "fail", "needs")
	p.call = func(_ context.Context, c *tool.Call) (json.RawMessage, error) {
		switch c.Name {
		case "fail":
			return nil, gone
		case "needs":
			return nil, needs
		}
		return tool.TextResult(string(c.Arguments)), nil
	}
	f := newFixture(t, nil)
	f.cat.Set(p)
	for name, args := range map[string]json.RawMessage{"nil": nil, "blank": json.RawMessage(" \n"), "null": json.RawMessage("null"), "object": json.RawMessage(`{"a":1}`)} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res, err := f.cat.CallTool(context.Background(), &tool.Call{Name: "x", Arguments: args})
			if err != nil {
				t.Fatal(err)
			}
			want := "{}"
			if name == "object" {
				want = string(args)
			}
			if diff := cmp.Diff(string(tool.TextResult(want)), string(res)); diff != "" {
				t.Errorf("the provider got other arguments (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("typed error", func(t *testing.T) {
		t.Parallel()
		_, err := f.cat.CallTool(context.Background(), &tool.Call{Name: "fail"})
		if err != gone {
			t.Errorf("error = %v, want the provider's typed error as it is", err)
		}
	})
	t.Run("capability required", func(t *testing.T) {
		t.Parallel()
		_, err := f.cat.CallTool(context.Background(), &tool.Call{Name: "needs"})
		if err != needs {
			t.Errorf("error = %v, want the provider's *tool.CapabilityRequired as it is", err)
		}
		done := make(chan error, 1)
		f.cat.StartCall(context.Background(), &tool.Call{Name: "needs"}, func(_ json.RawMessage, err error) { done <- err })
		if err := <-done; err != needs {
			t.Errorf("StartCall: error = %v, want the provider's *tool.CapabilityRequired as it is", err)
		}
	})
}

// A call that never returns holds no lock: listing, Set, Remove and other
// calls proceed.
func TestCallHoldsNoLock(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{})
	release := make(chan struct{})
	slow := newProvider("slow", "wait")
	slow.call = func(ctx context.Context, c *tool.Call) (json.RawMessage, error) {
		close(entered)
		<-release
		return tool.TextResult("done"), nil
	}
	f := newFixture(t, nil)
	f.cat.Set(slow)
	f.cat.Set(newProvider("fast", "now"))

	result := make(chan json.RawMessage, 1)
	go func() {
		res, err := f.cat.CallTool(context.Background(), &tool.Call{Name: "wait", Arguments: json.RawMessage(`{}`)})
		if err != nil {
			t.Error(err)
		}
		result <- res
	}()
	await(t, entered, "the slow call to start")

	others := make(chan struct{})
	go func() {
		defer close(others)
		if got, err := listNames(f.cat); err != nil || !cmp.Equal(got, []string{"now", "wait"}) {
			t.Errorf("names while a call runs: %v, %v", got, err)
		}
		f.cat.Set(newProvider("third", "more"))
		f.cat.Remove("fast")
		f.cat.Set(newProvider("fast", "now"))
		if _, err := f.cat.CallTool(context.Background(), &tool.Call{Name: "more", Arguments: json.RawMessage(`{}`)}); err != nil {
			t.Error(err)
		}
		f.cat.Remove("slow") // the running call keeps its provider
	}()
	await(t, others, "listing, Set, Remove and another call while a call runs")

	close(release)
	if res := await(t, result, "the slow call to finish"); string(res) != string(tool.TextResult("done")) {
		t.Errorf("slow call result %s", res)
	}
}

// Many goroutines calling, listing and publishing at once (run with -race).
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &Options{PageSize: 3})
	f.cat.Set(newProvider("a", "x", "y", "z"))
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 50 {
				name := fmt.Sprintf("p%d", i)
				if j%2 == 0 {
					f.cat.Set(newProvider(name, "x", fmt.Sprintf("t%d", j)))
				} else {
					f.cat.Remove(name)
				}
			}
		})
		wg.Go(func() {
			for range 50 {
				if _, err := listNames(f.cat); err != nil {
					t.Error(err)
				}
				_, _ = f.cat.CallTool(context.Background(), &tool.Call{Name: "y", Arguments: json.RawMessage(`{}`)})
				f.cat.Exposed()
			}
		})
	}
	wg.Wait()
	for i := range 4 {
		f.cat.Remove(fmt.Sprintf("p%d", i))
	}
	if got := allNames(t, f.cat); !cmp.Equal(got, []string{"x", "y", "z"}) {
		t.Errorf("after the churn: %v", got)
	}
}

// A Set with unchanged tools keeps each compiled schema.
func TestResetReusesSchemas(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.cat.Set(newProvider("p", "a", "b"))
	before := f.cat.snap.Load().tools.routes["a"].check
	f.cat.Set(newProvider("p", "a", "b"))
	if after := f.cat.snap.Load().tools.routes["a"].check; after != before {
		t.Error("an unchanged tool's schema was compiled again")
	}
	f.cat.Set(&fakeProvider{name: "p", tools: []tool.Def{toolDef("a", `{"type":"object","required":["q"]}`)}})
	if after := f.cat.snap.Load().tools.routes["a"].check; after == before {
		t.Error("a changed tool kept its old schema")
	}
}

func TestAccessors(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.cat.SetAll(newProvider("b", "x"), newProvider("a", "x", "y"))
	if diff := cmp.Diff([]string{"a", "b"}, f.cat.Providers()); diff != "" {
		t.Errorf("Providers (-want +got):\n%s", diff)
	}
	want := []Entry{
		{Provider: "a", Tool: "x", ExposedName: "a__x", Description: "does x"},
		{Provider: "b", Tool: "x", ExposedName: "b__x", Description: "does x"},
		{Provider: "a", Tool: "y", ExposedName: "y", Description: "does y"},
	}
	got := f.cat.Exposed()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Exposed (-want +got):\n%s", diff)
	}
	got[0].ExposedName = "changed"
	if f.cat.Exposed()[0].ExposedName != "a__x" {
		t.Error("Exposed returned the catalog's own slice")
	}
	f.cat.Remove("nobody") // no-op
	if diff := cmp.Diff([]string{"a", "b"}, f.cat.Providers()); diff != "" {
		t.Errorf("Providers after removing nobody (-want +got):\n%s", diff)
	}
}

// TestSetAllIsSetEach: SetAll publishes what one Set per provider would,
// refusals included. (A clash is where they differ: in one SetAll every
// clashing provider is prefixed; Set after Set, the newcomer is, and the
// first keeps its name, as TestStickyNames shows.)
func TestSetAllIsSetEach(t *testing.T) {
	t.Parallel()
	providers := []tool.Provider{
		newProvider("a", "alpha", "files.read"),
		newProvider("b", "beta"),
		nil,
		newProvider("c d", "refused_provider"),
	}
	one, all := newFixture(t, nil), newFixture(t, nil)
	for _, p := range providers {
		one.cat.Set(p)
	}
	all.cat.SetAll(providers...)
	if diff := cmp.Diff(one.cat.Exposed(), all.cat.Exposed()); diff != "" {
		t.Errorf("SetAll's tools differ from Set's (-Set +SetAll):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a", "b"}, all.cat.Providers()); diff != "" {
		t.Errorf("providers (-want +got):\n%s", diff)
	}
}
