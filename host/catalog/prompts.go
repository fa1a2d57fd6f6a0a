package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/plughost/plughost/host/argcheck"
	"github.com/plughost/plughost/host/naming"
	"github.com/plughost/plughost/host/tool"
)

// promptSet is the snapshot's view of the exposed prompts.
type promptSet struct {
	list    list                    // by exposed name
	routes  map[string]*promptRoute // by exposed name
	entries []PromptEntry           // by exposed name
	names   names
}

// promptRoute is where a get of one exposed prompt name goes.
type promptRoute struct {
	p      *provider
	prompt *prompt
	item   *tool.Item      // as guards and hooks see it
	def    json.RawMessage // the definition as listed, for hooks
}

// acceptPrompts checks p's prompt definitions.
func (p *provider) acceptPrompts(ps []tool.Prompt) {
	a := p.accepting(KindPrompt, "name")
	for _, d := range ps {
		pr, err := parsePrompt(d)
		if a.take(d.Name, err) {
			p.prompts = append(p.prompts, pr)
		}
	}
}

// buildPrompts names every provider's prompts by the tools' rules, in a
// namespace of their own, keeping the names prev gave.
func buildPrompts(providers map[string]*provider, prev []*naming.Name) promptSet {
	items, ns := nameAll(providers, prev, func(p *provider) []*prompt { return p.prompts }, func(pr *prompt) string { return pr.name })
	s := promptSet{
		list:    newList(len(items)),
		routes:  make(map[string]*promptRoute, len(items)),
		entries: make([]PromptEntry, 0, len(items)),
		names:   ns,
	}
	for _, it := range items {
		n := it.n
		item := &tool.Item{Kind: tool.ItemPrompt, Name: n.Own, Exposed: n.Exposed, Provider: n.Provider}
		b := it.v.obj.withName(n.Exposed)
		s.list.add(n.Exposed, b, item)
		s.routes[n.Exposed] = &promptRoute{p: it.p, prompt: it.v, item: item, def: b}
		s.entries = append(s.entries, PromptEntry{Provider: n.Provider, Prompt: n.Own, ExposedName: n.Exposed, Description: it.v.desc})
	}
	return s
}

// ListPrompts returns one page of the exposed prompts, sorted by exposed
// name: the MCP Prompt objects as their providers wrote them (compacted),
// with "name" rewritten to the exposed name. As ListTools otherwise; a
// cursor this catalog did not issue for prompts/list gives an error
// wrapping tool.ErrInvalidCursor.
func (c *Catalog) ListPrompts(cursor string) (prompts []json.RawMessage, nextCursor string, err error) {
	return c.snap.Load().prompts.list.page(promptsList, cursor, c.pageSize)
}

// GetPrompt checks g.Arguments against the prompt's declared arguments and
// hands the get to the prompt's provider under the provider's own prompt
// name. g.Name is the exposed name. Absent arguments (nil, blank, JSON
// null) are {}, so the provider always gets a JSON object.
//
// Errors:
//   - an unknown name wraps tool.ErrUnknownPrompt;
//   - arguments that are not a JSON object whose values are strings, or
//     that lack an argument the prompt declares "required", wrap
//     tool.ErrBadArguments, naming every problem by JSON pointer
//     (invalid arguments for prompt "p": /who: missing required
//     argument); the provider is not called. Arguments the prompt does
//     not declare pass: the provider decides.
//   - a retry (g.Input not nil) whose prompt another provider than the
//     one that asked for the input (g.Input.Provider) serves now, or none
//     does, wraps tool.ErrGone, naming both; no provider is called;
//   - a provider's *tool.InputRequired is returned as a copy naming the
//     provider (its Provider field); a provider's other error that
//     tool.Typed reports is returned as it is; any other is wrapped
//     naming prompt and provider.
//
// No lock is held while the provider runs.
func (c *Catalog) GetPrompt(ctx context.Context, g *tool.PromptGet) (json.RawMessage, error) {
	if g == nil {
		return nil, errors.New("catalog: nil prompt get")
	}
	s := c.snap.Load()
	r := s.prompts.routes[g.Name]
	if r != nil && g.Guard != nil && !s.sees(g.Guard, promptsIdx, g.Name) {
		r = nil // hidden from this caller: as if unknown
	}
	if g.Input != nil {
		serving := ""
		if r != nil {
			serving = r.p.name
		}
		if err := retryTo(g.Input, fmt.Sprintf("prompt %q", g.Name), serving, "get it again"); err != nil {
			return nil, err
		}
	}
	if r == nil {
		return nil, fmt.Errorf("%w: %q", tool.ErrUnknownPrompt, g.Name)
	}
	fwd := *g
	fwd.Name = r.prompt.name
	if absent(fwd.Arguments) {
		fwd.Arguments = emptyObject
	}
	if msg := r.prompt.check(g.Name, fwd.Arguments); msg != "" {
		return nil, tool.Errorf(tool.ErrBadArguments, "%s", msg)
	}
	if g.Guard != nil {
		if err := g.Guard.Allow(r.item, fwd.Arguments); err != nil {
			return nil, err
		}
	}
	args, err := c.hooks.ask(ctx, tool.BeforeGet, g.Caller, r.item, r.def, fwd.Arguments, nil, func(args json.RawMessage) string {
		return r.prompt.check(g.Name, args)
	})
	if err != nil {
		return nil, err
	}
	fwd.Arguments = args
	res, err := r.p.srv.GetPrompt(ctx, &fwd)
	if err != nil {
		if err = asked(err, r.p.name); !tool.Typed(err) {
			err = fmt.Errorf("prompt %q of provider %q: %w", r.prompt.name, r.p.name, err)
		}
		return nil, err
	}
	if err := checkMessages(res); err != nil {
		return nil, fmt.Errorf("prompt %q of provider %q: %w", r.prompt.name, r.p.name, err)
	}
	return c.hooks.ask(ctx, tool.AfterGet, g.Caller, r.item, r.def, args, res, func(res json.RawMessage) string {
		if err := checkMessages(res); err != nil {
			return err.Error()
		}
		return ""
	})
}

