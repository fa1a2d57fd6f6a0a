package pluginproto

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plughost/plughost/internal/pluginwire"
)

// CompleteFunc suggests values for one argument of a prompt, or one
// variable of a resource template, as the user types it (MCP
// completion/complete). An error wrapping ErrInvalidArguments refuses the
// request with its text; other errors fail it.
type CompleteFunc func(ctx context.Context, req *CompleteRequest) (*Completion, error)

// CompleteRequest is one completion request, as a CompleteFunc sees it.
type CompleteRequest struct {
	// Argument is the name of the prompt argument or template variable
	// being completed: one the prompt or template has.
	Argument string
	// Value is what the user has typed of it so far.
	Value string
	// Context holds the values of the other arguments or variables the
	// user has already filled in (nil when none).
	Context map[string]string
}

// Completion is a CompleteFunc's answer.
type Completion struct {
	// Values are the suggestions, best first. The client is sent at most
	// 100: the SDK drops the rest, and sets HasMore and Total.
	Values []string
	// Total is the number of suggestions there are in all, when known (0:
	// unknown).
	Total int
	// HasMore says that there are more suggestions than Values.
	HasMore bool
}

// maxCompletionValues is the most values a completion may send (MCP).
const maxCompletionValues = 100

// Complete answers a completion/complete in-process exactly as the plugin
// answers the host, and returns the MCP CompleteResult JSON, for tests.
// params are the MCP CompleteRequest params; errors are those of
// the host's Client.Complete (package host/pluginclient).
func (h *hostPlugin) Complete(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	p := (*Plugin)(h)
	res, err := p.complete(ctx, params)
	return local(ctx, "complete", res, err, pluginwire.ErrUnknownReference)
}

// completeParams are the MCP CompleteRequest params.
type completeParams struct {
	Ref struct {
		Type string `json:"type"`
		Name string `json:"name"` // ref/prompt
		URI  string `json:"uri"`  // ref/resource: a URI template
	} `json:"ref"`
	Argument struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"argument"`
	Context struct {
		Arguments map[string]string `json:"arguments"`
	} `json:"context"`
}

// complete answers a completion request. Its error is a gRPC status.
func (p *Plugin) complete(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	if px := p.getProxy(); px != nil {
		var res json.RawMessage
		err := p.guard("completion", func() (err error) {
			res, err = px.Complete(ctx, raw)
			return err
		})
		return res, proxyStatus(err)
	}
	var params completeParams
	if err := json.Unmarshal(raw, &params); err != nil || !pluginwire.IsObject(raw) {
		return nil, status.Errorf(codes.InvalidArgument, "the params are not a CompleteRequest's: %.80s", raw)
	}
	if params.Argument.Name == "" {
		return nil, status.Error(codes.InvalidArgument, "argument.name is missing")
	}
	var (
		f     CompleteFunc
		names []string // the arguments or variables it has
		what  string
	)
	p.mu.RLock()
	switch params.Ref.Type {
	case "ref/prompt":
		what = fmt.Sprintf("prompt %q", params.Ref.Name)
		if e, ok := p.prompts.get(params.Ref.Name); ok {
			f, names = e.complete, []string{}
			for _, a := range e.args {
				names = append(names, a.Name)
			}
		}
	case "ref/resource":
		what = fmt.Sprintf("resource template %q", params.Ref.URI)
		if e, ok := p.templates.get(params.Ref.URI); ok {
			f, names = e.complete, e.tmpl.Varnames()
		}
	default:
		p.mu.RUnlock()
		return nil, status.Errorf(codes.InvalidArgument, "ref type %q is neither ref/prompt nor ref/resource", params.Ref.Type)
	}
	p.mu.RUnlock()
	switch {
	case names == nil:
		return nil, status.Errorf(codes.NotFound, "no %s", what)
	case !slices.Contains(names, params.Argument.Name):
		return nil, status.Errorf(codes.InvalidArgument, "%s has no argument %q", what, params.Argument.Name)
	}
	c := &Completion{}
	if f != nil {
		req := &CompleteRequest{Argument: params.Argument.Name, Value: params.Argument.Value, Context: params.Context.Arguments}
		err := p.guard("completion of "+what, func() (err error) {
			c, err = f(ctx, req)
			return err
		})
		switch {
		case err != nil:
			return nil, handlerStatus(err)
		case c == nil:
			c = &Completion{}
		}
	}
	return c.encode(), nil
}

// encode returns c as MCP CompleteResult JSON, with at most 100 values.
func (c *Completion) encode() []byte {
	out := struct {
		Values  []string `json:"values"`
		Total   int      `json:"total,omitempty"`
		HasMore bool     `json:"hasMore,omitempty"`
	}{c.Values, c.Total, c.HasMore}
	if out.Values == nil {
		out.Values = []string{}
	}
	if n := len(out.Values); n > maxCompletionValues {
		out.Values, out.HasMore, out.Total = out.Values[:maxCompletionValues], true, max(out.Total, n)
	}
	b, _ := json.Marshal(struct {
		Completion any `json:"completion"`
	}{out}) // strings, ints and bools
	return b
}
