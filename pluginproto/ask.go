package pluginproto

import (
	"bytes"
	"compress/flate"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/internal/pluginwire"
)

// A handler's requests to the client (sampling, elicitation, roots), in
// the replay style of input rounds: a request the client has not answered
// yet returns ErrInputRequired at once; the SDK then answers the host with
// every such request of the invocation, and the host runs the handler again
// with the answers. Nothing is kept in the process between the rounds: the
// answers of earlier rounds travel in the request state.

var (
	// ErrInputRequired is returned (wrapped) by Elicit, Sample and Roots
	// when the client has not answered the request yet. The handler should
	// return (any result or error: it is dropped); the SDK asks the client
	// for every request the handler made, and runs the handler again with
	// the answers.
	ErrInputRequired = errors.New("the client's input is required first (return from the handler: it runs again with the answer)")
	// ErrClientUnsupported is returned (wrapped, naming the capability) by
	// Elicit, Sample and Roots when the client did not declare the
	// capability the request needs. Nothing was asked. Return it from the
	// handler (wrapped is fine) and the client is told which capability
	// the tool needs: MCP 2026-07-28 answers -32021
	// MissingRequiredClientCapability; older sessions get an isError
	// result naming it. To degrade instead, handle it. (Only a tool
	// handler's error is told so; a prompt's or a resource's fails its
	// request as any error does.)
	ErrClientUnsupported = errors.New("the client did not declare the capability")
)

// ElicitParams asks the user for input through the client: in form mode,
// a form of flat fields described by RequestedSchema; in URL mode (URL
// set), a page the user visits out of band (to sign in, say), whose outcome
// the plugin learns by its own means.
type ElicitParams struct {
	// Message tells the user what is asked and why.
	Message string
	// RequestedSchema is the form's JSON Schema (an object schema of flat
	// primitive properties), in any form Tool.InputSchema accepts. Nil
	// asks for nothing but a confirmation.
	RequestedSchema any
	// URL, when set, asks in URL mode (the client must declare
	// elicitation.url).
	URL string
	// ElicitationID names a URL-mode elicitation; one is made up when
	// empty.
	ElicitationID string
	// Key names the request (and its answer) in the round; empty means the
	// next number, "1", "2", …; keys must be unique within a round. A
	// named key may not be all digits (those are the numbers'): see
	// "Asking the client" in the package doc.
	Key string `json:"-"`
}

// ElicitResult is the user's answer to an elicitation.
type ElicitResult struct {
	// Action is "accept" (the user submitted the form or agreed),
	// "decline" or "cancel" (dismissed without choosing).
	Action string `json:"action"`
	// Content is the submitted form, a JSON object matching the requested
	// schema, when Action is "accept" in form mode.
	Content json.RawMessage `json:"content,omitempty"`
}

// SampleParams asks the client's LLM for a message (sampling).
type SampleParams struct {
	// Messages is the conversation so far.
	Messages []Message `json:"messages"`
	// SystemPrompt is an optional system prompt.
	SystemPrompt string `json:"systemPrompt,omitempty"`
	// MaxTokens bounds the answer; it must be positive.
	MaxTokens int `json:"maxTokens"`
	// Raw, when set, is the whole MCP CreateMessageRequest params as JSON,
	// sent as is instead of the fields above: for what they do not model
	// (modelPreferences, temperature, tools, ...). With tools or
	// toolChoice, the client must declare sampling.tools.
	Raw json.RawMessage `json:"-"`
	// Key names the request (and its answer) in the round; empty means the
	// next number, "1", "2", …; keys must be unique within a round. A
	// named key may not be all digits (those are the numbers'): see
	// "Asking the client" in the package doc.
	Key string `json:"-"`
}

// SampleResult is the client's LLM's answer.
type SampleResult struct {
	// Role is "assistant", usually.
	Role string `json:"role"`
	// Content is one MCP content block, or an array of them.
	Content json.RawMessage `json:"content"`
	// Model names the model that answered.
	Model string `json:"model"`
	// StopReason says why it stopped ("endTurn", "maxTokens", ...), if
	// known.
	StopReason string `json:"stopReason,omitempty"`
}

