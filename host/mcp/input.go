package mcp

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/internal/jsonrpc"
)

// A provider's requests to the client. A tools/call, resources/read or
// prompts/get whose provider needs the client's input first ends with a
// *tool.InputRequired: the requests it needs (sampling/createMessage,
// elicitation/create, roots/list) by key, and an opaque state. The session
// asks its own client each request, in key order, as real server-to-client
// requests on the call's own stream, and runs the same request on the
// catalog again with the answers (tool.Input), as often as the provider
// asks, up to maxInputRounds times. At most maxWaitingPerSlot×MaxInFlight
// calls of a session are in input rounds at once.

// maxInputRounds is how many times one request may ask for the client's
// input; a provider that asks once more fails the request.
const maxInputRounds = 10

// DefaultInputTimeout is how long the server waits for the client to answer
// one request made for a provider (Options.InputTimeout's default): a user
// may be filling a form.
const DefaultInputTimeout = 10 * time.Minute

// errInputTimeout is the cause of a request to the client that went
// unanswered for the input timeout.
var errInputTimeout = errors.New("the client did not answer in time")

// maxWaitingPerSlot×MaxInFlight is how many calls of a session may be in
// input rounds at once: as many as a session's read loop has workers, and
// as many requests as a Streamable HTTP session may have pending.
const maxWaitingPerSlot = 4

// errInputLimit is the kind of the error that answers a call whose
// provider asked for the client's input while the session had the most
// calls in input rounds it may have (tools/call: an isError result;
// resources/read and prompts/get: -32602). It names the limit.
var errInputLimit = errors.New("too many requests wait for the client's input")

// needsInput reports whether a request's error asks for the client's input.
func needsInput(err error) bool {
	var ir *tool.InputRequired
	return errors.As(err, &ir)
}

// inputRounds answers a call whose provider asked for the client's input
// (err is a *tool.InputRequired) with what its input rounds end with
// (withInput). With own, the call goes on on a goroutine of its own: the
// caller must not wait for the client (a worker of the session's read
// loop, through which the client's answers come; a provider's goroutine).
// A call that would be one more in input rounds than the session's
// maxWaiting is answered at once with an error wrapping errInputLimit;
// its provider is not run again.
func (c *call) inputRounds(res json.RawMessage, err error, own bool) {
	t := &c.s.calls
	if t.waiting.Add(1) > t.maxWaiting {
		t.waiting.Add(-1)
		c.s.srv.limitHit(LimitInputWaiting)
		c.finish(nil, tool.Errorf(errInputLimit, "the provider needs the client's input, but %d requests of this session "+
			"already wait for the client, the most allowed; answer or cancel one of them first", t.maxWaiting))
		return
	}
	rounds := func() {
		res, err := c.withInput(res, err)
		t.waiting.Add(-1) // before the answer: a call after it may ask
		c.finish(res, err)
	}
	if own {
		go rounds()
		return
	}
	rounds()
}

// withInput returns what the call finally answers: res and err as they
// are, unless err is an *tool.InputRequired, which is met (inputRequired)
// and the request run again, for as many rounds as the provider asks. A
// cancelled call returns its context's error (and gets no response).
func (c *call) withInput(res json.RawMessage, err error) (json.RawMessage, error) {
	for round := 1; ; round++ {
		var ir *tool.InputRequired
		if err == nil || !errors.As(err, &ir) {
			return res, err
		}
		if c.ctx.Err() != nil {
			return nil, c.ctx.Err()
		}
		if round > maxInputRounds {
			return nil, fmt.Errorf("the provider asked for the client's input more than %d times for one request, the most allowed", maxInputRounds)
		}
		// The provider does no work while the client is asked (a person may
		// take minutes): the slot goes back meanwhile, and the retry waits
		// for one like any call.
		c.dropSlot()
		in, ierr := c.inputRequired(ir)
		if ierr != nil {
			return nil, ierr
		}
		if !c.slotless && !c.takeSlot() {
			return nil, c.ctx.Err()
		}
		res, err = c.exec(in)
	}
}

// inputRequired meets a provider's need for the client's input in a
// session (every protocol version up to 2025-11-25): the server asks the
// client itself and returns its answers for the retry. A stateless
// request never comes here: its call answers an InputRequiredResult
// instead (statelessInput, inputstate.go).
func (c *call) inputRequired(ir *tool.InputRequired) (*tool.Input, error) {
	return askerOf(c.s).askClient(c.ctx, c.rp.out, ir)
}

// inputRequest is one request a provider asked the client.
type inputRequest struct {
	key    string
	method string
	params json.RawMessage // a compact object; {} when roots/list has none
	mode   string          // elicitation/create's mode; "" for form
}

