package wrapped

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/plughost/plughost/host/wrapped/wire"
	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/pluginproto"
)

// A server of MCP 2025-11-25 and earlier asks the client things (sampling,
// elicitation, roots) in the middle of a request and waits for the answer;
// the plugin contract asks in rounds: the plugin answers InputRequired and
// is run again with the client's answers. An exchange bridges the two: the
// request to the server is started once and held here, in memory, between
// the host's rounds; the requests the server makes meanwhile become a
// round's InputRequired, whose state names the exchange and the round
// (a retry of an earlier round is refused, never taken for the next
// round's answers), and the retry's
// answers are handed back to the server, which goes on.
//
// Which request a server's question belongs to: MCP's stdio transport does
// not say. It is attributed to the one request the server is working on;
// when it works on several at once, the question cannot be attributed and
// is refused (the server gets an error: -32603 naming the ambiguity), since
// handing it to the wrong caller would show one client's question to
// another.
//
// Held means held by this process: a retry that reaches another process
// (another replica of the host, under MCP 2026-07-28, or this plugin after
// a restart) finds nothing and is refused, naming why.

// Bounds of exchanges.
const (
	// maxExchanges bounds the requests in flight and held at once.
	maxExchanges = 1024
	// maxAsksPerRound is the contract's bound on one round's requests.
	maxAsksPerRound = 16
)

// parkTimeout is how long a held request waits for the host's retry: 10
// minutes, the host's own bound on an input round. A variable for tests
// only.
var parkTimeout = 10 * time.Minute

// errNotHeld answers a retry whose exchange this process does not hold.
// errAnswered answers a retry of a round that is not the one the
// exchange waits on: answered already (a duplicated or stale retry), whose
// answers must not be taken for the next round's.
var errAnswered = errors.New("these answers are to a round of the request that was answered already: retry with the state of the last round's input required")

var errNotHeld = errors.New("the request that asked the client is not held by this process (it ended, waited over 10 minutes for the answers, or was served by another replica or an earlier run of the server); make the request again")

type exchange struct {
	id     string
	ctx    context.Context // the request to the server's; ends with the exchange
	cancel context.CancelFunc
	done   chan outcome // the server's answer; buffered
	asks   chan *ask    // the server's questions, attributed to this request

	mu      sync.Mutex
	pending map[string]*ask // asked in the last round, by key; nil when running
	round   int             // the rounds held so far; the state names the last
	park    *time.Timer     // while parked: abandons the exchange
	emit    emitters        // the current round's
}

type emitters struct {
	progress func(progress, total float64, message string)
	log      func(level string, data json.RawMessage)
}

type outcome struct {
	res json.RawMessage
	err error
}

// ask is one question of the server to the client.
type ask struct {
	method string
	params json.RawMessage
	answer chan answer // buffered
}

type answer struct {
	result json.RawMessage
	err    error
}

// exchanges are the requests in flight to the server, by id.
type exchanges struct {
	mu   sync.Mutex
	byID map[string]*exchange
	// others counts the requests to the server outside exchanges that
	// a client caused (completions, subscriptions): while there are any, a
	// question of the server cannot be attributed either. The wrapper's
	// own listing is not among them: no client caused it, so a question
	// asked during it shows no client another's (and the server could ask
	// the same in the call), while counting it refused the one call's
	// question whenever a list_changed had the wrapper relisting.
	others int
}

// outside runs f, a request to the server that is no exchange.
func (xs *exchanges) outside(f func()) {
	xs.mu.Lock()
	xs.others++
	xs.mu.Unlock()
	defer func() {
		xs.mu.Lock()
		xs.others--
		xs.mu.Unlock()
	}()
	f()
}

// start begins a request to the server, run by do with a context that
// outlives the host's round, and returns its exchange.
func (xs *exchanges) start(do func(ctx context.Context, x *exchange) (json.RawMessage, error)) (*exchange, error) {
	var idb [12]byte
	_, _ = rand.Read(idb[:])
	ctx, cancel := context.WithCancel(context.Background())
	x := &exchange{id: hex.EncodeToString(idb[:]), ctx: ctx, cancel: cancel, done: make(chan outcome, 1), asks: make(chan *ask, maxAsksPerRound)}
	xs.mu.Lock()
	if len(xs.byID) >= maxExchanges {
		xs.mu.Unlock()
		cancel()
		return nil, fmt.Errorf("over %d requests in flight to the server at once", maxExchanges)
	}
	if xs.byID == nil {
		xs.byID = make(map[string]*exchange)
	}
	xs.byID[x.id] = x
	xs.mu.Unlock()
	go func() {
		res, err := do(ctx, x)
		x.done <- outcome{res, err}
	}()
	return x, nil
}

