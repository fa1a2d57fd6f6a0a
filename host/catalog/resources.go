package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/naming"
	"github.com/plughost/plughost/host/tool"
)

// resourceSet is the snapshot's view of the exposed resources.
type resourceSet struct {
	list    list                    // by URI
	routes  map[string]*resourceRef // by URI: the owner's resource
	entries []ResourceEntry         // by URI
	hidden  map[string][]Skip       // provider → its resources another owns, by URI
	clashes map[string][]string     // URI → its providers, sorted, when more than one
}

// resourceRef is one provider's resource.
type resourceRef struct {
	p *provider
	r *resource
}

// templateSet is the snapshot's view of the exposed resource templates.
type templateSet struct {
	list    list                    // by URI template, then provider
	order   []*templateRef          // routing order: by provider, then the provider's order
	exact   map[string]*templateRef // by URI template: the first in routing order
	entries []TemplateEntry         // as list
	several bool                    // templates of more than one provider
}

// templateRef is one provider's template.
type templateRef struct {
	p *provider
	t *template
}

// acceptResources checks p's resource definitions.
func (p *provider) acceptResources(rs []tool.Resource) {
	a := p.accepting(KindResource, "URI")
	for _, r := range rs {
		pr, err := parseResource(r)
		id := r.URI
		if pr != nil {
			id = pr.uri
		} else if id == "" {
			id = stringMember(r.JSON, "uri")
		}
		if a.take(id, err) {
			p.resources = append(p.resources, pr)
		}
	}
}

// acceptTemplates checks p's resource template definitions.
func (p *provider) acceptTemplates(ts []tool.Template) {
	a := p.accepting(KindTemplate, "URI template")
	for _, t := range ts {
		pt, err := parseTemplate(t)
		id := t.URITemplate
		if pt != nil {
			id = pt.uriTemplate
		} else if id == "" {
			id = stringMember(t.JSON, "uriTemplate")
		}
		if a.take(id, err) {
			p.templates = append(p.templates, pt)
		}
	}
}

// stringMember returns the string member key of the JSON object raw, or ""
// (best effort, to name a refused definition).
func stringMember(raw []byte, key string) string {
	var m map[string]json.RawMessage
	var s string
	if json.Unmarshal(raw, &m) == nil {
		_ = json.Unmarshal(m[key], &s)
	}
	return s
}

// buildResources lists every provider's resources, each URI served by its
// owner (naming.Claim); the others' are hidden.
func buildResources(providers map[string]*provider) resourceSet {
	var us []*naming.URI
	byPair := map[[2]string]*resource{}
	for _, st := range providers {
		for _, r := range st.resources {
			us = append(us, &naming.URI{Provider: st.name, URI: r.uri})
			byPair[[2]string{st.name, r.uri}] = r
		}
	}
	naming.Claim(us) // sorted by URI, then provider
	s := resourceSet{
		list:    newList(len(us)),
		routes:  make(map[string]*resourceRef, len(us)),
		entries: make([]ResourceEntry, 0, len(us)),
		hidden:  map[string][]Skip{},
		clashes: map[string][]string{},
	}
	for i, u := range us {
		r := byPair[[2]string{u.Provider, u.URI}]
		if i > 0 && us[i-1].URI == u.URI {
			s.clashes[u.URI] = append(s.clashes[u.URI], u.Provider)
		} else if i+1 < len(us) && us[i+1].URI == u.URI {
			s.clashes[u.URI] = []string{u.Provider}
		}
		if u.Owner != u.Provider {
			s.hidden[u.Provider] = append(s.hidden[u.Provider], Skip{Provider: u.Provider, Kind: KindResource, Name: u.URI,
				Reason: fmt.Sprintf("provider %q offers the same URI and serves it (of the providers offering one URI, the one whose name sorts first)", u.Owner)})
			continue
		}
		s.list.add(u.URI, r.json, &tool.Item{Kind: tool.ItemResource, Name: r.name, URI: u.URI, Provider: u.Provider, Annotations: r.annotations})
		s.routes[u.URI] = &resourceRef{providers[u.Provider], r}
		s.entries = append(s.entries, ResourceEntry{Provider: u.Provider, URI: u.URI, Name: r.name, Description: r.desc})
	}
	return s
}

// logURIClashes warns about URI clashes that appeared or changed, and
// notes those that went away.
func (c *Catalog) logURIClashes(old, s *resourceSet) {
	for _, uri := range sortedKeys(s.clashes) {
		ps := s.clashes[uri]
		if slices.Equal(old.clashes[uri], ps) {
			continue
		}
		c.log.Warn("resource URI clash: several providers offer the same URI; the provider whose name sorts first serves it, the others' are hidden",
			"uri", uri, "providers", ps, "owner", ps[0])
	}
	for _, uri := range sortedKeys(old.clashes) {
		if _, ok := s.clashes[uri]; !ok {
			c.log.Info("resource URI clash resolved", "uri", uri, "was", old.clashes[uri])
		}
	}
}

