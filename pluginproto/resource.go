package pluginproto

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"runtime/debug"
	"strings"

	"github.com/yosida95/uritemplate/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/internal/pluginwire"
)

// Resource describes one resource the way MCP clients see it in
// resources/list.
type Resource struct {
	// URI identifies the resource: an absolute URI (file:///..., a scheme
	// of the plugin's own, ...).
	URI string
	// Name identifies it to programs, and to people when it has no Title.
	Name string
	// Title is an optional human-readable name.
	Title string
	// Description tells the model what the resource holds.
	Description string
	// MIMEType is the type of its contents, if known; it is also the
	// default of each ResourceContents.MIMEType the handler leaves empty.
	MIMEType string
	// Size is the size of its raw contents in bytes, if known.
	Size *int64
	// Annotations are optional hints for the client.
	Annotations *ResourceAnnotations
}

// ResourceAnnotations are hints to the client about a resource.
type ResourceAnnotations struct {
	// Audience says who the resource is for: "user", "assistant" or both.
	Audience []string `json:"audience,omitempty"`
	// Priority is how important it is, from 0 (optional) to 1 (required).
	Priority *float64 `json:"priority,omitempty"`
	// LastModified is when it last changed, in ISO 8601
	// ("2025-01-12T15:00:58Z").
	LastModified string `json:"lastModified,omitempty"`
}

// ResourceTemplate describes a family of resources by an RFC 6570 URI
// template, the way MCP clients see it in resources/templates/list. A read
// of a URI the template matches (and no listed resource has) goes to its
// handler, with the template's variables.
type ResourceTemplate struct {
	// URITemplate is the RFC 6570 template: "file:///{+path}",
	// "users://{id}/profile", ...
	URITemplate string
	// Name, Title, Description, MIMEType and Annotations are as in
	// Resource, for every resource of the family.
	Name        string
	Title       string
	Description string
	MIMEType    string
	Annotations *ResourceAnnotations
	// Complete, when not nil, completes the template's variables
	// (completion/complete with a ref/resource naming URITemplate).
	Complete CompleteFunc
}

// ResourceHandler reads one resource. An error wrapping ErrUnknownResource
// tells the client there is no such resource (for a URI a template matched
// that names nothing); other errors fail the read with their text. A panic
// fails it too, and the plugin keeps running.
type ResourceHandler func(ctx context.Context, r *ResourceRead) (*ResourceResult, error)

// ResourceRead is one read of a resource, as its handler sees it.
type ResourceRead struct {
	// URI is the URI the client reads.
	URI string
	// Vars are the values of the template's variables, when URI matched a
	// ResourceTemplate (a list's items joined by commas); nil for a listed
	// Resource.
	Vars map[string]string
	// Caller is who the read acts for (see Caller); nil for nobody.
	Caller *Caller

	ask *asker
}

// Elicit asks the user, in rounds: see Request.Elicit.
func (r *ResourceRead) Elicit(ctx context.Context, p ElicitParams) (*ElicitResult, error) {
	return r.ask.elicit(ctx, p)
}

// Sample asks the client's LLM, in rounds: see Request.Sample.
func (r *ResourceRead) Sample(ctx context.Context, p SampleParams) (*SampleResult, error) {
	return r.ask.sample(ctx, p)
}

// Roots asks for the client's roots, in rounds: see Request.Roots.
func (r *ResourceRead) Roots(ctx context.Context) ([]Root, error) {
	return r.ask.roots(ctx, "")
}

// RootsKeyed asks for the client's roots under key: see
// Request.RootsKeyed.
func (r *ResourceRead) RootsKeyed(ctx context.Context, key string) ([]Root, error) {
	return r.ask.roots(ctx, key)
}

// ResourceResult is what a resource handler returns: an MCP
// ReadResourceResult.
type ResourceResult struct {
	// Contents are the resource's contents: usually one; a directory, say,
	// may return one per file.
	Contents []ResourceContents
}

