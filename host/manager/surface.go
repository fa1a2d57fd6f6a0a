package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/plughost/plughost/host/expose"
	"github.com/plughost/plughost/host/pluginclient"
	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/pluginproto"
)

// What a plugin offers besides tools (resources, templates, prompts,
// completion), and a plugin's requests for the client's input: the
// provider of a plugin is a tool.Server.

// A ResourceUpdater is a Publisher that hears when a subscribed resource's
// contents changed. *catalog.Catalog is one.
type ResourceUpdater interface {
	// ResourceUpdated tells that the resource at uri of the named
	// provider changed.
	ResourceUpdated(provider, uri string)
}

// lists is everything a plugin offers, as last listed.
type lists struct {
	tools     []tool.Def
	resources []tool.Resource
	templates []tool.Template
	prompts   []tool.Prompt
	refused   []Refusal // what named refused, of every kind
}

// list asks the plugin for what kinds says changed (all of it at load),
// keeping the rest of old. Only what the plugin offers is asked.
func (in *instance) list(ctx context.Context, old lists, kinds pluginclient.Change) (lists, error) {
	l := old
	var refused []Refusal // of the kinds listed again
	var err error
	if kinds.Tools {
		if l.tools, err = in.listTools(ctx, &refused); err != nil {
			return old, err
		}
	}
	off := in.desc.Offers
	if kinds.Resources && off.Resources {
		raws, err := in.pp.ListResources(ctx)
		if err != nil {
			return old, fmt.Errorf("list resources: %w", err)
		}
		l.resources = named(in, "resource", "uri", raws, &refused, func(key string, raw json.RawMessage) tool.Resource {
			return tool.Resource{URI: key, JSON: raw}
		})
		if raws, err = in.pp.ListResourceTemplates(ctx); err != nil {
			return old, fmt.Errorf("list resource templates: %w", err)
		}
		l.templates = named(in, "resource template", "uriTemplate", raws, &refused, func(key string, raw json.RawMessage) tool.Template {
			return tool.Template{URITemplate: key, JSON: raw}
		})
	}
	if kinds.Prompts && off.Prompts {
		raws, err := in.pp.ListPrompts(ctx)
		if err != nil {
			return old, fmt.Errorf("list prompts: %w", err)
		}
		l.prompts = named(in, "prompt", "name", raws, &refused, func(key string, raw json.RawMessage) tool.Prompt {
			return tool.Prompt{Name: key, JSON: raw}
		})
	}
	relisted := func(r Refusal) bool {
		switch r.Kind {
		case "tool":
			return kinds.Tools
		case "resource", "resource template":
			return kinds.Resources && off.Resources
		case "prompt":
			return kinds.Prompts && off.Prompts
		}
		return false
	}
	l.refused = append(slices.DeleteFunc(slices.Clone(old.refused), relisted), refused...)
	return l, nil
}

// everything is the change that lists all a plugin offers.
var everything = pluginclient.Change{Tools: true, Resources: true, Prompts: true}

// named keeps the definitions that have a string member key, each once,
// logging the others and adding them to refused (the catalog checks the
// rest of each definition).
func named[T any](in *instance, kind, key string, raws []json.RawMessage, refused *[]Refusal, mk func(string, json.RawMessage) T) []T {
	out := make([]T, 0, len(raws))
	seen := make(map[string]bool, len(raws))
	for i, raw := range raws {
		k, ok := keyOf(raw, key)
		if !ok {
			in.log.Warn("skipping a "+kind+" definition without a "+key, "index", i, "json", string(raw))
			*refused = append(*refused, Refusal{Kind: kind,
				Reason: fmt.Sprintf("definition %d of the list has no %q string: %.120s", i+1, key, raw)})
			continue
		}
		if seen[k] {
			in.log.Warn("skipping a repeated "+kind+" definition", key, k)
			*refused = append(*refused, Refusal{Kind: kind, Name: k,
				Reason: "the plugin lists this " + kind + " more than once; keeping the first"})
			continue
		}
		seen[k] = true
		out = append(out, mk(k, slices.Clone(raw)))
	}
	return out
}

var _ tool.Server = (*provider)(nil)