// buildTemplates lists every provider's templates, none hidden.
func buildTemplates(providers map[string]*provider) templateSet {
	var order []*templateRef
	n := 0
	for _, name := range sortedKeys(providers) {
		st := providers[name]
		for _, t := range st.templates {
			order = append(order, &templateRef{st, t})
		}
		if len(st.templates) > 0 {
			n++
		}
	}
	s := templateSet{
		list:    newList(len(order)),
		order:   order,
		exact:   make(map[string]*templateRef, len(order)),
		entries: make([]TemplateEntry, 0, len(order)),
		several: n > 1,
	}
	for _, r := range order {
		if s.exact[r.t.uriTemplate] == nil {
			s.exact[r.t.uriTemplate] = r
		}
	}
	listed := slices.Clone(order)
	sort.Slice(listed, func(i, j int) bool {
		return templateKey(listed[i].t.uriTemplate, listed[i].p.name) < templateKey(listed[j].t.uriTemplate, listed[j].p.name)
	})
	for _, r := range listed {
		s.list.add(templateKey(r.t.uriTemplate, r.p.name), r.t.json, &tool.Item{Kind: tool.ItemTemplate, Name: r.t.name, URI: r.t.uriTemplate, Provider: r.p.name, Annotations: r.t.annotations})
		s.entries = append(s.entries, TemplateEntry{Provider: r.p.name, URITemplate: r.t.uriTemplate, Name: r.t.name, Description: r.t.desc})
	}
	return s
}

// owner returns the provider that serves uri in s (s.serving), logging
// an overlap of templates of other providers that match it too, once per
// pair.
func (c *Catalog) owner(s *snapshot, uri string) *provider {
	return s.serving(uri, func(winner, loser *templateRef) { c.overlaps.note(c.log, uri, winner, loser) })
}

// serving returns the provider that serves uri in s: the owner of the
// resource of that exact URI, else the provider of the first template in
// routing order that matches it; nil when none does. When overlap is not
// nil, it hears every template of another provider that matches uri too
// (with the one that serves it); when it is nil, the first match ends the
// search.
func (s *snapshot) serving(uri string, overlap func(winner, loser *templateRef)) *provider {
	if r := s.resources.routes[uri]; r != nil {
		return r.p
	}
	var won *templateRef
	for _, r := range s.templates.order {
		if won != nil {
			if overlap == nil || !s.templates.several {
				break
			}
			if r.p == won.p {
				continue
			}
		}
		if !r.t.re.MatchString(uri) {
			continue
		}
		if won == nil {
			won = r
			continue
		}
		overlap(won, r)
	}
	if won == nil {
		return nil
	}
	return won.p
}

// overlaps remembers which pairs of templates of two providers were seen
// matching the same URI, to log each pair once.
type overlaps struct {
	mu     sync.Mutex
	logged map[[4]string]bool // winner's provider and template, loser's
}

// note logs, the first time for this pair, that loser also matches uri,
// which winner serves.
func (o *overlaps) note(log hclog.Logger, uri string, winner, loser *templateRef) {
	key := [4]string{winner.p.name, winner.t.uriTemplate, loser.p.name, loser.t.uriTemplate}
	o.mu.Lock()
	seen := o.logged[key]
	if !seen {
		if o.logged == nil {
			o.logged = map[[4]string]bool{}
		}
		o.logged[key] = true
	}
	o.mu.Unlock()
	if !seen {
		log.Warn("resource templates of two providers match the same URI; the first in routing order (by provider name) serves it",
			"uri", uri, "served_by", winner.p.name, "template", winner.t.uriTemplate, "also_matched_by", loser.p.name, "other_template", loser.t.uriTemplate)
	}
}

