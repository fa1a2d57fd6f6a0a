package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/plughost/plughost/host/tool"
)

// The reference types of completion/complete.
const (
	refPrompt   = "ref/prompt"
	refResource = "ref/resource"
)

// emptyCompletion is the answer of a provider that does not offer
// completions.
const emptyCompletion = `{"completion":{"values":[]}}`

// completeRequest is the part of completion/complete params the catalog
// needs.
type completeRequest struct {
	params  *object // all of them, compacted
	refType string
	ref     *object // params' "ref"
	name    string  // ref's "name" (a prompt) or "uri" (a resource)
	arg     string  // argument's "name"
}

// Complete answers completion/complete. params are the MCP CompleteRequest
// params as the client sent them: a "ref" naming a prompt by its exposed
// name ({"type":"ref/prompt","name":...}) or a resource template by its URI
// template ({"type":"ref/resource","uri":...}), and the "argument" being
// completed ({"name":...,"value":...}); "context" and anything else pass
// through. It routes to:
//
//   - for a prompt: the prompt's provider, with ref's "name" rewritten to
//     the provider's own name;
//   - for a resource template: the provider of the first template (in
//     routing order, as for reads) whose URI template is exactly ref's
//     "uri".
//
// MCP's ref "uri" is "the URI or URI template of the resource", but only a
// template has variables to complete: a "uri" that no template has
// exactly but that a read would reach (a listed resource, or a URI a
// template matches) is refused as invalid params, and no provider is
// asked.
//
// The provider's CompleteResult passes through as bytes. A provider that
// does not offer completions (tool.Offers.Completions) is not asked: the
// answer is an empty completion, {"completion":{"values":[]}}, since
// "nothing to suggest" is true and a client that asks about a listed
// prompt or template made no mistake.
//
// Errors:
//   - params that are not an object with "ref" (with a "type" of
//     "ref/prompt" or "ref/resource" and a string "name" or "uri") and
//     "argument" (with string "name" and "value"), a "context" that is
//     not an object whose "arguments", if any, is an object of strings,
//     an argument the prompt does not declare (or the template has no
//     such variable), or the URI of a resource that is not a template:
//     tool.ErrBadArguments, naming every problem by JSON pointer;
//   - a prompt no provider offers: tool.ErrUnknownPrompt; a "uri" no
//     template has and nothing serves: tool.ErrUnknownResource;
//   - the provider does not know the reference (its error wraps
//     tool.ErrUnknownPrompt or tool.ErrUnknownResource, whichever the
//     reference): an error wrapping the reference's kind alone,
//     tool.ErrUnknownPrompt for a prompt, tool.ErrUnknownResource for a
//     template;
//   - a provider's other error that tool.Typed reports is returned as it
//     is; any other is wrapped naming the reference and the provider.
func (c *Catalog) Complete(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	return c.CompleteFor(ctx, nil, params)
}

// CompleteFor is Complete for the caller of g: a prompt or template g
// hides is answered as an unknown one.
func (c *Catalog) CompleteFor(ctx context.Context, g tool.Guard, params json.RawMessage) (json.RawMessage, error) {
	req, err := parseComplete(params)
	if err != nil {
		return nil, err
	}
	s := c.snap.Load()
	var p *provider
	var what string
	fwd := req.params.json
	switch req.refType {
	case refPrompt:
		r := s.prompts.routes[req.name]
		if r == nil || (g != nil && !s.sees(g, promptsIdx, req.name)) {
			return nil, fmt.Errorf("%w: %q", tool.ErrUnknownPrompt, req.name)
		}
		if !r.prompt.hasArg(req.arg) {
			return nil, badComplete(fmt.Sprintf("/argument/name: prompt %q has no argument %q", req.name, req.arg))
		}
		p, what = r.p, fmt.Sprintf("prompt %q", r.prompt.name)
		ref := setMember(req.ref.json, req.ref.at["name"], "name", []byte(strconv.Quote(r.prompt.name)))
		fwd = setMember(req.params.json, req.params.at["ref"], "ref", ref)
	case refResource:
		t := s.templates.exact[req.name]
		if t != nil && g != nil && !s.sees(g, templatesIdx, templateKey(t.t.uriTemplate, t.p.name)) {
			return nil, fmt.Errorf("%w: no resource or resource template %q", tool.ErrUnknownResource, req.name)
		}
		switch {
		case t != nil:
			if !slices.Contains(t.t.vars, req.arg) {
				return nil, badComplete(fmt.Sprintf("/argument/name: resource template %q has no variable %q", req.name, req.arg))
			}
			p, what = t.p, fmt.Sprintf("resource template %q", req.name)
		case s.serving(req.name, nil) != nil:
			return nil, badComplete(fmt.Sprintf("/ref/uri: %q is the URI of a resource, not a resource template: it has no variables to complete", req.name))
		default:
			return nil, fmt.Errorf("%w: no resource or resource template %q", tool.ErrUnknownResource, req.name)
		}
	default: // cannot happen: parseComplete knows only the two
		return nil, badComplete(fmt.Sprintf("/ref/type: must be %q or %q, got %q", refPrompt, refResource, req.refType))
	}
	if !p.offers.Completions {
		return json.RawMessage(emptyCompletion), nil
	}
	res, err := p.srv.Complete(ctx, fwd)
	if err != nil {
		return nil, completeError(req.refType, what, p.name, err)
	}
	if err := checkCompletion(res); err != nil {
		return nil, fmt.Errorf("completing %s of provider %q: %w", what, p.name, err)
	}
	return res, nil
}