// Offers is what the plugin said it offers in Describe.
func (p *provider) Offers() tool.Offers {
	o := p.desc.Offers
	return tool.Offers{Resources: o.Resources, Subscriptions: o.ResourceSubscriptions, Prompts: o.Prompts, Completions: o.Completions}
}

func (p *provider) Resources() []tool.Resource { return slices.Clone(p.resources) }
func (p *provider) Templates() []tool.Template { return slices.Clone(p.templates) }
func (p *provider) Prompts() []tool.Prompt     { return slices.Clone(p.prompts) }

// ReadResource reads a resource in the plugin under its call time limit.
func (p *provider) ReadResource(ctx context.Context, r *tool.Read) (json.RawMessage, error) {
	return p.run(ctx, "resource", r.URI, func(ctx context.Context, in *instance) (json.RawMessage, error) {
		return in.pp.ReadResource(ctx, &pluginhost.ReadRequest{URI: r.URI, ClientCapabilities: r.ClientCapabilities, Input: input(r.Input),
			Caller: callerFor(r.Caller, p.passClaims)})
	})
}

// GetPrompt renders a prompt in the plugin under its call time limit.
func (p *provider) GetPrompt(ctx context.Context, g *tool.PromptGet) (json.RawMessage, error) {
	return p.run(ctx, "prompt", g.Name, func(ctx context.Context, in *instance) (json.RawMessage, error) {
		return in.pp.GetPrompt(ctx, &pluginhost.PromptRequest{
			Name: g.Name, Arguments: g.Arguments, ClientCapabilities: g.ClientCapabilities, Input: input(g.Input),
			Caller: callerFor(g.Caller, p.passClaims),
		})
	})
}

// Complete asks the plugin for completions under its call time limit.
func (p *provider) Complete(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	return p.run(ctx, "completion", "", func(ctx context.Context, in *instance) (json.RawMessage, error) {
		return in.pp.Complete(ctx, params)
	})
}

// SubscribeResource starts or ends the plugin's reports of changes to uri.
// A lazy plugin is not stopped while it holds a subscription.
func (p *provider) SubscribeResource(ctx context.Context, uri string, subscribe bool) error {
	_, err := p.run(ctx, "resource subscription", uri, func(ctx context.Context, in *instance) (json.RawMessage, error) {
		if err := in.pp.SubscribeResource(ctx, uri, subscribe); err != nil {
			return nil, err
		}
		in.subscribed(uri, subscribe)
		return nil, nil
	})
	return err
}

// run runs one request of the plugin other than a tool call (what names
// it: "resource" and the URI, "prompt" and its name) as a call: refused
// once the plugin is stopping, under the plugin's call time limit, its
// failure explained as a call's.
func (p *provider) run(ctx context.Context, what, name string, do func(context.Context, *instance) (json.RawMessage, error)) (json.RawMessage, error) {
	subject := what
	if name != "" {
		subject = fmt.Sprintf("%s %q", what, name)
	}
	if err := p.heldError(what, name); err != nil {
		return nil, err
	}
	in, err := p.g.acquire(ctx, subject)
	if err != nil {
		return nil, err
	}
	defer in.leave()
	ctx, lim, release := in.limit(ctx)
	defer release()
	res, err := do(ctx, in)
	if err == nil {
		return res, nil
	}
	if err := surfaceError(subject, in.name, lim.d, err); err != nil {
		return nil, err
	}
	if errors.Is(context.Cause(ctx), errCallTimeout) {
		return nil, tool.Errorf(tool.ErrTimedOut, "%s of plugin %s did not finish within its timeout of %v and was cancelled", subject, in.name, lim.d)
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("plugin %s: %w", in.name, err)
	}
	return nil, in.callError(subject, err)
}

