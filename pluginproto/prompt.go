package pluginproto

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/internal/pluginwire"
)

// Prompt describes one prompt (a message template the user picks, often as
// a slash command) the way MCP clients see it in prompts/list.
type Prompt struct {
	// Name identifies the prompt: 1 to 128 of [a-zA-Z0-9_.-], as for tools.
	Name string
	// Title is an optional human-readable name.
	Title string
	// Description tells the user what the prompt is for.
	Description string
	// Arguments are the values the user fills in. The SDK refuses a get
	// that lacks a required one, or has a value that is not a string.
	Arguments []PromptArgument
	// Complete, when not nil, completes the arguments' values
	// (completion/complete with a ref/prompt naming the prompt).
	Complete CompleteFunc
}

// PromptArgument is one argument of a prompt.
type PromptArgument struct {
	// Name identifies the argument; it must not be empty.
	Name string `json:"name"`
	// Title is an optional human-readable name.
	Title string `json:"title,omitempty"`
	// Description tells the user what to fill in.
	Description string `json:"description,omitempty"`
	// Required arguments must be given.
	Required bool `json:"required,omitempty"`
}

// PromptHandler renders a prompt. An error wrapping ErrInvalidArguments
// refuses the arguments, its text telling the user why; other errors fail
// the get with their text. A panic fails it too, and the plugin keeps
// running.
type PromptHandler func(ctx context.Context, g *PromptGet) (*PromptResult, error)

// PromptGet is one get of a prompt, as its handler sees it.
type PromptGet struct {
	// Name is the name of the prompt.
	Name string
	// Arguments are the arguments given, every required one among them;
	// never nil.
	Arguments map[string]string
	// Caller is who the get acts for (see Caller); nil for nobody.
	Caller *Caller

	ask *asker
}

// Elicit asks the user, in rounds: see Request.Elicit.
func (g *PromptGet) Elicit(ctx context.Context, p ElicitParams) (*ElicitResult, error) {
	return g.ask.elicit(ctx, p)
}

// Sample asks the client's LLM, in rounds: see Request.Sample.
func (g *PromptGet) Sample(ctx context.Context, p SampleParams) (*SampleResult, error) {
	return g.ask.sample(ctx, p)
}

// Roots asks for the client's roots, in rounds: see Request.Roots.
func (g *PromptGet) Roots(ctx context.Context) ([]Root, error) {
	return g.ask.roots(ctx, "")
}

// RootsKeyed asks for the client's roots under key: see
// Request.RootsKeyed.
func (g *PromptGet) RootsKeyed(ctx context.Context, key string) ([]Root, error) {
	return g.ask.roots(ctx, key)
}

// PromptResult is what a prompt handler returns: an MCP GetPromptResult.
type PromptResult struct {
	// Description is an optional description of the rendered prompt.
	Description string
	// Messages are the conversation the prompt starts.
	Messages []Message
}

// Message is one message of a conversation: of a prompt's result, or of a
// sampling request.
type Message struct {
	// Role is "user" or "assistant".
	Role string `json:"role"`
	// Content is its content: Text, Image, Audio, EmbeddedText, ...
	Content Content `json:"content"`
}

type promptEntry struct {
	json     []byte // the MCP Prompt object
	args     []PromptArgument
	handler  PromptHandler
	complete CompleteFunc
}

type promptJSON struct {
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments,omitempty"`
}

// AddPrompt adds pr, rendered by h, or replaces the prompt of the same name
// (keeping its place in the list). If the plugin is serving, the host is
// told that the prompts changed. AddPrompt panics when pr is invalid (a
// programming error): a name that does not match ^[a-zA-Z0-9_.-]{1,128}$,
// an argument without a name or named twice, or a nil handler.
func (p *Plugin) AddPrompt(pr Prompt, h PromptHandler) {
	if !validName(pr.Name) {
		panic(fmt.Sprintf("pluginproto: AddPrompt: prompt name %q does not match ^[a-zA-Z0-9_.-]{1,128}$", pr.Name))
	}
	if h == nil {
		panic(fmt.Sprintf("pluginproto: AddPrompt: prompt %q has a nil handler", pr.Name))
	}
	seen := make(map[string]bool)
	for _, a := range pr.Arguments {
		if a.Name == "" || seen[a.Name] {
			panic(fmt.Sprintf("pluginproto: AddPrompt: prompt %q has an argument named %q twice or without a name", pr.Name, a.Name))
		}
		seen[a.Name] = true
	}
	args := append([]PromptArgument(nil), pr.Arguments...)
	b, _ := json.Marshal(promptJSON{Name: pr.Name, Title: pr.Title, Description: pr.Description, Arguments: args}) // strings and bools
	p.mu.Lock()
	defer p.mu.Unlock()
	p.prompts.put(pr.Name, &promptEntry{json: b, args: args, handler: h, complete: pr.Complete})
	p.changedLocked(kindPrompts)
}

// RemovePrompt removes the named prompt, if present, and tells the host.
func (p *Plugin) RemovePrompt(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.prompts.remove(name) {
		p.changedLocked(kindPrompts)
	}
}

// Prompts returns the MCP Prompt objects the plugin offers, in the order
// they were added: what the host receives from ListPrompts.
func (p *Plugin) Prompts() []json.RawMessage {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return jsonOf(p.prompts.all(), func(e *promptEntry) json.RawMessage { return e.json })
}

