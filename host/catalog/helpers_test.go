package catalog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/tool"
)

// fakeProvider is a tool.Provider whose CallTool is a function.
type fakeProvider struct {
	name  string
	tools []tool.Def
	call  func(ctx context.Context, c *tool.Call) (json.RawMessage, error)

	mu    sync.Mutex
	calls []tool.Call // what CallTool received
}

func (p *fakeProvider) Name() string      { return p.name }
func (p *fakeProvider) Tools() []tool.Def { return p.tools }
func (p *fakeProvider) CallTool(ctx context.Context, c *tool.Call) (json.RawMessage, error) {
	p.mu.Lock()
	p.calls = append(p.calls, *c)
	p.mu.Unlock()
	if p.call != nil {
		return p.call(ctx, c)
	}
	return tool.TextResult(p.name + ":" + c.Name), nil
}

func (p *fakeProvider) received() []tool.Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]tool.Call(nil), p.calls...)
}

// objectSchema is the schema of a tool that takes any object.
const objectSchema = `{"type":"object"}`

// toolDef returns a tool definition with the given name and input schema.
func toolDef(name, schema string) tool.Def {
	return tool.Def{Name: name, JSON: json.RawMessage(fmt.Sprintf(`{"name":%q,"description":"does %s","inputSchema":%s}`, name, name, schema))}
}

// newProvider returns a fakeProvider offering tools that take any object.
func newProvider(name string, tools ...string) *fakeProvider {
	p := &fakeProvider{name: name}
	for _, t := range tools {
		p.tools = append(p.tools, toolDef(t, objectSchema))
	}
	return p
}

// hash8 is the expected hash suffix for a provider's tool.
func hash8(provider, tool string) string {
	sum := sha256.Sum256([]byte(provider + "\x00" + tool))
	return hex.EncodeToString(sum[:])[:8]
}

// logBuffer collects log output safely across goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func testLogger(out *logBuffer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Output: out, Level: hclog.Trace, DisableTime: true})
}

// fakeClock is a clock whose time moves only when the test says so.
// Timers due at Advance run synchronously, in order, inside Advance.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c     *fakeClock
	at    time.Time
	f     func()
	state int // 0 pending, 1 fired, 2 stopped
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) stopper {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.state != 0 {
		return false
	}
	t.state = 2
	return true
}

// Advance moves time forward by d and runs the timers that came due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	for _, t := range c.timers {
		if t.state == 0 && !t.at.After(c.now) {
			t.state = 1
			due = append(due, t)
		}
	}
	c.mu.Unlock()
	sort.SliceStable(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
	for _, t := range due {
		t.f()
	}
}

// Pending returns how many timers are waiting.
func (c *fakeClock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if t.state == 0 {
			n++
		}
	}
	return n
}

// fixture is a catalog on a fake clock with a subscriber that reports each
// event on a channel, and its log.
type fixture struct {
	cat    *Catalog
	clock  *fakeClock
	events chan tool.Change
	log    *logBuffer
}

const (
	testQuiet    = 50 * time.Millisecond
	testMaxDelay = 500 * time.Millisecond
)

func newFixture(t *testing.T, opts *Options) *fixture {
	t.Helper()
	f := &fixture{clock: newFakeClock(), events: make(chan tool.Change, 100), log: &logBuffer{}}
	o := Options{Logger: testLogger(f.log), Quiet: testQuiet, MaxDelay: testMaxDelay}
	if opts != nil {
		o.PageSize = opts.PageSize
		o.MaxSubscriptions = opts.MaxSubscriptions
	}
	f.cat = newCatalog(&o, f.clock)
	t.Cleanup(f.cat.Close)
	t.Cleanup(f.cat.subs.background.Wait)
	f.cat.Subscribe(func(ch tool.Change) { f.events <- ch })
	return f
}

// change ends any open burst and returns what its event said (the zero
// Change when there was none).
func (f *fixture) change(t *testing.T) tool.Change {
	t.Helper()
	before := f.cat.ev.bursts.Load()
	f.clock.Advance(testMaxDelay)
	if f.cat.ev.bursts.Load() == before {
		return tool.Change{}
	}
	return await(t, f.events, "the change event")
}

