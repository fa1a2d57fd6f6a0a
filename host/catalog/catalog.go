package catalog

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/argcheck"
	"github.com/plughost/plughost/host/naming"
	"github.com/plughost/plughost/host/tool"
)

// Options configures a Catalog. The zero value (or a nil *Options) gives the
// defaults.
type Options struct {
	// Logger receives warnings about refused providers, skipped and renamed
	// tools and name clashes. Nil means hclog.Default() named "catalog"
	// (stderr).
	Logger hclog.Logger
	// PageSize is the number of tools per tools/list page. Zero or less
	// means 100.
	PageSize int
	// Quiet is how long the catalog waits after a change for more changes
	// before it tells subscribers: changes closer together than Quiet make
	// one event. Zero or less means 50ms.
	Quiet time.Duration
	// MaxDelay bounds how long a burst of changes that never goes quiet can
	// hold its event back: subscribers hear at least once every MaxDelay
	// while changes keep coming. Zero or less means 500ms.
	MaxDelay time.Duration
	// MaxHold bounds how long a Hold defers events when its release never
	// comes. Zero or less means 15s.
	MaxHold time.Duration
}

// Defaults for Options.
const (
	DefaultPageSize = 100
	DefaultQuiet    = 50 * time.Millisecond
	DefaultMaxDelay = 500 * time.Millisecond
	DefaultMaxHold  = 15 * time.Second
)

// Entry is one exposed tool, for people and command-line listings.
type Entry struct {
	// Provider is the name of the provider that offers the tool.
	Provider string
	// Tool is the provider's own name for it.
	Tool string
	// ExposedName is the name clients see and call it by.
	ExposedName string
	// Description is the tool's "description", if it is a string.
	Description string
}

// Skip is one tool the catalog refused, and why.
type Skip struct {
	// Provider is the name of the provider that offered the tool.
	Provider string
	// Tool is the provider's name for it (may be empty or malformed).
	Tool string
	// Reason says what is wrong, e.g. that its inputSchema does not compile.
	Reason string
}

// Catalog aggregates the tools of its providers. Its methods are safe for
// concurrent use; ListTools and CallTool take no lock.
type Catalog struct {
	log      hclog.Logger
	pageSize int
	ev       *events

	mu        sync.Mutex // serialises Set and Remove
	providers map[string]*provider

	snap atomic.Pointer[snapshot] // what ListTools and CallTool read
}

// provider is a Set provider and its accepted tools.
type provider struct {
	p       tool.Provider
	defs    []*def // in the provider's order
	skipped []Skip
}

// snapshot is an immutable view of the exposed tools, rebuilt on change.
type snapshot struct {
	names   []string            // exposed names, sorted
	tools   []json.RawMessage   // tools[i] is the JSON of names[i]; never nil
	routes  map[string]*route   // by exposed name
	entries []Entry             // sorted by exposed name
	clashes map[string][]string // tool name → its providers, when more than one
	exposed map[[2]string]string
}

// route is where a call to one exposed name goes.
type route struct {
	p        tool.Provider
	provider string
	tool     string
	schema   *argcheck.Schema
}

// New returns an empty catalog. Close it when done: it owns a goroutine
// that calls subscribers.
func New(opts *Options) *Catalog {
	return newCatalog(opts, realClock{})
}

func newCatalog(opts *Options, clk clock) *Catalog {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = hclog.Default().Named("catalog")
	}
	if o.PageSize <= 0 {
		o.PageSize = DefaultPageSize
	}
	if o.Quiet <= 0 {
		o.Quiet = DefaultQuiet
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = DefaultMaxDelay
	}
	if o.MaxHold <= 0 {
		o.MaxHold = DefaultMaxHold
	}
	c := &Catalog{
		log:       o.Logger,
		pageSize:  o.PageSize,
		ev:        newEvents(clk, o.Quiet, o.MaxDelay, o.MaxHold),
		providers: map[string]*provider{},
	}
	c.snap.Store(&snapshot{tools: []json.RawMessage{}, routes: map[string]*route{}, exposed: map[[2]string]string{}})
	return c
}