// ResourceContents is the contents of one resource: text, or binary data
// (Blob).
type ResourceContents struct {
	// URI is the URI of these contents; empty means the URI read.
	URI string
	// MIMEType is their type; empty means the MIMEType of the Resource or
	// ResourceTemplate, if any.
	MIMEType string
	// Text is the contents, when they are text.
	Text string
	// Blob, when not nil, is the contents as binary data (sent base64
	// encoded); Text must then be empty.
	Blob []byte
}

// TextContents returns a result of one text contents, of the URI read.
// mimeType may be empty.
func TextContents(mimeType, text string) *ResourceResult {
	return &ResourceResult{Contents: []ResourceContents{{MIMEType: mimeType, Text: text}}}
}

// BlobContents returns a result of one binary contents, of the URI read.
// mimeType may be empty.
func BlobContents(mimeType string, data []byte) *ResourceResult {
	return &ResourceResult{Contents: []ResourceContents{{MIMEType: mimeType, Blob: nonNil(data)}}}
}

type resourceEntry struct {
	json     []byte // the MCP Resource object
	mimeType string
	handler  ResourceHandler
}

type templateEntry struct {
	json     []byte // the MCP ResourceTemplate object
	tmpl     *uritemplate.Template
	mimeType string
	handler  ResourceHandler
	complete CompleteFunc
}

type resourceJSON struct {
	URI         string               `json:"uri,omitempty"`
	URITemplate string               `json:"uriTemplate,omitempty"`
	Name        string               `json:"name"`
	Title       string               `json:"title,omitempty"`
	Description string               `json:"description,omitempty"`
	MIMEType    string               `json:"mimeType,omitempty"`
	Size        *int64               `json:"size,omitempty"`
	Annotations *ResourceAnnotations `json:"annotations,omitempty"`
}