// settle ends any open burst and waits for its event; it reports how many
// bursts ended (0 or 1).
func (f *fixture) settle(t *testing.T) int {
	t.Helper()
	before := f.cat.ev.bursts.Load()
	f.clock.Advance(testMaxDelay)
	n := int(f.cat.ev.bursts.Load() - before)
	for range n {
		await(t, f.events, "the change event")
	}
	return n
}

// await receives from ch or fails the test after a generous bound (a
// deadlock guard, not a synchronisation).
func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// allNames returns the exposed names of every page.
func allNames(t *testing.T, c *Catalog) []string {
	t.Helper()
	names, err := listNames(c)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// listNames walks every page; it is safe to call from any goroutine.
func listNames(c *Catalog) ([]string, error) {
	var out []string
	cursor := ""
	for {
		page, next, err := c.ListTools(cursor)
		if err != nil {
			return nil, fmt.Errorf("ListTools(%q): %w", cursor, err)
		}
		for _, raw := range page {
			var v struct{ Name string }
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, fmt.Errorf("tool JSON %s: %w", raw, err)
			}
			out = append(out, v.Name)
		}
		if next == "" {
			return out, nil
		}
		cursor = next
	}
}

func nameOf(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var v struct{ Name string }
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("tool JSON %s: %v", raw, err)
	}
	return v.Name
}

// fakeServer is a tool.Server: a fakeProvider that also offers resources,
// templates and prompts. Its methods answer with what names the provider
// and the request, unless the test sets a function; it records every
// request it gets.
type fakeServer struct {
	*fakeProvider
	offers    tool.Offers
	resources []tool.Resource
	templates []tool.Template
	prompts   []tool.Prompt

	read      func(ctx context.Context, r *tool.Read) (json.RawMessage, error)
	get       func(ctx context.Context, g *tool.PromptGet) (json.RawMessage, error)
	complete  func(ctx context.Context, params json.RawMessage) (json.RawMessage, error)
	subscribe func(ctx context.Context, uri string, on bool) error

	smu       sync.Mutex
	reads     []string // URIs read
	gets      []tool.PromptGet
	completes []string // params, as received
	subs      []string // "+uri" for a subscribe, "-uri" for an unsubscribe
}

var _ tool.Server = (*fakeServer)(nil)

// newServer returns a fakeServer that offers everything and has nothing.
func newServer(name string) *fakeServer {
	return &fakeServer{fakeProvider: &fakeProvider{name: name}, offers: tool.Offers{Resources: true, Subscriptions: true, Prompts: true, Completions: true}}
}

// with adds resources (an absolute URI), templates (containing "{") and
// prompts (anything else: "name" or "name:arg,arg!" where "!" marks a
// required argument).
func (s *fakeServer) with(defs ...string) *fakeServer {
	for _, d := range defs {
		switch {
		case strings.Contains(d, "{"):
			s.templates = append(s.templates, templateDef(d))
		case strings.Contains(d, "://"):
			s.resources = append(s.resources, resourceDef(d))
		default:
			name, args, _ := strings.Cut(d, ":")
			var as []string
			if args != "" {
				as = strings.Split(args, ",")
			}
			s.prompts = append(s.prompts, promptDef(name, as...))
		}
	}
	return s
}

func resourceDef(uri string) tool.Resource {
	return tool.Resource{URI: uri, JSON: json.RawMessage(fmt.Sprintf(`{"uri":%q,"name":"r","description":"about %s"}`, uri, uri))}
}

func templateDef(tmpl string) tool.Template {
	return tool.Template{URITemplate: tmpl, JSON: json.RawMessage(fmt.Sprintf(`{"uriTemplate":%q,"name":"t"}`, tmpl))}
}