// keep forgets the pairs of templates s no longer holds, so a pair that
// comes back is logged again and the set stays bounded.
func (o *overlaps) keep(s *templateSet) {
	present := make(map[[2]string]bool, len(s.order))
	for _, r := range s.order {
		present[[2]string{r.p.name, r.t.uriTemplate}] = true
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for k := range o.logged {
		if !present[[2]string{k[0], k[1]}] || !present[[2]string{k[2], k[3]}] {
			delete(o.logged, k)
		}
	}
}

// ListResources returns one page of the exposed resources, sorted by URI:
// the MCP Resource objects as their providers wrote them (compacted). The
// slice is shared and must not be modified; it is never nil. Cursors work
// as ListTools' do (the last URI of the previous page); a cursor this
// catalog did not issue for resources/list gives an error wrapping
// tool.ErrInvalidCursor.
func (c *Catalog) ListResources(cursor string) (resources []json.RawMessage, nextCursor string, err error) {
	return c.snap.Load().resources.list.page(resourcesList, cursor, c.pageSize)
}

// ListResourceTemplates returns one page of the exposed resource
// templates, sorted by URI template, then provider name: the MCP
// ResourceTemplate objects as their providers wrote them (compacted). As
// ListResources otherwise.
func (c *Catalog) ListResourceTemplates(cursor string) (templates []json.RawMessage, nextCursor string, err error) {
	return c.snap.Load().templates.list.page(templatesList, cursor, c.pageSize)
}

// ReadResource hands the read to the provider that serves r.URI: the owner
// of the listed resource of exactly that URI, else the provider of the
// first resource template that matches it, in routing order (by provider
// name, then the provider's order). r reaches the provider unchanged.
// Its answer must be a ReadResourceResult whose contents are of URIs no
// other provider serves (checkContents).
//
// Errors: no provider serves the URI → one wrapping tool.ErrUnknownResource
// naming it; a retry (r.Input not nil) whose URI another provider than
// the one that asked for the input (r.Input.Provider) serves now, or none
// does → one wrapping tool.ErrGone naming both, and no provider is
// called; a provider's *tool.InputRequired → a copy naming the provider
// (its Provider field); a provider's other error that tool.Typed reports is
// returned as it is; any other is wrapped naming resource and provider
// (it keeps wrapping what it wraps, e.g. tool.ErrUnknownResource when a
// template matched but the provider has no such resource). No lock is
// held while the provider runs.
func (c *Catalog) ReadResource(ctx context.Context, r *tool.Read) (json.RawMessage, error) {
	if r == nil {
		return nil, errors.New("catalog: nil read")
	}
	s := c.snap.Load()
	p := c.owner(s, r.URI)
	if p != nil && r.Guard != nil && !s.mayRead(r.Guard, r.URI) {
		p = nil // hidden from this caller: as if unknown
	}
	if r.Input != nil {
		serving := ""
		if p != nil {
			serving = p.name
		}
		if err := retryTo(r.Input, fmt.Sprintf("resource %q", r.URI), serving, "read it again"); err != nil {
			return nil, err
		}
	}
	if p == nil {
		return nil, fmt.Errorf("%w: %q", tool.ErrUnknownResource, r.URI)
	}
	it, def := &tool.Item{Kind: tool.ItemResource, URI: r.URI, Provider: p.name}, json.RawMessage(nil)
	if ref := s.resources.routes[r.URI]; ref != nil {
		it.Name, it.Annotations, def = ref.r.name, ref.r.annotations, ref.r.json
	}
	if _, err := c.hooks.ask(ctx, tool.BeforeRead, r.Caller, it, def, nil, nil, nil); err != nil {
		return nil, err
	}
	fwd := *r
	res, err := p.srv.ReadResource(ctx, &fwd)
	if err != nil {
		if err = asked(err, p.name); !tool.Typed(err) {
			err = fmt.Errorf("resource %q of provider %q: %w", r.URI, p.name, err)
		}
		return nil, err
	}
	if err := c.checkContents(p, r.URI, res); err != nil {
		return nil, err
	}
	return c.hooks.ask(ctx, tool.AfterRead, r.Caller, it, def, nil, res, func(res json.RawMessage) string {
		if err := c.checkContents(p, r.URI, res); err != nil {
			return err.Error()
		}
		return ""
	})
}

// checkContents checks a provider's ReadResourceResult: a "contents"
// array of objects, each with a string "uri", none of them a URI another
// provider serves now (a listed resource, or a URI another provider's
// template serves: s.serving, routing as a read would), since a provider
// answers for its own resources only. Providers are compared by name:
// the one read may have been published again since.
func (c *Catalog) checkContents(p *provider, uri string, res json.RawMessage) error {
	var result struct {
		Contents []struct {
			URI *string `json:"uri"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(res, &result); err != nil || result.Contents == nil {
		return fmt.Errorf("resource %q of provider %q: the provider's result is not a ReadResourceResult (a \"contents\" array of objects)", uri, p.name)
	}
	s := c.snap.Load()
	for i, item := range result.Contents {
		if item.URI == nil {
			return fmt.Errorf("resource %q of provider %q: contents %d has no \"uri\"", uri, p.name, i)
		}
		if *item.URI == uri {
			continue
		}
		if o := s.serving(*item.URI, nil); o != nil && o.name != p.name {
			return fmt.Errorf("resource %q of provider %q: the provider answered with contents of %q, which provider %q serves",
				uri, p.name, *item.URI, o.name)
		}
	}
	return nil
}

// Resources returns every exposed resource, sorted by URI.
func (c *Catalog) Resources() []ResourceEntry {
	return slices.Clone(c.snap.Load().resources.entries)
}

// Templates returns every exposed resource template, sorted by URI
// template, then provider.
func (c *Catalog) Templates() []TemplateEntry {
	return slices.Clone(c.snap.Load().templates.entries)
}