// AddResource adds r, read by h, or replaces the resource of the same URI
// (keeping its place in the list). If the plugin is serving, the host is
// told that the resources changed. AddResource panics when r is invalid (a
// programming error): a URI that is not absolute, an empty name or a nil
// handler.
func (p *Plugin) AddResource(r Resource, h ResourceHandler) {
	u, err := url.Parse(r.URI)
	switch {
	case err != nil || u.Scheme == "":
		panic(fmt.Sprintf("pluginproto: AddResource: URI %q is not an absolute URI", r.URI))
	case r.Name == "":
		panic(fmt.Sprintf("pluginproto: AddResource: resource %q has no name", r.URI))
	case h == nil:
		panic(fmt.Sprintf("pluginproto: AddResource: resource %q has a nil handler", r.URI))
	}
	b, err := json.Marshal(resourceJSON{URI: r.URI, Name: r.Name, Title: r.Title, Description: r.Description,
		MIMEType: r.MIMEType, Size: r.Size, Annotations: r.Annotations})
	if err != nil {
		panic("pluginproto: AddResource: " + err.Error()) // a NaN priority
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.resources.put(r.URI, &resourceEntry{json: b, mimeType: r.MIMEType, handler: h})
	p.changedLocked(kindResources)
}

// RemoveResource removes the resource of that URI, if present, and tells
// the host. Reads already running finish normally.
func (p *Plugin) RemoveResource(uri string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resources.remove(uri) {
		p.changedLocked(kindResources)
	}
}

// AddResourceTemplate adds t, whose resources h reads, or replaces the
// template of the same URITemplate (keeping its place). Reads try the
// listed resources first, then the templates in the order they were added.
// If the plugin is serving, the host is told that the resources changed.
// AddResourceTemplate panics when t is invalid: a URITemplate that is not
// an RFC 6570 template, an empty name or a nil handler.
func (p *Plugin) AddResourceTemplate(t ResourceTemplate, h ResourceHandler) {
	tmpl, err := uritemplate.New(t.URITemplate)
	switch {
	case err != nil:
		panic(fmt.Sprintf("pluginproto: AddResourceTemplate: %q is not a URI template: %v", t.URITemplate, err))
	case t.Name == "":
		panic(fmt.Sprintf("pluginproto: AddResourceTemplate: template %q has no name", t.URITemplate))
	case h == nil:
		panic(fmt.Sprintf("pluginproto: AddResourceTemplate: template %q has a nil handler", t.URITemplate))
	}
	b, err := json.Marshal(resourceJSON{URITemplate: t.URITemplate, Name: t.Name, Title: t.Title,
		Description: t.Description, MIMEType: t.MIMEType, Annotations: t.Annotations})
	if err != nil {
		panic("pluginproto: AddResourceTemplate: " + err.Error())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.templates.put(t.URITemplate, &templateEntry{json: b, tmpl: tmpl, mimeType: t.MIMEType, handler: h, complete: t.Complete})
	p.changedLocked(kindResources)
}

// RemoveResourceTemplate removes the template, if present, and tells the
// host.
func (p *Plugin) RemoveResourceTemplate(uriTemplate string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.templates.remove(uriTemplate) {
		p.changedLocked(kindResources)
	}
}

// ResourceUpdated reports that the contents of the resource at uri changed.
// The host hears of it only when it subscribed to uri (for a client that
// did); otherwise ResourceUpdated does nothing. Reports are coalesced like
// changes of the lists.
func (p *Plugin) ResourceUpdated(uri string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.subs[uri]; ok {
		p.updates++
		p.subs[uri] = p.updates
		p.signalLocked()
	}
}

// Resources returns the MCP Resource objects the plugin offers, in the
// order they were added: what the host receives from ListResources.
func (p *Plugin) Resources() []json.RawMessage {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return jsonOf(p.resources.all(), func(e *resourceEntry) json.RawMessage { return e.json })
}

// ResourceTemplates returns the MCP ResourceTemplate objects the plugin
// offers, in the order they were added.
func (p *Plugin) ResourceTemplates() []json.RawMessage {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return jsonOf(p.templates.all(), func(e *templateEntry) json.RawMessage { return e.json })
}

// ReadResource reads a resource in-process exactly as a read from the host
// would (template matching, panics, requests to the client, result
// encoding) and returns its MCP ReadResourceResult JSON, for tests. Input
// rounds and AnswerInput are as in CallTool; errors are those of
// the host's Client.ReadResource (package host/pluginclient).
func (h *hostPlugin) ReadResource(ctx context.Context, req *pluginhost.ReadRequest) (json.RawMessage, error) {
	p := (*Plugin)(h)
	what := fmt.Sprintf("read resource %q", req.URI)
	return rounds(what, req.AnswerInput, req.Input, func(in *pluginhost.Input) (json.RawMessage, error) {
		res, err := p.read(ctx, req.URI, invocation{caps: req.ClientCapabilities, input: in, caller: req.Caller})
		return local(ctx, what, res, err, ErrUnknownResource)
	})
}

// findResource returns the handler of uri and, when a template matched,
// its variables; ok is false when nothing has uri.
func (p *Plugin) findResource(uri string) (h ResourceHandler, vars map[string]string, mimeType string, ok bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if e, ok := p.resources.get(uri); ok {
		return e.handler, nil, e.mimeType, true
	}
	for _, t := range p.templates.all() {
		values := t.tmpl.Match(uri)
		if values == nil {
			continue
		}
		vars = make(map[string]string, len(values))
		for name, v := range values {
			vars[name] = strings.Join(v.V, ",")
		}
		return t.handler, vars, t.mimeType, true
	}
	return nil, nil, "", false
}

// read reads the resource at uri. Its error is an *InputRequiredError or a
// gRPC status.
func (p *Plugin) read(ctx context.Context, uri string, inv invocation) (json.RawMessage, error) {
	if px := p.getProxy(); px != nil {
		var res json.RawMessage
		err := p.guard("resource "+uri, func() (err error) {
			res, err = px.ReadResource(ctx, uri, inv.caps, inv.input)
			return err
		})
		return res, proxyStatus(err)
	}
	h, vars, mimeType, ok := p.findResource(uri)
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no resource %q", uri)
	}
	r := &ResourceRead{URI: uri, Vars: vars, Caller: inv.caller, ask: inv.asker()}
	var res *ResourceResult
	err := p.guard("resource "+uri, func() (err error) {
		res, err = h(ctx, r)
		return err
	})
	if err := finished(r.ask, "resource "+uri); err != nil {
		return nil, err
	}
	switch {
	case err != nil:
		return nil, handlerStatus(err)
	case res == nil:
		return nil, status.Errorf(codes.Internal, "resource %q: the handler returned neither a result nor an error", uri)
	}
	b, err := res.encode(uri, mimeType)
	if err != nil {
		p.logger.Error("resource handler returned an invalid result", "uri", uri, "error", err)
		return nil, status.Errorf(codes.Internal, "resource %q: the handler returned an invalid result: %v", uri, err)
	}
	return b, nil
}

// encode returns r as MCP ReadResourceResult JSON; contents without a URI
// or MIME type get uri and mimeType.
func (r *ResourceResult) encode(uri, mimeType string) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(`{"contents":[`)
	for i, c := range r.Contents {
		if i > 0 {
			buf.WriteByte(',')
		}
		u, m := c.URI, c.MIMEType
		if u == "" {
			u = uri
		}
		if m == "" {
			m = mimeType
		}
		var v any = textResource{URI: u, MIMEType: m, Text: c.Text}
		if c.Blob != nil {
			if c.Text != "" {
				return nil, fmt.Errorf("contents[%d] has both Text and Blob", i)
			}
			v = blobResource{URI: u, MIMEType: m, Blob: c.Blob}
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("contents[%d]: %w", i, err)
		}
		buf.Write(b)
	}
	buf.WriteString(`]}`)
	return buf.Bytes(), nil
}