// completeError is what Complete returns for a provider's err about
// what (a reference of refType). A provider's "unknown reference" may
// wrap either tool.ErrUnknownPrompt or tool.ErrUnknownResource whatever
// the reference (a plugin's arrives as ErrUnknownPrompt): it becomes an
// error wrapping the reference's own, ErrUnknownPrompt for a ref/prompt,
// ErrUnknownResource for a ref/resource, and not the other. Other typed
// errors pass as they are; any other is wrapped naming what and the
// provider.
func completeError(refType, what, provider string, err error) error {
	want, other := tool.ErrUnknownPrompt, tool.ErrUnknownResource
	if refType == refResource {
		want, other = other, want
	}
	switch {
	case errors.Is(err, other):
		// Its text, without the other kind's word in front.
		msg, _ := strings.CutPrefix(err.Error(), other.Error()+": ")
		return fmt.Errorf("%w: completing %s of provider %q: %s", want, what, provider, msg)
	case tool.Typed(err):
		return err
	}
	return fmt.Errorf("completing %s of provider %q: %w", what, provider, err)
}

// maxCompletionValues is the most values a CompleteResult may hold (MCP).
const maxCompletionValues = 100

// checkCompletion checks a provider's CompleteResult: a "completion"
// object whose "values" are at most 100 strings.
func checkCompletion(res json.RawMessage) error {
	var result struct {
		Completion *struct {
			Values []string `json:"values"`
		} `json:"completion"`
	}
	if err := json.Unmarshal(res, &result); err != nil || result.Completion == nil || result.Completion.Values == nil {
		return errors.New(`the provider's result is not a CompleteResult (a "completion" object with "values", an array of strings)`)
	}
	if n := len(result.Completion.Values); n > maxCompletionValues {
		return fmt.Errorf("the provider's completion has %d values, more than the %d MCP allows", n, maxCompletionValues)
	}
	return nil
}

// badCompleteHeader starts the message of malformed params.
const badCompleteHeader = "invalid completion/complete params"

func badComplete(problems ...string) error {
	return tool.Errorf(tool.ErrBadArguments, "%s", explain(badCompleteHeader, problems))
}

// parseComplete checks the params' shape, naming every problem.
func parseComplete(params json.RawMessage) (*completeRequest, error) {
	if absent(params) {
		params = emptyObject
	}
	o, err := parseObject("params", params)
	if err != nil {
		return nil, badComplete(err.Error())
	}
	req := &completeRequest{params: o}
	var problems []string
	bad := func(ptr, format string, args ...any) {
		problems = append(problems, ptr+": "+fmt.Sprintf(format, args...))
	}
	// member returns the object at ptr (the member key of o), or nil
	// after noting why it is not one.
	member := func(o *object, ptr, key string, required bool) *object {
		v := o.member(key)
		if v == nil {
			if required {
				bad(ptr, "missing")
			}
			return nil
		}
		if v[0] != '{' {
			bad(ptr, "must be an object, got %s", jsonKind(v))
			return nil
		}
		m, err := parseObject("object", v)
		if err != nil {
			bad(ptr, "%v", err)
			return nil
		}
		return m
	}
	// str returns the string at ptr (the member key of o), noting why
	// it is not one.
	str := func(o *object, ptr, key string) string {
		v := o.member(key)
		var s string
		switch {
		case v == nil:
			bad(ptr, "missing")
		case v[0] != '"' || json.Unmarshal(v, &s) != nil:
			bad(ptr, "must be a string, got %s", jsonKind(v))
		}
		return s
	}

	if ref := member(o, "/ref", "ref", true); ref != nil {
		req.ref = ref
		n := len(problems)
		switch req.refType = str(ref, "/ref/type", "type"); {
		case len(problems) > n:
			// Not a string: noted.
		case req.refType == refPrompt:
			req.name = str(ref, "/ref/name", "name")
		case req.refType == refResource:
			req.name = str(ref, "/ref/uri", "uri")
		default: // "" among them
			bad("/ref/type", "must be %q or %q, got %q", refPrompt, refResource, req.refType)
		}
	}
	if arg := member(o, "/argument", "argument", true); arg != nil {
		req.arg = str(arg, "/argument/name", "name")
		str(arg, "/argument/value", "value")
	}
	if ctx := member(o, "/context", "context", false); ctx != nil {
		if args := member(ctx, "/context/arguments", "arguments", false); args != nil {
			for _, k := range sortedKeys(args.at) {
				str(args, "/context/arguments"+pointer(k), k)
			}
		}
	}
	if len(problems) > 0 {
		return nil, badComplete(problems...)
	}
	return req, nil
}