// askClient asks the session's client the requests of ir, in key order, on
// out, and returns the answers for the retry, with ir's State and
// Provider. A request the client did not
// declare the capability for is not sent: its key gets an InputError
// CodeNotSupported naming the capability. A JSON-RPC error from the client
// becomes the key's InputError. The error return means the request cannot
// go on: the provider's requests are malformed, ctx ended (the call was
// cancelled), the client did not answer within the input timeout (or the
// call's time limit, ir.Timeout, when shorter), or the session is gone.
func (a clientAsker) askClient(ctx context.Context, out Sink, ir *tool.InputRequired) (*tool.Input, error) {
	reqs, err := parseInputRequests(ir.Requests)
	if err != nil {
		return nil, fmt.Errorf("the provider's request for the client's input is malformed: %w", err)
	}
	// The retry must reach the provider that asked: with its name, the
	// catalog can refuse a retry whose route now points at another.
	in := &tool.Input{State: ir.State, Provider: ir.Provider}
	// Each request waits at most the input timeout, and no longer than
	// the call that asked may run.
	limit := a.s.srv.inputTimeout
	if ir.Timeout > 0 && ir.Timeout < limit {
		limit = ir.Timeout
	}
	var answers []byte
	fail := func(key string, code int, msg string) {
		if in.Errors == nil {
			in.Errors = map[string]tool.InputError{}
		}
		in.Errors[key] = tool.InputError{Code: code, Message: msg}
	}
	for _, r := range reqs {
		if why := a.cannotAsk(r); why != "" {
			fail(r.key, tool.CodeNotSupported, why)
			continue
		}
		rctx, cancel := context.WithTimeoutCause(ctx, limit, errInputTimeout)
		res, err := a.requestOn(rctx, out, r.method, r.params)
		cancel()
		var ce *ClientError
		switch {
		case err == nil:
			if answers == nil {
				answers = append(answers, '{')
			} else {
				answers = append(answers, ',')
			}
			answers = jsonrpc.AppendString(answers, r.key)
			answers = append(answers, ':')
			answers, _ = jsonrpc.AppendJSON(answers, res)
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.As(err, &ce):
			fail(r.key, ce.Code, ce.Message)
		case errors.Is(err, errBadAnswer):
			fail(r.key, jsonrpc.CodeInternalError, strings.TrimPrefix(err.Error(), "mcp: "+r.method+": "))
		case errors.Is(err, errInputTimeout):
			return nil, tool.Errorf(tool.ErrTimedOut, "the client did not answer %s (the provider's input request %q) within %v",
				r.method, r.key, limit)
		default:
			return nil, err
		}
	}
	if answers != nil {
		in.Responses = append(answers, '}')
	}
	return in, nil
}

// parseInputRequests reads an InputRequired's requests, sorted by key:
// shorter keys first, keys of one length as strings, so that numeric keys
// (the Go SDK numbers its requests "1", "2", ...) go in numeric order.
func parseInputRequests(raw json.RawMessage) ([]inputRequest, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, fmt.Errorf("the requests are not a JSON object (%.100s)", raw)
	}
	if len(m) == 0 {
		return nil, errors.New("it lists no requests")
	}
	reqs := make([]inputRequest, 0, len(m))
	for key, v := range m {
		var r struct {
			Method *string         `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(v, &r) != nil || !jsonrpc.IsObject(v) {
			return nil, fmt.Errorf("request %q is not a JSON object", key)
		}
		if r.Method == nil {
			return nil, fmt.Errorf("request %q has no method", key)
		}
		ir := inputRequest{key: key, method: *r.Method}
		switch ir.method {
		case "sampling/createMessage", "elicitation/create", "roots/list":
		default:
			return nil, fmt.Errorf("request %q: unknown method %s (want sampling/createMessage, elicitation/create or roots/list)",
				key, strconv.Quote(ir.method))
		}
		switch {
		case r.Params == nil && ir.method == "roots/list":
			ir.params = emptyObject
		case r.Params == nil || !jsonrpc.IsObject(r.Params):
			return nil, fmt.Errorf("request %q (%s): params must be an object", key, ir.method)
		default:
			ir.params, _ = jsonrpc.AppendJSON(nil, r.Params)
		}
		if ir.method == "elicitation/create" {
			if mode := jsonrpc.Member(ir.params, "mode"); mode != nil {
				ir.mode, _ = jsonrpc.Unquote(mode)
				if ir.mode != "form" && ir.mode != "url" {
					return nil, fmt.Errorf("request %q (elicitation/create): mode must be \"form\" or \"url\", not %s", key, mode)
				}
			}
		}
		reqs = append(reqs, ir)
	}
	slices.SortFunc(reqs, func(a, b inputRequest) int {
		if c := cmp.Compare(len(a.key), len(b.key)); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
	return reqs, nil
}

// cannotAsk says why the session's client may not be sent r ("" when it
// may): what it did not declare in initialize, or a protocol version
// without the method.
func (a clientAsker) cannotAsk(r inputRequest) string {
	return cannotAsk(r, &a.s.life.caps, int(a.s.life.version.Load()))
}

// cannotAsk says why a client that declared caps and speaks versions[v]
// (v < 0: the stateless revision, which has all 2025-11-25 has) may not be
// sent r ("" when it may).
func cannotAsk(r inputRequest, caps *clientCaps, v int) string {
	speaks := StatelessVersion
	if v >= 0 {
		speaks = versions[v]
	}
	switch r.method {
	case "sampling/createMessage":
		switch {
		case !caps.sampling:
			return "the client did not declare the sampling capability"
		case jsonrpc.Member(r.params, "tools") == nil && jsonrpc.Member(r.params, "toolChoice") == nil:
		case !caps.samplingTools:
			return "the client did not declare the sampling.tools capability (tools in sampling)"
		case v > vLatest:
			return "tools in sampling need protocol version 2025-11-25; this session speaks " + speaks
		}
	case "elicitation/create":
		switch {
		case v > vElicitation:
			return "elicitation/create is not in protocol version " + speaks + ", which this session speaks"
		case r.mode == "url" && v > vLatest:
			return "URL elicitation needs protocol version 2025-11-25; this session speaks " + speaks
		case r.mode == "url" && !caps.elicitURL:
			return "the client did not declare URL elicitation (the elicitation.url capability)"
		case r.mode != "url" && !caps.elicitForm:
			if caps.elicitURL {
				return "the client did not declare form elicitation (the elicitation.form capability)"
			}
			return "the client did not declare the elicitation capability"
		}
	case "roots/list":
		if !caps.roots {
			return "the client did not declare the roots capability"
		}
	}
	return ""
}
