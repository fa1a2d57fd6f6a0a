package catalog

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/naming"
	"github.com/plughost/plughost/host/tool"
)

// Options configures a Catalog. The zero value (or a nil *Options) gives the
// defaults.
type Options struct {
	// Logger receives warnings about refused providers, skipped
	// definitions, renamed tools and prompts, and clashes. Nil means
	// hclog.Default() named "catalog" (stderr).
	Logger hclog.Logger
	// PageSize is the number of items per page of every list (tools,
	// resources, resource templates, prompts). Zero or less means 100.
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
	// MaxSubscriptions bounds how many distinct resource URIs may be
	// subscribed at once, by all callers together (SubscribeResource):
	// the server's memory for subscriptions, about 300 bytes and the URI
	// for each (some 35 MB at the default, with URIs of 60 bytes). Zero
	// or less means DefaultMaxSubscriptions, 100000.
	//
	// Each session of the protocol layer has a limit of its own (host/mcp
	// Options.MaxSubscriptions, 1000 by default); this one is shared.
	// Sessions subscribed to one URI count it once, but sessions at their
	// own limit with URIs no one else subscribes fill it in
	// MaxSubscriptions / per-session limit sessions (100 at the
	// defaults); beyond, a subscription to a new URI is refused
	// (tool.ErrRefused, naming the limit) whichever session asks. Set it
	// to the per-session limit times the sessions expected to subscribe
	// at once, as memory allows.
	MaxSubscriptions int
	// MaxDeviceItems bounds the tools all devices (providers whose name
	// starts with naming.DevicePrefix) offer together, as the `items`
	// limit bounds each plugin's list: a device whose tools would pass it
	// has the excess skipped (see Skipped), naming the limit. Zero or less
	// means DefaultMaxDeviceItems, 10000 (the default of `items`).
	MaxDeviceItems int
	// Hooks are the operator's hooks (host/hooks), asked around every
	// call, read and prompt get (hooked.go); nil for none.
	Hooks tool.Hooks
}

// Defaults for Options.
const (
	DefaultPageSize         = 100
	DefaultQuiet            = 50 * time.Millisecond
	DefaultMaxDelay         = 500 * time.Millisecond
	DefaultMaxHold          = 15 * time.Second
	DefaultMaxSubscriptions = 100000
	DefaultMaxDeviceItems   = 10000
)

// Kind is what a definition defines: a tool, a resource, a resource
// template or a prompt.
type Kind string

// The kinds of definitions a provider publishes.
const (
	KindTool     Kind = "tool"
	KindResource Kind = "resource"
	KindTemplate Kind = "resource template"
	KindPrompt   Kind = "prompt"
)

// key is the log key that names a definition of this kind.
func (k Kind) key() string {
	switch k {
	case KindResource:
		return "uri"
	case KindTemplate:
		return "uri_template"
	}
	return string(k)
}

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

// ResourceEntry is one exposed resource, for people and command-line
// listings.
type ResourceEntry struct {
	// Provider is the name of the provider that serves the resource.
	Provider string
	// URI is the resource's URI, as clients see it (never renamed).
	URI string
	// Name and Description are the resource's "name" and "description"
	// (the latter if it is a string).
	Name, Description string
}

// TemplateEntry is one exposed resource template, for people and
// command-line listings.
type TemplateEntry struct {
	// Provider is the name of the provider that offers the template.
	Provider string
	// URITemplate is the template's RFC 6570 URI template.
	URITemplate string
	// Name and Description are the template's "name" and "description"
	// (the latter if it is a string).
	Name, Description string
}

// PromptEntry is one exposed prompt, for people and command-line
// listings.
type PromptEntry struct {
	// Provider is the name of the provider that offers the prompt.
	Provider string
	// Prompt is the provider's own name for it.
	Prompt string
	// ExposedName is the name clients see and get it by.
	ExposedName string
	// Description is the prompt's "description", if it is a string.
	Description string
}

// Skip is one definition a provider published that the catalog does not
// serve, and why.
type Skip struct {
	// Provider is the name of the provider that published it.
	Provider string
	// Kind is what it defines.
	Kind Kind
	// Name identifies it as the provider gave it (it may be empty or
	// malformed): a tool's or prompt's name, a resource's URI, a
	// template's URI template.
	Name string
	// Reason says what is wrong, e.g. that its inputSchema does not
	// compile, or which provider owns a resource's URI.
	Reason string
}