// Set adds provider p, or replaces the provider of the same name, reading
// p.Tools() now. It refuses (logs and ignores) a nil provider and a name
// that is not a provider name (naming.ValidProvider): the manager and the
// device bridge derive valid names with package naming, so this only
// catches a programming error. Each tool is checked and its
// inputSchema compiled here; a tool that fails is skipped with a warning
// (see Skipped). Subscribers hear of it only if the exposed list changed.
func (c *Catalog) Set(p tool.Provider) {
	if p == nil {
		c.log.Error("ignoring a nil provider")
		return
	}
	name := p.Name()
	if err := naming.CheckProvider(name); err != nil {
		c.log.Error("ignoring provider", "provider", name, "error", err)
		return
	}
	defs := p.Tools()

	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.providers[name]
	known := map[string]*def{}
	var oldSkips []Skip
	if old != nil {
		for _, d := range old.defs {
			known[d.name] = d
		}
		oldSkips = old.skipped
	}
	st := &provider{p: p}
	accepted := map[string]bool{}
	for _, d := range defs {
		var reason string
		switch {
		case accepted[d.Name]:
			reason = "the provider offers this name more than once; keeping the first"
		case known[d.Name] != nil && bytes.Equal(known[d.Name].orig, d.JSON):
			st.defs = append(st.defs, known[d.Name]) // unchanged: keep its compiled schema
			accepted[d.Name] = true
			continue
		default:
			pd, err := parseDef(d.Name, d.JSON)
			if err == nil {
				st.defs = append(st.defs, pd)
				accepted[d.Name] = true
				continue
			}
			reason = err.Error()
		}
		skip := Skip{Provider: name, Tool: d.Name, Reason: reason}
		st.skipped = append(st.skipped, skip)
		if !slices.Contains(oldSkips, skip) {
			c.log.Warn("skipping tool", "provider", name, "tool", d.Name, "reason", reason)
		}
	}
	c.providers[name] = st
	c.rebuild()
}

// Remove removes the named provider and its tools; it does nothing if there
// is no such provider.
func (c *Catalog) Remove(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.providers[name]; !ok {
		return
	}
	delete(c.providers, name)
	c.rebuild()
}

// rebuild names every tool, publishes a new snapshot, logs what changed and
// schedules an event if the exposed list did. c.mu must be held.
func (c *Catalog) rebuild() {
	type item struct {
		n *naming.Name
		d *def
		p *provider
	}
	var items []item
	for pname, st := range c.providers {
		for _, d := range st.defs {
			items = append(items, item{&naming.Name{Provider: pname, Own: d.name}, d, st})
		}
	}
	ns := make([]*naming.Name, len(items))
	for i, it := range items {
		ns[i] = it.n
	}
	naming.Assign(ns)
	sort.Slice(items, func(i, j int) bool { return items[i].n.Exposed < items[j].n.Exposed })

	s := &snapshot{
		names:   make([]string, len(items)),
		tools:   make([]json.RawMessage, len(items)),
		routes:  make(map[string]*route, len(items)),
		entries: make([]Entry, len(items)),
		clashes: map[string][]string{},
		exposed: make(map[[2]string]string, len(items)),
	}
	providersOf := map[string][]string{}
	for i, it := range items {
		n := it.n
		s.names[i] = n.Exposed
		s.tools[i] = it.d.encode(n.Exposed)
		s.routes[n.Exposed] = &route{p: it.p.p, provider: n.Provider, tool: n.Own, schema: it.d.schema}
		s.entries[i] = Entry{Provider: n.Provider, Tool: n.Own, ExposedName: n.Exposed, Description: it.d.desc}
		s.exposed[[2]string{n.Provider, n.Own}] = n.Exposed
		providersOf[n.Own] = append(providersOf[n.Own], n.Provider)
	}
	for t, ps := range providersOf {
		if len(ps) > 1 {
			slices.Sort(ps)
			s.clashes[t] = ps
		}
	}

	old := c.snap.Load()
	c.logNames(old, s, ns)
	c.snap.Store(s)
	if !sameList(old, s) {
		c.ev.changed()
	}
}