// resume finds the exchange a retry names and hands it the client's
// answers.
func (xs *exchanges) resume(in *pluginhost.Input) (*exchange, error) {
	id, round, _ := strings.Cut(in.State, ".")
	xs.mu.Lock()
	x := xs.byID[id]
	xs.mu.Unlock()
	if x == nil {
		return nil, errNotHeld
	}
	var responses map[string]json.RawMessage
	if len(in.Responses) > 0 {
		if err := json.Unmarshal(in.Responses, &responses); err != nil {
			return nil, fmt.Errorf("the client's answers are not a JSON object: %w", err)
		}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.ctx.Err() != nil {
		return nil, errNotHeld // ended meanwhile (end cancels before it takes x.mu)
	}
	if x.pending == nil || round != strconv.Itoa(x.round) {
		return nil, errAnswered
	}
	if x.park != nil {
		x.park.Stop()
		x.park = nil
	}
	for key, a := range x.pending {
		switch r, e := responses[key], in.Errors[key]; {
		case r != nil:
			a.answer <- answer{result: r}
		case e.Code != 0 || e.Message != "":
			a.answer <- answer{err: &wire.Error{Code: int64(e.Code), Message: e.Message}}
		default:
			a.answer <- answer{err: &wire.Error{Code: wire.CodeInternalError, Message: "the client gave no answer"}}
		}
	}
	x.pending = nil
	return x, nil
}

// await waits for the exchange's outcome, or for the server's questions,
// which it returns as an *InputRequiredError (the exchange is then held
// for the retry), or for ctx to end (the request is then cancelled).
func (xs *exchanges) await(ctx context.Context, x *exchange, emit emitters) (json.RawMessage, error) {
	x.mu.Lock()
	x.emit = emit
	x.mu.Unlock()
	defer func() {
		x.mu.Lock()
		x.emit = emitters{}
		x.mu.Unlock()
	}()
	select {
	case o := <-x.done:
		xs.end(x)
		return o.res, o.err
	case a := <-x.asks:
		asks := []*ask{a}
		for len(asks) < maxAsksPerRound {
			select {
			case more := <-x.asks:
				asks = append(asks, more)
				continue
			default:
			}
			break
		}
		return nil, xs.hold(x, asks)
	case <-ctx.Done():
		xs.end(x)
		return nil, ctx.Err()
	}
}

// hold parks x with its questions and returns them as the round's
// InputRequired.
func (xs *exchanges) hold(x *exchange, asks []*ask) error {
	var buf bytes.Buffer
	buf.WriteByte('{')
	x.mu.Lock()
	defer x.mu.Unlock()
	x.pending = make(map[string]*ask, len(asks))
	x.round++
	for i, a := range asks {
		key := fmt.Sprint(i + 1)
		x.pending[key] = a
		if i > 0 {
			buf.WriteByte(',')
		}
		fmt.Fprintf(&buf, `%q:{"method":%q`, key, a.method)
		if len(a.params) > 0 {
			buf.WriteString(`,"params":`)
			buf.Write(a.params)
		}
		buf.WriteByte('}')
	}
	buf.WriteByte('}')
	x.park = time.AfterFunc(parkTimeout, func() { xs.end(x) })
	return &pluginproto.InputRequiredError{Requests: buf.Bytes(), State: x.id + "." + strconv.Itoa(x.round)}
}

// end forgets x and cancels its request to the server, if still running;
// questions still waiting are answered with an error.
func (xs *exchanges) end(x *exchange) {
	xs.mu.Lock()
	delete(xs.byID, x.id)
	xs.mu.Unlock()
	x.cancel()
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.park != nil {
		x.park.Stop()
		x.park = nil
	}
	for _, a := range x.pending {
		a.answer <- answer{err: &wire.Error{Code: wire.CodeInternalError, Message: "the request was given up before the client answered"}}
	}
	x.pending = nil
}

// only returns the one exchange in flight, or nil and how many requests
// to the server there are (with any outside exchanges, none is the only
// one).
func (xs *exchanges) only() (*exchange, int) {
	xs.mu.Lock()
	defer xs.mu.Unlock()
	if len(xs.byID) != 1 || xs.others > 0 {
		return nil, len(xs.byID) + xs.others
	}
	for _, x := range xs.byID {
		return x, 1
	}
	return nil, 0
}

func (xs *exchanges) get(id string) *exchange {
	xs.mu.Lock()
	defer xs.mu.Unlock()
	return xs.byID[id]
}

// ask puts the server's question to the client through the one request in
// flight, and waits for the answer (or for ctx, or the request, to end).
func (xs *exchanges) ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	x, n := xs.only()
	if x == nil {
		return nil, &wire.Error{Code: wire.CodeInternalError, Message: fmt.Sprintf(
			"plughost cannot pass this %s to a client: it serves %d requests of this server at once, and cannot tell which one asks", method, n)}
	}
	a := &ask{method: method, params: params, answer: make(chan answer, 1)}
	select {
	case x.asks <- a:
	default:
		return nil, &wire.Error{Code: wire.CodeInternalError, Message: fmt.Sprintf("over %d questions to the client at once", maxAsksPerRound)}
	}
	select {
	case r := <-a.answer:
		return r.result, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-x.ctx.Done():
		return nil, &wire.Error{Code: wire.CodeInternalError, Message: "the request was given up before the client answered"}
	}
}

// emitters returns the current round's emitters of the exchange id ("" or
// unknown: the one in flight, if only one is).
func (xs *exchanges) emitters(id string) (emitters, bool) {
	x := xs.get(id)
	if x == nil && id == "" {
		x, _ = xs.only()
	}
	if x == nil {
		return emitters{}, false
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.emit, x.emit.log != nil || x.emit.progress != nil
}
