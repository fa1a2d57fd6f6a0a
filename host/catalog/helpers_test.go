package catalog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
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
	events chan struct{}
	log    *logBuffer
}

const (
	testQuiet    = 50 * time.Millisecond
	testMaxDelay = 500 * time.Millisecond
)

func newFixture(t *testing.T, opts *Options) *fixture {
	t.Helper()
	f := &fixture{clock: newFakeClock(), events: make(chan struct{}, 100), log: &logBuffer{}}
	o := Options{Logger: testLogger(f.log), Quiet: testQuiet, MaxDelay: testMaxDelay}
	if opts != nil {
		o.PageSize = opts.PageSize
	}
	f.cat = newCatalog(&o, f.clock)
	t.Cleanup(f.cat.Close)
	f.cat.Subscribe(func(tool.Change) { f.events <- struct{}{} })
	return f
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