// promptDef returns a prompt with the given arguments; a name ending in
// "!" is required.
func promptDef(name string, args ...string) tool.Prompt {
	var as []string
	for _, a := range args {
		n, req := strings.CutSuffix(a, "!")
		as = append(as, fmt.Sprintf(`{"name":%q,"required":%v}`, n, req))
	}
	js := fmt.Sprintf(`{"name":%q,"description":"does %s"`, name, name)
	if len(as) > 0 {
		js += `,"arguments":[` + strings.Join(as, ",") + `]`
	}
	return tool.Prompt{Name: name, JSON: json.RawMessage(js + "}")}
}

func (s *fakeServer) Offers() tool.Offers        { return s.offers }
func (s *fakeServer) Resources() []tool.Resource { return s.resources }
func (s *fakeServer) Templates() []tool.Template { return s.templates }
func (s *fakeServer) Prompts() []tool.Prompt     { return s.prompts }

func (s *fakeServer) ReadResource(ctx context.Context, r *tool.Read) (json.RawMessage, error) {
	s.smu.Lock()
	s.reads = append(s.reads, r.URI)
	s.smu.Unlock()
	if s.read != nil {
		return s.read(ctx, r)
	}
	return json.RawMessage(fmt.Sprintf(`{"contents":[{"uri":%q,"text":%q}]}`, r.URI, s.name)), nil
}

func (s *fakeServer) GetPrompt(ctx context.Context, g *tool.PromptGet) (json.RawMessage, error) {
	s.smu.Lock()
	s.gets = append(s.gets, *g)
	s.smu.Unlock()
	if s.get != nil {
		return s.get(ctx, g)
	}
	return json.RawMessage(fmt.Sprintf(`{"messages":[{"role":"user","content":{"type":"text","text":%q}}]}`, s.name+":"+g.Name)), nil
}

func (s *fakeServer) Complete(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	s.smu.Lock()
	s.completes = append(s.completes, string(params))
	s.smu.Unlock()
	if s.complete != nil {
		return s.complete(ctx, params)
	}
	return json.RawMessage(fmt.Sprintf(`{"completion":{"values":[%q]}}`, s.name)), nil
}

func (s *fakeServer) SubscribeResource(ctx context.Context, uri string, on bool) error {
	s.smu.Lock()
	if on {
		s.subs = append(s.subs, "+"+uri)
	} else {
		s.subs = append(s.subs, "-"+uri)
	}
	s.smu.Unlock()
	if s.subscribe != nil {
		return s.subscribe(ctx, uri, on)
	}
	return nil
}

// publication is one publication of a running instance, as the plugin
// manager makes one whenever a list changes: a new value with lists of its
// own, whose requests reach the instance (its fakeServer, which records
// them). Publications of one fakeServer are one tool.Instance.
type publication struct {
	*fakeServer
	resources []tool.Resource
	templates []tool.Template
}

var _ tool.Instance = (*publication)(nil)

func (p *publication) Instance() any              { return p.fakeServer }
func (p *publication) Resources() []tool.Resource { return p.resources }
func (p *publication) Templates() []tool.Template { return p.templates }

// publish returns a new publication of s offering the resources and
// templates among defs (as with's).
func (s *fakeServer) publish(defs ...string) *publication {
	l := newServer(s.name).with(defs...)
	return &publication{fakeServer: s, resources: l.resources, templates: l.templates}
}

// record returns a copy of what the server received: its reads,
// completions or subscriptions.
func (s *fakeServer) record(which *[]string) []string {
	s.smu.Lock()
	defer s.smu.Unlock()
	return slices.Clone(*which)
}

// entryKeys lists the keys of a JSON list's items: key is the member that
// identifies them ("uri", "uriTemplate", "name").
func listKeys(t *testing.T, key string, list func(string) ([]json.RawMessage, string, error)) []string {
	t.Helper()
	var out []string
	cursor := ""
	for {
		page, next, err := list(cursor)
		if err != nil {
			t.Fatalf("list(%q): %v", cursor, err)
		}
		if page == nil {
			t.Fatalf("list(%q) returned a nil page", cursor)
		}
		for _, raw := range page {
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatalf("item %s: %v", raw, err)
			}
			s, _ := m[key].(string)
			out = append(out, s)
		}
		if next == "" {
			return out
		}
		cursor = next
	}
}