// guard runs f, turning a panic into an error (logged with its stack).
func (p *Plugin) guard(what string, f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			p.logger.Error("handler panicked", "handler", what, "panic", fmt.Sprint(v), "stack", stack())
			err = fmt.Errorf("%s panicked: %v", what, v)
		}
	}()
	return f()
}

// handlerStatus is the gRPC status of a resource, prompt or completion
// handler's error: NOT_FOUND for ErrUnknownResource, ErrUnknownPrompt and
// pluginwire.ErrUnknownReference, INVALID_ARGUMENT for ErrInvalidArguments (the
// message without the sentinel's text, which the host adds), UNKNOWN for
// anything else.
func handlerStatus(err error) error {
	for _, c := range []struct {
		sentinel error
		code     codes.Code
	}{
		{ErrUnknownResource, codes.NotFound},
		{ErrUnknownPrompt, codes.NotFound},
		{pluginwire.ErrUnknownReference, codes.NotFound},
		{ErrInvalidArguments, codes.InvalidArgument},
	} {
		if errors.Is(err, c.sentinel) {
			return status.Error(c.code, strings.TrimPrefix(err.Error(), c.sentinel.Error()+": "))
		}
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.Error(codes.Unknown, err.Error())
}

// finished ends an invocation of a resource or prompt handler: an
// *InputRequiredError when it asked the client for something not answered
// yet, an INTERNAL status when that cannot be (its state is too large).
func finished(a *asker, what string) error {
	err := a.finish()
	if ir := (*InputRequiredError)(nil); err == nil || errors.As(err, &ir) {
		return err
	}
	return status.Errorf(codes.Internal, "%s: %v", what, err)
}

func stack() string { return string(debug.Stack()) }

// local is what a host's Client would make of an answer of the plugin's
// (res, or err: an *InputRequiredError or a gRPC status), for the
// in-process helpers.
func local(ctx context.Context, what string, res json.RawMessage, err error, notFound error) (json.RawMessage, error) {
	if ir := (*InputRequiredError)(nil); errors.As(err, &ir) {
		return nil, ir
	}
	if err != nil {
		return nil, pluginwire.UnaryError(ctx, nil, what, err, notFound)
	}
	return pluginwire.Result(what, res)
}