// Catalog aggregates the tools, resources, resource templates and prompts
// of its providers. Its methods are safe for concurrent use; the listings,
// calls, reads and prompt gets take no lock.
type Catalog struct {
	log            hclog.Logger
	pageSize       int
	maxDeviceItems int
	ev             *events
	hooks          hooks // Options.Hooks'

	mu        sync.Mutex // serialises Set and Remove
	providers map[string]*provider
	// provisional are the providers published while a Hold is open, with
	// the hold's epoch (events.held): they are named together, as one
	// publication, until the hold ends (their names are not kept from one
	// snapshot to the next meanwhile).
	provisional map[string]uint64

	snap atomic.Pointer[snapshot] // what the listings and routes read

	overlaps  overlaps      // template overlaps already logged
	subs      subscriptions // resource subscriptions and update listeners
	followers []*follower   // FollowTools; under mu, copied on change
}

// provider is a Set provider and what the catalog accepted of it.
type provider struct {
	name      string
	p         tool.Provider
	instance  any         // p.Instance() when p is a tool.Instance, else nil
	about     tool.About  // p.About() when p is a tool.Describer
	srv       tool.Server // p, when it is a tool.Server
	offers    tool.Offers // srv.Offers(); zero when srv is nil
	defs      []*def      // in the provider's order, as the rest
	resources []*resource
	templates []*template
	prompts   []*prompt
	skipped   []Skip // refused definitions: tools, resources, templates, prompts

	read offered // what the provider offered, from read until accept
}

// offered is what a provider offers, as read from it, before the checks.
type offered struct {
	defs      []tool.Def
	resources []tool.Resource
	templates []tool.Template
	prompts   []tool.Prompt
}

// snapshot is an immutable view of everything exposed, rebuilt on change.
type snapshot struct {
	gen       uint64               // counts the snapshots published: 1, 2, ...
	toolsGen  uint64               // the gen of the latest one whose tools, or their providers' About, changed
	providers map[string]*provider // the published providers
	tools     toolSet
	resources resourceSet
	templates templateSet
	prompts   promptSet

	views views // what guards decided of it (guard.go)
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
	if o.MaxSubscriptions <= 0 {
		o.MaxSubscriptions = DefaultMaxSubscriptions
	}
	if o.MaxDeviceItems <= 0 {
		o.MaxDeviceItems = DefaultMaxDeviceItems
	}
	c := &Catalog{
		log:            o.Logger,
		pageSize:       o.PageSize,
		maxDeviceItems: o.MaxDeviceItems,
		hooks:          newHooks(o.Hooks),
		ev:             newEvents(clk, o.Quiet, o.MaxDelay, o.MaxHold),
		providers:      map[string]*provider{},
		provisional:    map[string]uint64{},
	}
	c.subs.init(o.MaxSubscriptions)
	s := build(c.providers, &snapshot{}, nil)
	s.gen, s.toolsGen = 1, 1
	c.snap.Store(s)
	return c
}

// Set adds provider p, or replaces the provider of the same name. It reads
// p.Tools() now and, when p is a tool.Server, p.Offers() and then what is
// offered: Resources() and Templates(), Prompts(). It refuses (logs and
// ignores) a nil provider and a name that is not a provider name
// (naming.ValidProvider): the manager and the device bridge derive valid
// names with package naming, so this only catches a programming error.
// Each definition is checked here (and a tool's inputSchema compiled); one
// that fails is skipped with a warning (see Skipped). Subscribers hear of
// it only if an exposed list changed. Resources subscribed through the
// catalog that p now owns are subscribed with p, unless p's instance is
// subscribed already; those its instance no longer serves are
// unsubscribed (see SubscribeResource).
func (c *Catalog) Set(p tool.Provider) { c.SetAll(p) }

// SetAll is Set for several providers at once, with one rebuild of the
// exposed lists (and at most one change event) for all of them: a host
// publishing its catalog cache at start sets every plugin in one call,
// where one Set each would rebuild the lists once per plugin.
func (c *Catalog) SetAll(ps ...tool.Provider) {
	read := make([]*provider, 0, len(ps))
	for _, p := range ps {
		if st := c.read(p); st != nil {
			read = append(read, st)
		}
	}
	if len(read) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	epoch, held := c.ev.held()
	for _, st := range read {
		c.accept(st)
		if held {
			c.provisional[st.name] = epoch
		}
	}
	c.rebuild()
}

