package pluginproto

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/plughost/plughost/internal/pluginhost"
)

// SetProxy makes px serve the plugin's requests (pluginhost.Plugin).
func (h *hostPlugin) SetProxy(px pluginhost.Proxy) {
	p := (*Plugin)(h)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.proxy = px
}

// SetProxyLists replaces what the plugin lists (pluginhost.Plugin).
func (h *hostPlugin) SetProxyLists(l pluginhost.ProxyLists) error {
	p := (*Plugin)(h)
	var errs []error
	tools := proxyRegistry(l.Tools, "tool", "name", &errs, func(b []byte) *entry { return &entry{json: b} })
	resources := proxyRegistry(l.Resources, "resource", "uri", &errs, func(b []byte) *resourceEntry { return &resourceEntry{json: b} })
	templates := proxyRegistry(l.Templates, "resource template", "uriTemplate", &errs, func(b []byte) *templateEntry { return &templateEntry{json: b} })
	prompts := proxyRegistry(l.Prompts, "prompt", "name", &errs, func(b []byte) *promptEntry { return &promptEntry{json: b} })
	p.mu.Lock()
	defer p.mu.Unlock()
	if !sameJSON(p.tools, tools, func(e *entry) []byte { return e.json }) {
		p.tools = tools
		p.changedLocked(kindTools)
	}
	if !sameJSON(p.resources, resources, func(e *resourceEntry) []byte { return e.json }) ||
		!sameJSON(p.templates, templates, func(e *templateEntry) []byte { return e.json }) {
		p.resources, p.templates = resources, templates
		p.changedLocked(kindResources)
	}
	if !sameJSON(p.prompts, prompts, func(e *promptEntry) []byte { return e.json }) {
		p.prompts = prompts
		p.changedLocked(kindPrompts)
	}
	return errors.Join(errs...)
}

// proxyRegistry keys each object of items by its member key.
func proxyRegistry[T any](items [][]byte, what, key string, errs *[]error, mk func([]byte) T) registry[T] {
	var r registry[T]
	for _, b := range items {
		var obj map[string]json.RawMessage
		var k string
		if json.Unmarshal(b, &obj) != nil || json.Unmarshal(obj[key], &k) != nil || k == "" {
			*errs = append(*errs, fmt.Errorf("a %s without a %q: %.120s", what, key, b))
			continue
		}
		if _, dup := r.get(k); dup {
			*errs = append(*errs, fmt.Errorf("%s %q listed twice: the first is kept", what, k))
			continue
		}
		r.put(k, mk(b))
	}
	return r
}

func sameJSON[T any](a, b registry[T], of func(T) []byte) bool {
	if len(a.order) != len(b.order) {
		return false
	}
	for i, k := range a.order {
		if b.order[i] != k || string(of(a.byKey[k])) != string(of(b.byKey[k])) {
			return false
		}
	}
	return true
}

func (p *Plugin) getProxy() pluginhost.Proxy {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.proxy
}

// proxyCall hands a call to the proxy; see Plugin.call for what it returns.
func (p *Plugin) proxyCall(ctx context.Context, px pluginhost.Proxy, name string, args json.RawMessage, wantProgress bool, e emitter, inv invocation) (json.RawMessage, error) {
	s := &sink{progress: wantProgress, emit: e}
	defer s.close()
	req := &Request{Tool: name, sink: s}
	call := &pluginhost.ProxyCall{Tool: name, Arguments: args, ClientCapabilities: inv.caps, Input: inv.input,
		TraceParent: inv.traceParent, TraceState: inv.traceState,
		Log: func(level string, data json.RawMessage) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if !s.closed {
				_ = s.emit.log(level, data)
			}
		}}
	if wantProgress {
		call.Progress = req.Progress
	}
	var res json.RawMessage
	err := p.guard(fmt.Sprintf("tool %q", name), func() (err error) {
		res, err = px.CallTool(ctx, call)
		return err
	})
	if ir := (*InputRequiredError)(nil); errors.As(err, &ir) {
		return nil, ir
	}
	if err != nil {
		res, err = ErrorResult("%s", err.Error()).encode()
	}
	return res, err
}

// proxyStatus is the gRPC status of a proxy's error, an
// *InputRequiredError as it is.
func proxyStatus(err error) error {
	if ir := (*InputRequiredError)(nil); err == nil || errors.As(err, &ir) {
		return err
	}
	return handlerStatus(err)
}

func (p *Plugin) proxySubscribe(ctx context.Context, px pluginhost.Proxy, uri string, subscribe bool) error {
	err := p.guard("subscription to "+uri, func() error { return px.SubscribeResource(ctx, uri, subscribe) })
	if err != nil {
		return handlerStatus(err) // an unknown resource as such, as ReadResource's
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !subscribe {
		delete(p.subs, uri)
	} else if _, ok := p.subs[uri]; !ok {
		p.subs[uri] = 0
	}
	return nil
}