// logNames warns about clashes that appeared or changed, notes clashes that
// went away, and warns about every tool whose exposed name changed for
// another reason (sanitised, shortened, disambiguated).
func (c *Catalog) logNames(old, s *snapshot, ns []*naming.Name) {
	for _, t := range sortedKeys(s.clashes) {
		ps := s.clashes[t]
		if slices.Equal(old.clashes[t], ps) {
			continue
		}
		exposed := make([]string, len(ps))
		for i, p := range ps {
			exposed[i] = s.exposed[[2]string{p, t}]
		}
		c.log.Warn("tool name clash: several providers offer the same tool name; each is exposed under its provider's prefix",
			"tool", t, "providers", ps, "exposed", exposed)
	}
	for _, t := range sortedKeys(old.clashes) {
		if _, ok := s.clashes[t]; !ok {
			c.log.Info("tool name clash resolved", "tool", t, "was", old.clashes[t])
		}
	}
	for _, n := range ns {
		if n.Exposed == n.Own || n.Reason == naming.ReasonClash {
			continue
		}
		if old.exposed[[2]string{n.Provider, n.Own}] == n.Exposed {
			continue // logged when it happened
		}
		c.log.Warn("tool exposed under another name", "provider", n.Provider, "tool", n.Own, "exposed", n.Exposed, "reason", n.Reason)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// sameList reports whether two snapshots expose the same tools/list.
func sameList(a, b *snapshot) bool {
	if len(a.tools) != len(b.tools) {
		return false
	}
	for i := range a.tools {
		if !bytes.Equal(a.tools[i], b.tools[i]) {
			return false
		}
	}
	return true
}

// ListTools returns one page of the exposed tools, sorted by exposed name:
// the MCP Tool objects as their providers wrote them, with "name" rewritten
// to the exposed name. The slice is shared and must not be modified; it is
// never nil. nextCursor is empty on the last page.
//
// A cursor is the last name of the previous page, so it stays valid when
// tools come and go between pages: the next page starts after that name.
// A cursor this catalog did not issue gives an error wrapping
// tool.ErrInvalidCursor.
func (c *Catalog) ListTools(cursor string) (tools []json.RawMessage, nextCursor string, err error) {
	s := c.snap.Load()
	start := 0
	if cursor != "" {
		last, ok := decodeCursor(cursor)
		if !ok {
			return nil, "", fmt.Errorf("%w: tools/list cursor %q was not issued by this server", tool.ErrInvalidCursor, truncate(cursor, 80))
		}
		start = sort.SearchStrings(s.names, last)
		if start < len(s.names) && s.names[start] == last {
			start++
		}
	}
	end := min(start+c.pageSize, len(s.names))
	if end < len(s.names) {
		nextCursor = encodeCursor(s.names[end-1])
	}
	return s.tools[start:end:end], nextCursor, nil
}

// cursorPrefix marks cursors this catalog issued.
const cursorPrefix = "after:"

func encodeCursor(last string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + last))
}

func decodeCursor(cursor string) (last string, ok bool) {
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return "", false
	}
	last, ok = strings.CutPrefix(string(b), cursorPrefix)
	return last, ok && naming.ValidExposed(last)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// CallTool validates call.Arguments against the tool's inputSchema and
// hands the call to the tool's provider under the provider's own tool name.
// call.Name is the exposed name. It is the one place, after the protocol
// layer, where absent arguments get their default: nil, empty or JSON null
// arguments are {}, so the provider always gets a JSON object.
//
// Errors, for tool.Outcome to map:
//   - an unknown name wraps tool.ErrUnknownTool;
//   - arguments that are not a JSON object or break the schema wrap
//     tool.ErrBadArguments, and the text is argcheck's message naming
//     every violation; the provider is not called;
//   - a provider's error that wraps one of tool's sentinels (tool.Typed)
//     names its cause and is returned as it is; any other is wrapped
//     naming tool and provider ("tool "x" of provider "p": …"). A
//     cancelled ctx shows as the provider's error wrapping ctx's.
//
// No lock is held while the provider runs.
func (c *Catalog) CallTool(ctx context.Context, call *tool.Call) (json.RawMessage, error) {
	r, fwd, err := c.route(call)
	if err != nil {
		return nil, err
	}
	res, err := r.p.CallTool(ctx, &fwd)
	return res, r.failure(err)
}