// GetPrompt renders a prompt in-process exactly as a get from the host
// would (argument checks, panics, requests to the client, result encoding)
// and returns its MCP GetPromptResult JSON, for tests. Input rounds and
// AnswerInput are as in CallTool; errors are those of the host's
// Client.GetPrompt (package host/pluginclient).
func (h *hostPlugin) GetPrompt(ctx context.Context, req *pluginhost.PromptRequest) (json.RawMessage, error) {
	p := (*Plugin)(h)
	what := fmt.Sprintf("get prompt %q", req.Name)
	return rounds(what, req.AnswerInput, req.Input, func(in *pluginhost.Input) (json.RawMessage, error) {
		res, err := p.getPrompt(ctx, req.Name, req.Arguments, invocation{caps: req.ClientCapabilities, input: in, caller: req.Caller})
		return local(ctx, what, res, err, ErrUnknownPrompt)
	})
}

// getPrompt renders the named prompt. Its error is an *InputRequiredError
// or a gRPC status.
func (p *Plugin) getPrompt(ctx context.Context, name string, rawArgs json.RawMessage, inv invocation) (json.RawMessage, error) {
	if px := p.getProxy(); px != nil {
		var res json.RawMessage
		err := p.guard(fmt.Sprintf("prompt %q", name), func() (err error) {
			res, err = px.GetPrompt(ctx, name, rawArgs, inv.caps, inv.input)
			return err
		})
		return res, proxyStatus(err)
	}
	p.mu.RLock()
	e, ok := p.prompts.get(name)
	p.mu.RUnlock()
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no prompt %q", name)
	}
	args, err := promptArguments(e.args, rawArgs)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	g := &PromptGet{Name: name, Arguments: args, Caller: inv.caller, ask: inv.asker()}
	var res *PromptResult
	err = p.guard(fmt.Sprintf("prompt %q", name), func() (err error) {
		res, err = e.handler(ctx, g)
		return err
	})
	if err := finished(g.ask, fmt.Sprintf("prompt %q", name)); err != nil {
		return nil, err
	}
	switch {
	case err != nil:
		return nil, handlerStatus(err)
	case res == nil:
		return nil, status.Errorf(codes.Internal, "prompt %q: the handler returned neither a result nor an error", name)
	}
	b, err := res.encode()
	if err != nil {
		p.logger.Error("prompt handler returned an invalid result", "prompt", name, "error", err)
		return nil, status.Errorf(codes.Internal, "prompt %q: the handler returned an invalid result: %v", name, err)
	}
	return b, nil
}

// promptArguments decodes a get's arguments (a JSON object of strings; nil
// means {}) and checks that every required one is there.
func promptArguments(declared []PromptArgument, raw json.RawMessage) (map[string]string, error) {
	if len(raw) == 0 {
		raw = pluginwire.EmptyObject
	}
	var values map[string]json.RawMessage
	if !pluginwire.IsObject(raw) || json.Unmarshal(raw, &values) != nil {
		return nil, fmt.Errorf("the arguments are not a JSON object: %.80s", raw)
	}
	args := make(map[string]string, len(values))
	for name, v := range values {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, fmt.Errorf("argument %q is not a string: %.80s", name, v)
		}
		args[name] = s
	}
	var missing []string
	for _, a := range declared {
		if _, ok := args[a.Name]; a.Required && !ok {
			missing = append(missing, fmt.Sprintf("%q", a.Name))
		}
	}
	switch len(missing) {
	case 0:
		return args, nil
	case 1:
		return nil, fmt.Errorf("missing required argument %s", missing[0])
	}
	return nil, fmt.Errorf("missing required arguments %s", strings.Join(missing, ", "))
}

// encode returns r as MCP GetPromptResult JSON.
func (r *PromptResult) encode() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	if r.Description != "" {
		b, _ := json.Marshal(r.Description)
		buf.WriteString(`"description":`)
		buf.Write(b)
		buf.WriteByte(',')
	}
	buf.WriteString(`"messages":`)
	b, err := encodeMessages(r.Messages)
	if err != nil {
		return nil, err
	}
	buf.Write(b)
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// encodeMessages returns msgs as a JSON array, checking each.
func encodeMessages(msgs []Message) ([]byte, error) {
	for i, m := range msgs {
		if err := m.check(); err != nil {
			return nil, fmt.Errorf("messages[%d]: %w", i, err)
		}
	}
	if msgs == nil {
		msgs = []Message{}
	}
	return json.Marshal(msgs)
}

// check checks m's role and content.
func (m Message) check() error {
	switch {
	case m.Role != "user" && m.Role != "assistant":
		return fmt.Errorf("role %q is neither user nor assistant", m.Role)
	case len(m.Content.raw) == 0:
		return errors.New("zero Content; build blocks with Text, Image, ...")
	case !pluginwire.IsObject(m.Content.raw):
		return fmt.Errorf("content is not a JSON object: %.80s", m.Content.raw)
	}
	return nil
}

// MarshalJSON checks the message (a role of user or assistant, a content
// block) and returns its MCP JSON.
func (m Message) MarshalJSON() ([]byte, error) {
	if err := m.check(); err != nil {
		return nil, fmt.Errorf("pluginproto: Message: %w", err)
	}
	type plain Message
	return json.Marshal(plain(m))
}
