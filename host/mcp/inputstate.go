package mcp

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/plughost/plughost/host/mcp/sealed"
	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/internal/jsonrpc"
)

// A provider's need for the client's input, in the stateless revision
// (multi-round-trip requests, SEP-2322). The server does not ask the
// client itself: it answers the request with an InputRequiredResult (the
// provider's requests, and a requestState), and the client sends the same
// request again with inputResponses and that requestState, possibly to
// another replica. Nothing is kept in the process between the rounds: the
// requestState holds all the retry needs (the provider that asked, its own
// opaque state, how many rounds came before), sealed with the key every
// replica shares (Options.StateSealer): authenticated and encrypted, bound
// to the method, the tool, prompt or resource of the request and its
// arguments, and to the caller (callerKey, taskowner.go), valid for
// Options.StateTTL. A requestState that does not open (altered, sealed
// with another key, for another request or caller, expired, or too long),
// or was made for other arguments, is -32602 naming why; the provider is
// not run.

// DefaultStateTTL is how long a requestState stays valid when
// Options.StateTTL is 0: how long a client has to answer an input request
// (a person may be filling a form).
const DefaultStateTTL = 15 * time.Minute

// inputState is what a requestState carries, sealed.
type inputState struct {
	// Provider is the provider that asked: the retry goes to it or fails.
	Provider string `json:"p"`
	// State is the provider's own opaque state.
	State string `json:"s,omitempty"`
	// Round counts the input rounds so far (1 after the first).
	Round int `json:"r"`
	// Errors are the provider's requests that were not sent to the client
	// (it did not declare the capability), by key: the retry hands them to
	// the provider with the client's answers.
	Errors map[string]tool.InputError `json:"e,omitempty"`
	// Args is the digest of the request's arguments (argsDigest): the
	// client's answers were given for those, and a retry with others (a
	// confirmation of one deletion reused for another) is refused.
	Args string `json:"a"`
}