// read reads what p offers, without the catalog's lock: nil for a
// provider Set refuses.
func (c *Catalog) read(p tool.Provider) *provider {
	if p == nil {
		c.log.Error("ignoring a nil provider")
		return nil
	}
	name := p.Name()
	if err := naming.CheckProvider(name); err != nil {
		c.log.Error("ignoring provider", "provider", name, "error", err)
		return nil
	}
	st := &provider{name: name, p: p}
	if in, ok := p.(tool.Instance); ok {
		st.instance = in.Instance()
	}
	if d, ok := p.(tool.Describer); ok {
		st.about = d.About()
	}
	st.read.defs = p.Tools()
	if srv, ok := p.(tool.Server); ok {
		st.srv = srv
		st.offers = srv.Offers()
		if st.offers.Resources {
			st.read.resources, st.read.templates = srv.Resources(), srv.Templates()
		}
		if st.offers.Prompts {
			st.read.prompts = srv.Prompts()
		}
	}
	return st
}

// accept checks what st read and makes it the provider of its name.
// c.mu must be held.
func (c *Catalog) accept(st *provider) {
	old := c.providers[st.name]
	st.acceptTools(c.deviceRoom(st), old)
	st.acceptResources(st.read.resources)
	st.acceptTemplates(st.read.templates)
	st.acceptPrompts(st.read.prompts)
	st.read = offered{}
	var oldSkips []Skip
	if old != nil {
		oldSkips = old.skipped
	}
	var fresh []Skip
	for _, sk := range st.skipped {
		if !slices.Contains(oldSkips, sk) {
			fresh = append(fresh, sk)
		}
	}
	c.logSkips(st.name, fresh)
	c.providers[st.name] = st
}

// maxSkipLines bounds the lines logSkips writes for one provider.
const maxSkipLines = 5

// logSkips warns about a provider's newly skipped definitions: one line
// for each run of them skipped for the same reason (naming the first few),
// at most maxSkipLines lines, and one more counting the rest. A provider
// offering thousands of definitions past a limit costs a line, not
// thousands.
func (c *Catalog) logSkips(provider string, skips []Skip) {
	lines := 0
	for i := 0; i < len(skips); {
		j := i + 1
		for j < len(skips) && skips[j].Kind == skips[i].Kind && skips[j].Reason == skips[i].Reason {
			j++
		}
		if lines++; lines > maxSkipLines {
			c.log.Warn("skipping more definitions; Skipped (plughost plugins) lists them all", "provider", provider, "more", len(skips)-i)
			return
		}
		sk := skips[i]
		if j-i == 1 {
			c.log.Warn("skipping "+string(sk.Kind), "provider", provider, sk.Kind.key(), sk.Name, "reason", sk.Reason)
		} else {
			first := make([]string, 0, maxRenameExamples)
			for _, o := range skips[i:min(j, i+maxRenameExamples)] {
				first = append(first, o.Name)
			}
			c.log.Warn("skipping "+string(sk.Kind)+"s", "provider", provider, "count", j-i, "first", first, "reason", sk.Reason)
		}
		i = j
	}
}

// deviceRoom returns the tool definitions of st that the catalog
// considers: all of them, unless st is a device whose tools, with every
// other device's, would pass MaxDeviceItems; then those that fit, the
// rest skipped naming the limit (before their schemas are compiled).
// c.mu must be held.
func (c *Catalog) deviceRoom(st *provider) []tool.Def {
	defs := st.read.defs
	if !strings.HasPrefix(st.name, naming.DevicePrefix) {
		return defs
	}
	room := c.maxDeviceItems
	for name, p := range c.providers {
		if name != st.name && strings.HasPrefix(name, naming.DevicePrefix) {
			room -= len(p.defs)
		}
	}
	room = max(room, 0)
	if len(defs) <= room {
		return defs
	}
	reason := fmt.Sprintf("the devices' tools together reach the items limit (%d)", c.maxDeviceItems)
	for _, d := range defs[room:] {
		st.skipped = append(st.skipped, Skip{Provider: st.name, Kind: KindTool, Name: d.Name, Reason: reason})
	}
	return defs[:room]
}

// Remove removes the named provider and everything it offers; it does
// nothing if there is no such provider. Subscriptions to its resources
// stay: their releases still work, and they are subscribed again with the
// provider that next owns each URI.
func (c *Catalog) Remove(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.providers[name]; !ok {
		return
	}
	delete(c.providers, name)
	c.rebuild()
}

// accept is the bookkeeping of one kind of definitions while a provider is
// published: the skips, and which names (or URIs) were taken.
type accept struct {
	p    *provider
	kind Kind
	what string // what identifies a definition of kind, for messages
	seen map[string]bool
}

func (p *provider) accepting(kind Kind, what string) *accept {
	return &accept{p: p, kind: kind, what: what, seen: map[string]bool{}}
}