// checkMessages checks a provider's GetPromptResult: a "messages" array
// of objects, each with a string "role" and an object "content".
func checkMessages(res json.RawMessage) error {
	var result struct {
		Messages []struct {
			Role    *string         `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(res, &result); err != nil || result.Messages == nil {
		return errors.New(`the provider's result is not a GetPromptResult (a "messages" array of objects)`)
	}
	for i, m := range result.Messages {
		if m.Role == nil || jsonKind(m.Content) != "object" {
			return fmt.Errorf(`message %d of the provider's result has no string "role" or no object "content"`, i)
		}
	}
	return nil
}

// check returns "" when args (not absent) are a JSON object of strings
// holding every required argument, else a message naming every problem.
func (p *prompt) check(exposed string, args []byte) string {
	header := fmt.Sprintf("invalid arguments for prompt %q", exposed)
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil {
		var v any
		if json.Unmarshal(args, &v) != nil {
			return fmt.Sprintf("%s: not valid JSON: %v", header, err)
		}
		return fmt.Sprintf("%s: arguments must be a JSON object, got %s", header, jsonKind(args))
	}
	if m == nil { // cannot happen: absent arguments are {} by now
		return fmt.Sprintf("%s: arguments must be a JSON object, got null", header)
	}
	var problems []string
	for name, v := range m {
		if k := jsonKind(v); k != "string" {
			problems = append(problems, fmt.Sprintf("%s: must be a string, got %s", pointer(name), k))
		}
	}
	for _, a := range p.args {
		if _, ok := m[a.name]; a.required && !ok {
			problems = append(problems, pointer(a.name)+": missing required argument")
		}
	}
	return explain(header, problems)
}

// pointer is the JSON pointer of a top-level member.
func pointer(name string) string {
	return "/" + strings.ReplaceAll(strings.ReplaceAll(name, "~", "~0"), "/", "~1")
}

// explain returns "" for no problems, else header and the problems,
// sorted, on one line when there is one and as a list otherwise (at most
// argcheck.MaxViolations of them), as argcheck words a tool's.
func explain(header string, problems []string) string {
	switch len(problems) {
	case 0:
		return ""
	case 1:
		return header + ": " + problems[0]
	}
	slices.Sort(problems)
	var b strings.Builder
	b.WriteString(header + ":")
	for i, p := range problems {
		if i == argcheck.MaxViolations {
			fmt.Fprintf(&b, "\n- … and %d more", len(problems)-i)
			break
		}
		b.WriteString("\n- " + p)
	}
	return b.String()
}

// Prompts returns every exposed prompt, sorted by exposed name.
func (c *Catalog) Prompts() []PromptEntry {
	return slices.Clone(c.snap.Load().prompts.entries)
}