// argsDigest is the digest of a request's arguments (a tools/call's or a
// prompts/get's; absent or null is {}), independent of the order of an
// object's members and of white space.
func argsDigest(args []byte) string {
	var v any
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber() // numbers as written: no rounding through float64
	if len(bytes.TrimSpace(args)) == 0 || dec.Decode(&v) != nil || v == nil {
		v = map[string]any{}
	}
	canon, _ := json.Marshal(v) // maps marshal with sorted keys
	sum := sha256.Sum256(canon)
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

// statePurpose binds a sealed state to the request it was made for and to
// its caller (callerKey): a state sealed for one tool opens for no other,
// nor for a prompt, nor for another caller replaying it with answers of
// its own.
func statePurpose(method, target, caller string) string {
	return "plughost/input-state/v2\x00" + method + "\x00" + target + "\x00" + caller
}

// retryInput reads the retry of a stateless request (method on target):
// the client's inputResponses and the requestState the server sealed. It
// returns nil and round 0 for a first request (neither present). The
// client may send inputResponses without a requestState (the revision
// lets a provider that keeps no state be answered so): they go to
// whichever provider serves the request, with no state, and the provider
// takes what it recognizes (asking again for what is missing).
// inputResponses that are not an object of objects (null included), a
// requestState that is not a string or does not open, are -32602 naming
// the problem; the provider is not run.
func retryInput(sess *Session, in incoming, method, target string) (*tool.Input, int, *jsonrpc.Error) {
	srv, params := sess.srv, in.msg.Params
	stateRaw, respRaw := jsonrpc.Member(params, "requestState"), jsonrpc.Member(params, "inputResponses")
	var responses json.RawMessage
	if respRaw != nil {
		if !jsonrpc.IsObject(respRaw) {
			return nil, 0, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: inputResponses must be an object (key → the client's result)")
		}
		for k, v := range jsonrpc.Members(respRaw) {
			if !jsonrpc.IsObject(v) {
				key, _ := jsonrpc.Unquote(k)
				return nil, 0, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: inputResponses["+strconv.Quote(key)+
					"] is not an object (a CreateMessageResult, ElicitResult or ListRootsResult)")
			}
		}
		responses, _ = jsonrpc.AppendJSON(nil, respRaw) // the transport's bytes: copy
	}
	if stateRaw == nil {
		if responses == nil {
			return nil, 0, nil
		}
		return &tool.Input{Responses: responses}, 0, nil
	}
	sealedState, ok := jsonrpc.Unquote(stateRaw)
	if !ok {
		return nil, 0, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: requestState must be a string")
	}
	payload, err := srv.sealer.Open(statePurpose(method, target, callerKey(&sess.conn.Peer.Caller)), sealedState)
	if err != nil {
		var why string
		switch {
		case errors.Is(err, sealed.ErrExpired):
			why = "it has expired (a client has " + srv.tuned().stateTTL.String() + " to answer); send the request again without it"
		case errors.Is(err, sealed.ErrTooLarge):
			why = "it is longer than " + strconv.Itoa(sealed.MaxSealed) + " bytes"
		default:
			why = "it fails the integrity check: it was altered, or made for another request, for another caller or by a server with another key"
		}
		return nil, 0, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: requestState is not valid: "+why)
	}
	var st inputState
	if err := json.Unmarshal(payload, &st); err != nil {
		return nil, 0, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: requestState is not valid: its contents do not decode")
	}
	if st.Args != argsDigest(jsonrpc.Member(params, "arguments")) {
		return nil, 0, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: requestState was made for other arguments: "+
			"send the request again with the arguments it had, or without requestState to start over")
	}
	return &tool.Input{Responses: responses, State: st.State, Provider: st.Provider, Errors: st.Errors}, st.Round, nil
}

// statelessInput answers a stateless request whose provider needs the
// client's input (err is a *tool.InputRequired), as inputRequiredResult
// says; when none of the provider's requests may go to the client, the
// provider is run again at once with an InputError for each (as a session
// does), for as many rounds as it asks. With own, this goes on on a
// goroutine of its own (the caller is a provider's, which must not wait
// for that provider).
func (c *call) statelessInput(err error, own bool) {
	rounds := func() {
		for {
			res, ferr, again := c.inputRequiredResult(err)
			if again == nil {
				c.own = res != nil // the host's InputRequiredResult: sent as built
				c.finish(res, ferr)
				return
			}
			c.round++
			res, err = c.exec(again)
			if err == nil || !needsInput(err) {
				c.finish(res, err)
				return
			}
		}
	}
	if own {
		go rounds()
		return
	}
	rounds()
}

// inputRequiredResult answers a stateless request whose provider needs
// the client's input (err is a *tool.InputRequired) with an
// InputRequiredResult: the requests the client can answer, and the sealed
// state. The provider's requests are checked as in a session: one the
// client did not declare the capability for (or whose method its version
// lacks) is not sent; its key gets an InputError tool.CodeNotSupported
// naming the capability, sealed into the state for the retry. When no
// request is left to send, again is the input to run the provider with at
// once. A request past maxInputRounds rounds fails.
func (c *call) inputRequiredResult(err error) (res json.RawMessage, ferr error, again *tool.Input) {
	var ir *tool.InputRequired
	errors.As(err, &ir)
	if c.round >= maxInputRounds {
		return nil, errors.New("the provider asked for the client's input more than " + strconv.Itoa(maxInputRounds) + " times for one request, the most allowed"), nil
	}
	all, perr := parseInputRequests(ir.Requests)
	if perr != nil {
		return nil, errors.New("the provider's request for the client's input is malformed: " + perr.Error()), nil
	}
	var reqs []inputRequest
	var refused map[string]tool.InputError
	for _, r := range all {
		if why := cannotAsk(r, &c.st.caps, -1); why != "" {
			if refused == nil {
				refused = map[string]tool.InputError{}
			}
			refused[r.key] = tool.InputError{Code: tool.CodeNotSupported, Message: why}
			continue
		}
		reqs = append(reqs, r)
	}
	if len(reqs) == 0 {
		return nil, nil, &tool.Input{State: ir.State, Provider: ir.Provider, Errors: refused}
	}
	payload, _ := json.Marshal(inputState{Provider: ir.Provider, State: ir.State, Round: c.round + 1, Errors: refused, Args: c.argsDigest()})
	method, target := c.target()
	state, serr := c.s.srv.sealer.Seal(statePurpose(method, target, callerKey(&c.s.conn.Peer.Caller)), payload, c.s.srv.tuned().stateTTL)
	if serr != nil {
		return nil, errors.New("the provider's state cannot be sealed into requestState: " + serr.Error()), nil
	}
	b := []byte(`{"resultType":"input_required","inputRequests":{`)
	for i, r := range reqs {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonrpc.AppendString(b, r.key)
		b = append(b, `:{"method":`...)
		b = jsonrpc.AppendString(b, r.method)
		b = append(b, `,"params":`...)
		b = append(b, r.params...)
		b = append(b, '}')
	}
	b = append(b, `},"requestState":`...)
	b = jsonrpc.AppendString(b, state)
	return append(b, '}'), nil, nil
}

// argsDigest is the digest of the call's arguments (a read has none).
func (c *call) argsDigest() string {
	switch op := c.op.(type) {
	case nil:
		return argsDigest(c.tc.Arguments)
	case *promptOp:
		return argsDigest(op.g.Arguments)
	}
	return argsDigest(nil)
}

// target returns the method of the call's request and the tool, prompt or
// resource it names.
func (c *call) target() (method, target string) {
	switch op := c.op.(type) {
	case nil:
		return "tools/call", c.tc.Name
	case *readOp:
		return "resources/read", op.r.URI
	case *promptOp:
		return "prompts/get", op.g.Name
	}
	return "", ""
}