// surfaceError maps the plugin's own answers (it needs input, it needs a
// capability the client did not declare, it has no such thing, the
// arguments are wrong, it failed running the call: tool.ErrInternal) to
// the host's vocabulary; nil for any other error, a failure of the
// plugin's process or connection. limit is the call's
// time limit (0: none), which bounds each request to the client too.
func surfaceError(subject, plugin string, limit time.Duration, err error) error {
	var (
		ir *pluginproto.InputRequiredError
		cr *pluginproto.CapabilityRequiredError
	)
	switch {
	case errors.As(err, &ir):
		return &tool.InputRequired{Requests: ir.Requests, State: ir.State, Timeout: limit}
	case errors.As(err, &cr):
		return &tool.CapabilityRequired{
			Capabilities: cr.Capabilities,
			Message:      fmt.Sprintf("%s of plugin %s needs client capabilities the client did not declare (%s): %s", subject, plugin, cr.Capabilities, cr.Error()),
		}
	case errors.Is(err, pluginproto.ErrUnknownResource):
		return fmt.Errorf("%w: %s of plugin %s: %w", tool.ErrUnknownResource, subject, plugin, err)
	case errors.Is(err, pluginproto.ErrUnknownPrompt), errors.Is(err, pluginclient.ErrUnknownReference):
		return fmt.Errorf("%w: %s of plugin %s: %w", tool.ErrUnknownPrompt, subject, plugin, err)
	case errors.Is(err, pluginproto.ErrInvalidArguments):
		return tool.Errorf(tool.ErrBadArguments, "%s of plugin %s: %w", subject, plugin, err)
	case errors.Is(err, pluginclient.ErrPluginFailed):
		// The plugin's message (a handler's panic, naming the tool) follows
		// the sentinel's text.
		_, msg, _ := strings.Cut(err.Error(), pluginclient.ErrPluginFailed.Error()+": ")
		return tool.Errorf(tool.ErrInternal, "%s of plugin %s failed: %s", subject, plugin, msg)
	}
	return nil
}

// input is the plugin's view of the client's answers.
func input(in *tool.Input) *pluginhost.Input {
	if in == nil {
		return nil
	}
	out := &pluginhost.Input{Responses: in.Responses, State: in.State}
	if len(in.Errors) > 0 {
		out.Errors = make(map[string]pluginproto.InputError, len(in.Errors))
		for k, e := range in.Errors {
			out.Errors[k] = pluginproto.InputError{Code: e.Code, Message: e.Message}
		}
	}
	return out
}

// count records how many of each the plugin offers.
func (st *PluginStatus) count(l lists) {
	st.Tools, st.Resources, st.Templates, st.Prompts = len(l.tools), len(l.resources), len(l.templates), len(l.prompts)
	st.Refused = l.refused
}

// counts are the log fields of what a plugin offers: tools always, the
// rest when there are any.
func counts(l lists) []any {
	kv := []any{"tools", len(l.tools)}
	for _, c := range []struct {
		name string
		n    int
	}{{"resources", len(l.resources)}, {"templates", len(l.templates)}, {"prompts", len(l.prompts)}} {
		if c.n > 0 {
			kv = append(kv, c.name, c.n)
		}
	}
	return kv
}

// screen returns what of ls Options.ExposeFor lets clients see, and
// records what it hides in the status.
func (s *supervisor) screen(ls lists) lists {
	var r *expose.Rules
	if f := s.m.opts.ExposeFor; f != nil {
		r = f(s.name)
	}
	if r.Empty() {
		s.update(func(st *PluginStatus) { st.Hidden = nil })
		return ls
	}
	var hidden []string
	keep := func(l *expose.List, kind, name string) bool {
		if l.Allows(name) {
			return true
		}
		hidden = append(hidden, kind+" "+name)
		return false
	}
	out := lists{refused: ls.refused}
	for _, t := range ls.tools {
		if keep(&r.Tools, "tool", t.Name) {
			out.tools = append(out.tools, t)
		}
	}
	for _, x := range ls.resources {
		if keep(&r.Resources, "resource", x.URI) {
			out.resources = append(out.resources, x)
		}
	}
	for _, x := range ls.templates {
		if keep(&r.Resources, "resource template", x.URITemplate) {
			out.templates = append(out.templates, x)
		}
	}
	for _, x := range ls.prompts {
		if keep(&r.Prompts, "prompt", x.Name) {
			out.prompts = append(out.prompts, x)
		}
	}
	s.update(func(st *PluginStatus) { st.Hidden = hidden })
	if len(hidden) > 0 {
		s.log.Debug("the configuration hides some of what the plugin offers", "hidden", hidden)
	}
	return out
}