// Text returns the text of the result's text content blocks, joined.
func (r *SampleResult) Text() string {
	var blocks []textBlock
	if err := json.Unmarshal(r.Content, &blocks); err != nil {
		var one textBlock
		if json.Unmarshal(r.Content, &one) != nil {
			return ""
		}
		blocks = []textBlock{one}
	}
	var b strings.Builder
	for _, c := range blocks {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// Root is one of the client's roots: a directory (file:// URI) the user
// has given the client to work in.
type Root struct {
	URI  string `json:"uri"`
	Name string `json:"name,omitempty"`
}

// asker is one invocation's requests to the client: the answers it has,
// from the request state of earlier rounds and the retry's input, and the
// requests it made that have none yet. The zero value (or nil) is a
// client that declared nothing.
type asker struct {
	caps  json.RawMessage   // the client's capabilities
	input *pluginhost.Input // the retry's answers; nil on the first round

	mu      sync.Mutex
	loaded  bool
	err     error // the input or the request state is malformed
	declare map[string]json.RawMessage
	answers map[string]json.RawMessage // every answer so far, by key
	errs    map[string]InputError
	n       int             // requests made so far without a key of their own
	keys    map[string]bool // the keys of the requests made so far
	misuse  error           // the first request under a key it may not have
	pending []pendingRequest
	done    bool
}

type pendingRequest struct {
	key, method string
	params      json.RawMessage // nil for none
}

// The methods of the three requests.
const (
	methodElicit = "elicitation/create"
	methodSample = "sampling/createMessage"
	methodRoots  = "roots/list"
)

// capability is a client capability a request needs: its name, for
// errors, and where MCP ClientCapabilities declares it: the member top,
// and in it sub ("" for the member itself).
type capability struct {
	name     string // "sampling.tools"
	top, sub string // "sampling", "tools"
}

// The capabilities of the requests.
var (
	capSampling      = capability{"sampling", "sampling", ""}
	capSamplingTools = capability{"sampling.tools", "sampling", "tools"}
	capElicitForm    = capability{"elicitation (form mode)", "elicitation", ""}
	capElicitURL     = capability{"elicitation.url", "elicitation", "url"}
	capRoots         = capability{"roots", "roots", ""}
)

// unsupportedError is the error of a request whose capability the client
// did not declare: it wraps ErrClientUnsupported, and carries the
// capability, so that a tool handler returning it (wrapped or not) answers
// the call with a *CapabilityRequiredError naming it.
type unsupportedError struct {
	method string
	need   capability
}

func (e *unsupportedError) Error() string {
	return fmt.Sprintf("%s: %v %s", e.method, ErrClientUnsupported, e.need.name)
}

func (e *unsupportedError) Unwrap() error { return ErrClientUnsupported }

// load parses the capabilities, the input and the request state, once.
func (a *asker) load() error {
	if a.loaded {
		return a.err
	}
	a.loaded = true
	if len(a.caps) > 0 {
		if err := json.Unmarshal(a.caps, &a.declare); err != nil {
			a.err = fmt.Errorf("%w: the client's capabilities are not a JSON object: %v", ErrInvalidArguments, err)
			return a.err
		}
	}
	if a.input == nil {
		return nil
	}
	st, err := decodeState(a.input.State)
	if err != nil {
		a.err = fmt.Errorf("%w: the retry's request state is malformed: %v", ErrInvalidArguments, err)
		return a.err
	}
	a.answers, a.errs = st.Answers, st.Errors
	var fresh map[string]json.RawMessage
	if len(a.input.Responses) > 0 {
		if err := json.Unmarshal(a.input.Responses, &fresh); err != nil {
			a.err = fmt.Errorf("%w: the retry's responses are not a JSON object: %v", ErrInvalidArguments, err)
			return a.err
		}
	}
	for k, v := range fresh {
		if a.answers == nil {
			a.answers = make(map[string]json.RawMessage)
		}
		a.answers[k] = v
	}
	for k, e := range a.input.Errors {
		if a.errs == nil {
			a.errs = make(map[string]InputError)
		}
		a.errs[k] = e
	}
	return nil
}

// declared reports whether the client declared the capability at path
// (e.g. "sampling", "tools").
func (a *asker) declared(path ...string) bool {
	obj := a.declare
	for i, name := range path {
		v, ok := obj[name]
		if !ok || string(v) == "null" {
			return false
		}
		if i < len(path)-1 {
			obj = nil
			if json.Unmarshal(v, &obj) != nil {
				return false
			}
		}
	}
	return true
}

// ask makes the invocation's next request, under key (the next number
// when empty): it decodes the client's answer with decode if it has one,
// returns its refusal as an *InputError, or returns ErrInputRequired,
// having recorded the request. An answer that decode refuses is no
// answer: the request is asked again. need is the capability the request
// needs, checked by ok.
func (a *asker) ask(ctx context.Context, key, method string, params any, need capability, ok func(*asker) bool, decode func(json.RawMessage) error) error {
	if a == nil {
		a = &asker{}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	k := key
	if k == "" {
		a.n++ // the k-th unnamed request has key k, whatever becomes of it
		k = strconv.Itoa(a.n)
	}
	switch {
	case a.done:
		return fmt.Errorf("%s: asked after the handler returned", method)
	case ctx.Err() != nil:
		return fmt.Errorf("%s: %w", method, ctx.Err())
	case key != "" && strings.Trim(key, "0123456789") == "":
		return a.misused(fmt.Errorf("%s: the key %q is all digits: those are the keys of requests without one (name it otherwise)", method, key))
	case a.keys[k]:
		return a.misused(fmt.Errorf("%s: the key %q names two requests of one round: keys must be unique", method, k))
	}
	if a.keys == nil {
		a.keys = make(map[string]bool)
	}
	a.keys[k] = true
	if err := a.load(); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	if !ok(a) {
		return &unsupportedError{method: method, need: need}
	}
	if res, ok := a.answers[k]; ok {
		if decode(res) == nil {
			return nil
		}
		delete(a.answers, k) // not an answer to this request: ask again
	}
	if e, ok := a.errs[k]; ok {
		return fmt.Errorf("%s: %w", method, &e)
	}
	var b json.RawMessage
	if params != nil {
		var err error
		if b, err = json.Marshal(params); err != nil {
			return fmt.Errorf("%s: params: %w", method, err)
		}
	}
	a.pending = append(a.pending, pendingRequest{key: k, method: method, params: b})
	return fmt.Errorf("%s: %w", method, ErrInputRequired)
}

// misused records err, a request under a key it may not have, which fails
// the invocation whatever the handler returns; it returns err.
func (a *asker) misused(err error) error {
	if a.misuse == nil {
		a.misuse = err
	}
	return err
}

// finish ends the invocation: when it made requests the client has not
// answered yet, it returns them (the first 16: the next round asks the
// rest) as an *InputRequiredError, whose state carries the answers so far
// to the requests it made. A request under a key it may not have fails the invocation: finish
// returns its error.
func (a *asker) finish() error {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.done = true
	if a.misuse != nil {
		return a.misuse
	}
	if len(a.pending) == 0 {
		return nil
	}
	pending := a.pending[:min(len(a.pending), pluginwire.MaxInputRequests)]
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, r := range pending {
		if i > 0 {
			buf.WriteByte(',')
		}
		fmt.Fprintf(&buf, `%q:{"method":%q`, r.key, r.method)
		if r.params != nil {
			buf.WriteString(`,"params":`)
			buf.Write(r.params)
		}
		buf.WriteByte('}')
	}
	buf.WriteByte('}')
	// The state keeps the answers to this round's requests: not those
	// under keys the handler did not ask (the client's extras).
	state, err := encodeState(savedState{Answers: asked(a.answers, a.keys), Errors: asked(a.errs, a.keys)})
	if err != nil {
		return err
	}
	if len(state) > pluginwire.MaxRequestState {
		return fmt.Errorf("the client's answers so far take %d bytes in the request state, over the %d allowed: ask for less", len(state), pluginwire.MaxRequestState)
	}
	return &InputRequiredError{Requests: buf.Bytes(), State: state}
}

// asked returns the entries of m under the keys in keys.
func asked[V any](m map[string]V, keys map[string]bool) map[string]V {
	var out map[string]V
	for k, v := range m {
		if keys[k] {
			if out == nil {
				out = make(map[string]V)
			}
			out[k] = v
		}
	}
	return out
}

// elicit asks the user through the client.
func (a *asker) elicit(ctx context.Context, p ElicitParams) (*ElicitResult, error) {
	var (
		params any
		need   capability
		ok     func(*asker) bool
	)
	if p.URL != "" {
		id := p.ElicitationID
		if id == "" {
			id = rand.Text()
		}
		params = struct {
			Mode          string `json:"mode"`
			Message       string `json:"message"`
			URL           string `json:"url"`
			ElicitationID string `json:"elicitationId"`
		}{"url", p.Message, p.URL, id}
		need, ok = capElicitURL, func(a *asker) bool { return a.declared("elicitation", "url") }
	} else {
		schema, err := objectSchema(p.RequestedSchema)
		if err != nil {
			return nil, fmt.Errorf("%s: RequestedSchema: %w", methodElicit, err)
		}
		if schema == nil {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		params = struct {
			Message         string          `json:"message"`
			RequestedSchema json.RawMessage `json:"requestedSchema"`
		}{p.Message, schema}
		// An elicitation capability without form or url means form only.
		need, ok = capElicitForm, func(a *asker) bool {
			return a.declared("elicitation", "form") || a.declared("elicitation") && !a.declared("elicitation", "url")
		}
	}
	var res ElicitResult
	if err := a.ask(ctx, p.Key, methodElicit, params, need, ok, res.decode); err != nil {
		return nil, err
	}
	return &res, nil
}

// decode decodes b, an ElicitResult: an action of the three, and content
// absent or an object.
func (r *ElicitResult) decode(b json.RawMessage) error {
	*r = ElicitResult{}
	if err := json.Unmarshal(b, r); err != nil {
		return err
	}
	switch {
	case r.Action != "accept" && r.Action != "decline" && r.Action != "cancel":
		return fmt.Errorf("action %q is none of accept, decline and cancel", r.Action)
	case len(r.Content) > 0 && string(r.Content) != "null" && !pluginwire.IsObject(r.Content):
		return fmt.Errorf("content is not an object: %.80s", r.Content)
	}
	return nil
}

// sample asks the client's LLM.
func (a *asker) sample(ctx context.Context, p SampleParams) (*SampleResult, error) {
	var params any = p
	need, ok := capSampling, func(a *asker) bool { return a.declared("sampling") }
	if p.Raw != nil {
		var fields map[string]json.RawMessage
		if !pluginwire.IsObject(p.Raw) || json.Unmarshal(p.Raw, &fields) != nil {
			return nil, fmt.Errorf("%s: Raw is not a JSON object: %.80s", methodSample, p.Raw)
		}
		_, tools := fields["tools"]
		if _, choice := fields["toolChoice"]; tools || choice {
			need, ok = capSamplingTools, func(a *asker) bool { return a.declared("sampling", "tools") }
		}
		params = p.Raw
	} else if p.MaxTokens <= 0 || len(p.Messages) == 0 {
		return nil, fmt.Errorf("%s: SampleParams needs Messages and a positive MaxTokens", methodSample)
	}
	var res SampleResult
	if err := a.ask(ctx, p.Key, methodSample, params, need, ok, res.decode); err != nil {
		return nil, err
	}
	return &res, nil
}

// decode decodes b, a CreateMessageResult: a role, and content that is a
// block or an array of them.
func (r *SampleResult) decode(b json.RawMessage) error {
	*r = SampleResult{}
	if err := json.Unmarshal(b, r); err != nil {
		return err
	}
	switch c := bytes.TrimLeft(r.Content, " \t\r\n"); {
	case r.Role == "":
		return errors.New("no role")
	case len(c) == 0 || c[0] != '{' && c[0] != '[':
		return fmt.Errorf("content is neither a block nor an array of them: %.80s", r.Content)
	}
	return nil
}

// roots asks the client for its roots, under key.
func (a *asker) roots(ctx context.Context, key string) ([]Root, error) {
	var roots []Root
	decode := func(b json.RawMessage) error {
		var res struct {
			Roots *[]Root `json:"roots"`
		}
		if err := json.Unmarshal(b, &res); err != nil {
			return err
		}
		if res.Roots == nil {
			return errors.New("no roots array")
		}
		for _, r := range *res.Roots {
			if r.URI == "" {
				return errors.New("a root without a uri")
			}
		}
		roots = *res.Roots
		return nil
	}
	if err := a.ask(ctx, key, methodRoots, nil, capRoots, func(a *asker) bool { return a.declared("roots") }, decode); err != nil {
		return nil, err
	}
	return roots, nil
}

// savedState is what a request state carries: the answers of every round
// so far.
type savedState struct {
	Answers map[string]json.RawMessage `json:"r,omitempty"`
	Errors  map[string]InputError      `json:"e,omitempty"`
}

// stateVersion prefixes every request state this SDK makes, so that a
// later SDK can tell its own states from these.
const stateVersion = "1."

// maxStateJSON bounds a request state once inflated.
const maxStateJSON = 16 << 20

// encodeState returns st as a request state: "" when it is empty, else
// stateVersion and the base64url of its JSON, deflated.
func encodeState(st savedState) (string, error) {
	if len(st.Answers) == 0 && len(st.Errors) == 0 {
		return "", nil
	}
	b, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, flate.BestCompression) // the level is valid
	_, _ = w.Write(b)                                    // a bytes.Buffer does not fail
	_ = w.Close()
	return stateVersion + base64.RawURLEncoding.EncodeToString(buf.Bytes()), nil
}

// decodeState reverses encodeState.
func decodeState(s string) (savedState, error) {
	var st savedState
	if s == "" {
		return st, nil
	}
	rest, ok := strings.CutPrefix(s, stateVersion)
	if !ok {
		return st, errors.New("not a state of this SDK")
	}
	z, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return st, err
	}
	b, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(z)), maxStateJSON+1))
	if err != nil {
		return st, err
	}
	if len(b) > maxStateJSON {
		return st, errors.New("inflates beyond 16 MiB")
	}
	return st, json.Unmarshal(b, &st)
}