// take reports whether a definition identified by name, parsed with err,
// is accepted: it is not when err is not nil or the provider offered name
// before. Either way the refusal is recorded as a skip.
func (a *accept) take(name string, err error) bool {
	reason := ""
	switch {
	case err != nil:
		reason = err.Error()
	case a.seen[name]:
		reason = "the provider offers this " + a.what + " more than once; keeping the first"
	default:
		a.seen[name] = true
		return true
	}
	a.p.skipped = append(a.p.skipped, Skip{Provider: a.p.name, Kind: a.kind, Name: name, Reason: reason})
	return false
}

// rebuild builds and publishes the next snapshot, logs what changed,
// schedules an event saying which lists changed, and re-subscribes the
// resources whose owner changed. c.mu must be held.
func (c *Catalog) rebuild() {
	old := c.snap.Load()
	epoch, held := c.ev.held()
	for name, e := range c.provisional {
		if !held || e != epoch {
			delete(c.provisional, name) // its hold ended: its names are kept from now on
		}
	}
	s := build(c.providers, old, c.provisional)
	s.gen = old.gen + 1
	c.logNames(KindTool, &old.tools.names, &s.tools.names)
	c.logNames(KindPrompt, &old.prompts.names, &s.prompts.names)
	c.logURIClashes(&old.resources, &s.resources)
	ch := tool.Change{
		Tools:     !s.tools.list.same(&old.tools.list),
		Resources: !s.resources.list.same(&old.resources.list) || !s.templates.list.same(&old.templates.list),
		Prompts:   !s.prompts.list.same(&old.prompts.list),
	}
	followed := ch.Tools || aboutChanged(old, s)
	s.toolsGen = old.toolsGen
	if followed {
		s.toolsGen = s.gen
	}
	c.snap.Store(s)
	if ch != (tool.Change{}) {
		c.ev.changed(ch)
	}
	if followed {
		for _, f := range c.followers {
			f.notify()
		}
	}
	c.overlaps.keep(&s.templates)
	c.resync(s)
}

// build makes the snapshot of providers; the tools and prompts keep the
// exposed names they had in old, but for those of the provisional
// providers.
func build(providers map[string]*provider, old *snapshot, provisional map[string]uint64) *snapshot {
	return &snapshot{
		providers: maps.Clone(providers),
		tools:     buildTools(providers, old.tools.names.kept(provisional)),
		resources: buildResources(providers),
		templates: buildTemplates(providers),
		prompts:   buildPrompts(providers, old.prompts.names.kept(provisional)),
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

// Subscribe registers fn to be called once per burst of changes to the
// exposed lists (see Options.Quiet and MaxDelay), with the lists the burst
// changed: a burst that changed tools and prompts is one call with Tools
// and Prompts true. A change of resource templates counts as Resources
// (MCP has one list_changed notification for both). Calls come from one
// goroutine, one at a time, subscribers in the order they subscribed; a
// slow fn delays later events but never Set or Remove. After cancel
// returns, fn is not started again. After Close, fn is never called.
func (c *Catalog) Subscribe(fn func(tool.Change)) (cancel func()) {
	return c.ev.subscribe(fn)
}

// Providers returns the names of the providers, sorted.
func (c *Catalog) Providers() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return sortedKeys(c.providers)
}

// Skipped returns the definitions the providers published that the
// catalog does not serve: by provider name, first those refused when the
// provider was published (its tools, resources, templates, then prompts,
// each kind in the provider's order), then its resources hidden because
// another provider owns their URI (by URI).
func (c *Catalog) Skipped() []Skip {
	c.mu.Lock()
	defer c.mu.Unlock()
	hidden := c.snap.Load().resources.hidden
	var out []Skip
	for _, name := range sortedKeys(c.providers) {
		out = append(out, c.providers[name].skipped...)
		out = append(out, hidden[name]...)
	}
	return out
}

// SkippedOf is Skipped for the one provider named: what of its last
// publication is not served, and why.
func (c *Catalog) SkippedOf(provider string) []Skip {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Skip
	if p := c.providers[provider]; p != nil {
		out = append(out, p.skipped...)
	}
	return append(out, c.snap.Load().resources.hidden[provider]...)
}

// Hold defers change events until release is called (or MaxHold passes):
// changes made meanwhile reach subscribers as one event, right after the
// release. The plugin manager holds the catalog while the plugins of one
// burst of directory changes load, each at its own pace. Holds nest.
func (c *Catalog) Hold() (release func()) { return c.ev.hold() }

// Close stops change events: after it returns, no Subscribe callback runs
// or will run. It waits for a callback in progress, so it must not be
// called from one. The catalog still lists and routes after Close, and
// calls to providers about subscriptions already under way (after a
// release, or a change of providers) end on their own, within 10 seconds.
// Close is idempotent.
func (c *Catalog) Close() {
	c.ev.close()
}