// StartCall is CallTool without waiting, when the tool's provider is a
// tool.Starter: done gets what CallTool would have returned, from the
// provider's goroutine (see tool.Starter), or at once for a call refused
// here. For any other provider a goroutine runs CallTool.
func (c *Catalog) StartCall(ctx context.Context, call *tool.Call, done func(json.RawMessage, error)) {
	r, fwd, err := c.route(call)
	if err != nil {
		done(nil, err)
		return
	}
	st, ok := r.p.(tool.Starter)
	if !ok {
		go func() {
			res, err := r.p.CallTool(ctx, &fwd)
			done(res, r.failure(err))
		}()
		return
	}
	st.StartCall(ctx, &fwd, func(res json.RawMessage, err error) { done(res, r.failure(err)) })
}

// route finds the provider of call.Name and prepares the call it gets:
// the provider's own tool name, arguments defaulted and checked.
func (c *Catalog) route(call *tool.Call) (*route, tool.Call, error) {
	if call == nil {
		return nil, tool.Call{}, errors.New("catalog: nil call")
	}
	r := c.snap.Load().routes[call.Name]
	if r == nil {
		return nil, tool.Call{}, fmt.Errorf("%w: %q", tool.ErrUnknownTool, call.Name)
	}
	fwd := *call
	fwd.Name = r.tool
	if absent(fwd.Arguments) {
		fwd.Arguments = emptyObject
	}
	if msg := r.schema.Check(call.Name, fwd.Arguments); msg != "" {
		return nil, tool.Call{}, tool.Errorf(tool.ErrBadArguments, "%s", msg)
	}
	return r, fwd, nil
}

// failure is the error a call of r returns for its provider's err: typed
// errors name their cause already, others are wrapped naming tool and
// provider.
func (r *route) failure(err error) error {
	if err == nil || tool.Typed(err) {
		return err
	}
	return fmt.Errorf("tool %q of provider %q: %w", r.tool, r.provider, err)
}

// emptyObject is the arguments of a call that has none.
var emptyObject = json.RawMessage("{}")

// absent reports whether a call's arguments stand for none: nil, only
// white space, or JSON null (some clients send null for no arguments).
func absent(args json.RawMessage) bool {
	args = bytes.TrimSpace(args)
	return len(args) == 0 || string(args) == "null"
}

// Subscribe registers fn to be called once per burst of changes to the
// exposed list (see Options.Quiet and MaxDelay). Calls come from one
// goroutine, one at a time, subscribers in the order they subscribed; a
// slow fn delays later events but never Set or Remove. After cancel
// returns, fn is not started again. After Close, fn is never called.
func (c *Catalog) Subscribe(fn func(tool.Change)) (cancel func()) {
	return c.ev.subscribe(func() { fn(tool.Change{Tools: true}) })
}

// Providers returns the names of the providers, sorted.
func (c *Catalog) Providers() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return sortedKeys(c.providers)
}

// Exposed returns every exposed tool, sorted by exposed name.
func (c *Catalog) Exposed() []Entry {
	return slices.Clone(c.snap.Load().entries)
}

// Skipped returns the tools the providers offered that the catalog
// refused, by provider name then in the provider's order.
func (c *Catalog) Skipped() []Skip {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Skip
	for _, name := range sortedKeys(c.providers) {
		out = append(out, c.providers[name].skipped...)
	}
	return out
}

// Hold defers change events until release is called (or MaxHold passes):
// changes made meanwhile reach subscribers as one event, right after the
// release. The plugin manager holds the catalog while the plugins of one
// burst of directory changes load, each at its own pace. Holds nest.
func (c *Catalog) Hold() (release func()) { return c.ev.hold() }

// Close stops change events: after it returns, no Subscribe callback runs
// or will run. It waits for a callback in progress, so it must not be
// called from one. The catalog still lists and routes after Close.
// Close is idempotent.
func (c *Catalog) Close() {
	c.ev.close()
}
