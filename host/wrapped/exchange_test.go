package wrapped

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/plughost/plughost/host/wrapped/wire"

	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/pluginproto"
)

// wait bounds every wait of these tests: a test that does not get what it
// waits for fails instead of hanging.
const wait = 10 * time.Second

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		t.Fatalf("no %s within %v", what, wait)
	}
	panic("unreachable")
}

// eventually polls cond until it holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, wait)
		}
		time.Sleep(time.Millisecond)
	}
}

type asked struct {
	res json.RawMessage
	err error
}

// asking starts an exchange whose request asks the client method with
// params (as a server does in the middle of a request) and then answers
// with what the client answered; the question's outcome is also sent on
// the returned channel. The question has a context of its own, as the
// server's request to the client has (not the exchange's).
func asking(t *testing.T, xs *exchanges, method, params string) (*exchange, <-chan asked) {
	t.Helper()
	got := make(chan asked, 1)
	x, err := xs.start(func(context.Context, *exchange) (json.RawMessage, error) {
		res, err := xs.ask(context.Background(), method, json.RawMessage(params))
		got <- asked{res, err}
		if err != nil {
			return nil, err
		}
		return json.RawMessage(`{"answered":` + string(res) + `}`), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return x, got
}

// inputRequired awaits x, which must answer with the round's questions.
func inputRequired(t *testing.T, xs *exchanges, x *exchange) *pluginproto.InputRequiredError {
	t.Helper()
	res, err := xs.await(t.Context(), x, emitters{})
	var ir *pluginproto.InputRequiredError
	if !errors.As(err, &ir) {
		t.Fatalf("await = %s, %v; want an *InputRequiredError", res, err)
	}
	return ir
}

func TestExchangeOutcome(t *testing.T) {
	var xs exchanges
	boom := errors.New("boom")
	for _, want := range []outcome{{res: json.RawMessage(`{"ok":true}`)}, {err: boom}} {
		x, err := xs.start(func(context.Context, *exchange) (json.RawMessage, error) { return want.res, want.err })
		if err != nil {
			t.Fatal(err)
		}
		res, err := xs.await(t.Context(), x, emitters{})
		if string(res) != string(want.res) || err != want.err {
			t.Errorf("await = %s, %v; want %s, %v", res, err, want.res, want.err)
		}
		if xs.get(x.id) != nil {
			t.Error("an ended exchange is still held")
		}
		if x.ctx.Err() == nil {
			t.Error("an ended exchange's context is not cancelled")
		}
	}
}

func TestExchangeQuestionAnswered(t *testing.T) {
	var xs exchanges
	x, got := asking(t, &xs, "sampling/createMessage", `{"messages":[]}`)
	ir := inputRequired(t, &xs, x)
	if want := `{"1":{"method":"sampling/createMessage","params":{"messages":[]}}}`; string(ir.Requests) != want {
		t.Errorf("Requests = %s, want %s", ir.Requests, want)
	}
	if ir.State != x.id+".1" || x.id == "" {
		t.Errorf("State = %q, want the exchange's id %q and its round, 1", ir.State, x.id)
	}
	if xs.get(x.id) != x {
		t.Fatal("the exchange is not held between the rounds")
	}

	y, err := xs.resume(&pluginhost.Input{State: ir.State, Responses: json.RawMessage(`{"1":{"role":"assistant"}}`)})
	if err != nil || y != x {
		t.Fatalf("resume = %v, %v; want the exchange", y, err)
	}
	if a := recv(t, got, "answer"); a.err != nil || string(a.res) != `{"role":"assistant"}` {
		t.Errorf("the server got %s, %v; want the client's answer", a.res, a.err)
	}
	res, err := xs.await(t.Context(), x, emitters{})
	if err != nil || string(res) != `{"answered":{"role":"assistant"}}` {
		t.Errorf("await after resume = %s, %v", res, err)
	}
	if _, err := xs.resume(&pluginhost.Input{State: x.id}); err != errNotHeld {
		t.Errorf("resume of an ended exchange = %v, want errNotHeld", err)
	}
}

// Questions the server asks at once are one round's, keyed "1", "2", ...
func TestExchangeSeveralQuestions(t *testing.T) {
	var xs exchanges
	release := make(chan struct{})
	answers := make(chan []asked, 1)
	x, err := xs.start(func(ctx context.Context, _ *exchange) (json.RawMessage, error) {
		<-release
		out := make(chan asked, 2)
		for _, m := range []string{"roots/list", "elicitation/create"} {
			go func() {
				res, err := xs.ask(ctx, m, nil)
				out <- asked{res, err}
			}()
		}
		answers <- []asked{<-out, <-out}
		return json.RawMessage(`{}`), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	close(release)
	// Both questions queued before the round takes them: then they are
	// one round's.
	eventually(t, "two questions queued", func() bool { return len(x.asks) == 2 })
	ir := inputRequired(t, &xs, x)
	var reqs map[string]struct{ Method string }
	if err := json.Unmarshal(ir.Requests, &reqs); err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 2 || reqs["1"].Method == "" || reqs["2"].Method == "" || reqs["1"].Method == reqs["2"].Method {
		t.Fatalf("Requests = %s, want both questions keyed 1 and 2", ir.Requests)
	}
	// "1" answered, "2" refused by the client.
	if _, err := xs.resume(&pluginhost.Input{State: ir.State, Responses: json.RawMessage(`{"1":{"ok":1}}`),
		Errors: map[string]pluginproto.InputError{"2": {Code: -1, Message: "declined"}}}); err != nil {
		t.Fatal(err)
	}
	got := recv(t, answers, "answers")
	var ok, refused int
	for _, a := range got {
		var je *wire.Error
		switch {
		case a.err == nil && string(a.res) == `{"ok":1}`:
			ok++
		case errors.As(a.err, &je) && je.Code == -1 && je.Message == "declined":
			refused++
		default:
			t.Errorf("unexpected answer %s, %v", a.res, a.err)
		}
	}
	if ok != 1 || refused != 1 {
		t.Errorf("answers %+v, want one result and one error", got)
	}
	if _, err := xs.await(t.Context(), x, emitters{}); err != nil {
		t.Error(err)
	}
}

func TestExchangeResumeErrors(t *testing.T) {
	cases := []struct {
		name string
		in   pluginhost.Input
		code int64
		msg  string
	}{
		{"client error", pluginhost.Input{Errors: map[string]pluginproto.InputError{"1": {Code: -32601, Message: "no sampling"}}}, -32601, "no sampling"},
		{"no answer", pluginhost.Input{Responses: json.RawMessage(`{"7":{}}`)}, wire.CodeInternalError, "the client gave no answer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var xs exchanges
			x, got := asking(t, &xs, "sampling/createMessage", `{}`)
			ir := inputRequired(t, &xs, x)
			in := c.in
			in.State = ir.State
			if _, err := xs.resume(&in); err != nil {
				t.Fatal(err)
			}
			a := recv(t, got, "answer")
			var je *wire.Error
			if !errors.As(a.err, &je) || je.Code != c.code || je.Message != c.msg {
				t.Errorf("the server got %s, %v; want JSON-RPC error %d %q", a.res, a.err, c.code, c.msg)
			}
			if _, err := xs.await(t.Context(), x, emitters{}); !errors.As(err, &je) {
				t.Errorf("await = %v, want the server's error", err)
			}
		})
	}

	t.Run("answers not an object", func(t *testing.T) {
		var xs exchanges
		x, _ := asking(t, &xs, "roots/list", ``)
		ir := inputRequired(t, &xs, x)
		if _, err := xs.resume(&pluginhost.Input{State: ir.State, Responses: json.RawMessage(`[1]`)}); err == nil || !strings.Contains(err.Error(), "not a JSON object") {
			t.Errorf("resume = %v, want the answers refused", err)
		}
		xs.end(x)
	})

	t.Run("unknown state", func(t *testing.T) {
		var xs exchanges
		for _, state := range []string{"", "0123456789abcdef01234567"} {
			if x, err := xs.resume(&pluginhost.Input{State: state, Responses: json.RawMessage(`{"1":{}}`)}); err != errNotHeld || x != nil {
				t.Errorf("resume(%q) = %v, %v; want errNotHeld", state, x, err)
			}
		}
	})
}

// A question while two requests are in flight cannot be attributed: it is
// refused, and neither request sees it.
func TestExchangeAmbiguousQuestion(t *testing.T) {
	var xs exchanges
	release := make(chan struct{})
	block := func(ctx context.Context, _ *exchange) (json.RawMessage, error) {
		<-release
		return json.RawMessage(`{}`), nil
	}
	x1, _ := xs.start(block)
	x2, _ := xs.start(block)
	_, err := xs.ask(t.Context(), "elicitation/create", json.RawMessage(`{}`))
	var je *wire.Error
	if !errors.As(err, &je) || je.Code != wire.CodeInternalError || !strings.Contains(je.Message, "serves 2 requests of this server at once, and cannot tell which one asks") || !strings.Contains(je.Message, "elicitation/create") {
		t.Errorf("ask = %v, want it refused as ambiguous", err)
	}
	if len(x1.asks)+len(x2.asks) != 0 {
		t.Error("the refused question was queued")
	}
	close(release)
	for _, x := range []*exchange{x1, x2} {
		if res, err := xs.await(t.Context(), x, emitters{}); err != nil || string(res) != `{}` {
			t.Errorf("await = %s, %v", res, err)
		}
	}
	// With none in flight, there is no one to ask either.
	if _, err := xs.ask(t.Context(), "roots/list", nil); !errors.As(err, &je) || !strings.Contains(je.Message, "serves 0 requests") {
		t.Errorf("ask with nothing in flight = %v", err)
	}
}

// The host's round ending ends the exchange: the request to the server is
// cancelled, and a question of it still waiting gets an error.
func TestExchangeCancelled(t *testing.T) {
	t.Run("running", func(t *testing.T) {
		var xs exchanges
		started := make(chan struct{})
		cancelled := make(chan error, 1)
		x, err := xs.start(func(ctx context.Context, _ *exchange) (json.RawMessage, error) {
			close(started)
			<-ctx.Done()
			cancelled <- ctx.Err()
			return nil, ctx.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
		recv(t, started, "start")
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := xs.await(ctx, x, emitters{}); !errors.Is(err, context.Canceled) {
			t.Errorf("await = %v, want context.Canceled", err)
		}
		if err := recv(t, cancelled, "the request's cancellation"); !errors.Is(err, context.Canceled) {
			t.Errorf("the request's context ended with %v", err)
		}
		if xs.get(x.id) != nil {
			t.Error("a cancelled exchange is still held")
		}
	})

	t.Run("held", func(t *testing.T) {
		var xs exchanges
		x, got := asking(t, &xs, "elicitation/create", `{}`)
		ir := inputRequired(t, &xs, x)
		// The retry's round ends before the server answers.
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := xs.await(ctx, x, emitters{}); !errors.Is(err, context.Canceled) {
			t.Errorf("await = %v, want context.Canceled", err)
		}
		a := recv(t, got, "the asker's error")
		var je *wire.Error
		if !errors.As(a.err, &je) || !strings.Contains(je.Message, "given up before the client answered") {
			t.Errorf("the asker got %s, %v; want the request given up", a.res, a.err)
		}
		if x.ctx.Err() == nil {
			t.Error("the request's context is not cancelled")
		}
		if _, err := xs.resume(&pluginhost.Input{State: ir.State}); err != errNotHeld {
			t.Errorf("resume after the exchange ended = %v, want errNotHeld", err)
		}
	})

	t.Run("asker's own context", func(t *testing.T) {
		var xs exchanges
		release := make(chan struct{})
		x, _ := xs.start(func(ctx context.Context, _ *exchange) (json.RawMessage, error) {
			<-release
			return nil, nil
		})
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := xs.ask(ctx, "roots/list", nil); !errors.Is(err, context.Canceled) {
			t.Errorf("ask with a cancelled context = %v", err)
		}
		close(release)
		_, _ = xs.await(t.Context(), x, emitters{})
	})
}

// A held exchange whose retry never comes is given up after parkTimeout.
func TestExchangeParkTimeout(t *testing.T) {
	defer func(d time.Duration) { parkTimeout = d }(parkTimeout)
	parkTimeout = 10 * time.Millisecond
	var xs exchanges
	x, got := asking(t, &xs, "roots/list", ``)
	ir := inputRequired(t, &xs, x)
	if want := `{"1":{"method":"roots/list"}}`; string(ir.Requests) != want {
		t.Errorf("Requests = %s, want %s (no params)", ir.Requests, want)
	}
	a := recv(t, got, "the asker's error")
	var je *wire.Error
	if !errors.As(a.err, &je) || !strings.Contains(je.Message, "given up before the client answered") {
		t.Errorf("the asker got %s, %v; want the request given up", a.res, a.err)
	}
	eventually(t, "the exchange forgotten", func() bool { return xs.get(x.id) == nil })
	if _, err := xs.resume(&pluginhost.Input{State: ir.State}); err != errNotHeld {
		t.Errorf("resume after the park timeout = %v, want errNotHeld", err)
	}
}

// What the server emits reaches the round of the request it names, or the
// one request in flight when it names none.
func TestExchangeEmitters(t *testing.T) {
	var xs exchanges
	release := make(chan struct{})
	block := func(ctx context.Context, _ *exchange) (json.RawMessage, error) {
		<-release
		return json.RawMessage(`{}`), nil
	}
	type note struct{ who, what string }
	notes := make(chan note, 16)
	mk := func(who string) emitters {
		return emitters{
			progress: func(p, total float64, msg string) { notes <- note{who, "progress " + msg} },
			log:      func(level string, data json.RawMessage) { notes <- note{who, level + " " + string(data)} },
		}
	}
	awaited := make(chan error, 2)
	x1, _ := xs.start(block)
	if _, ok := xs.emitters(x1.id); ok {
		t.Error("emitters of an exchange no round awaits")
	}
	go func() { _, err := xs.await(t.Context(), x1, mk("one")); awaited <- err }()
	eventually(t, "the first round's emitters", func() bool { _, ok := xs.emitters(x1.id); return ok })

	e, ok := xs.emitters("")
	if !ok {
		t.Fatal("no emitters for an unnamed notification with one request in flight")
	}
	e.log("info", json.RawMessage(`"a"`))
	if n := recv(t, notes, "note"); n != (note{"one", `info "a"`}) {
		t.Errorf("got %+v", n)
	}

	x2, _ := xs.start(block)
	go func() { _, err := xs.await(t.Context(), x2, mk("two")); awaited <- err }()
	eventually(t, "the second round's emitters", func() bool { _, ok := xs.emitters(x2.id); return ok })
	if _, ok := xs.emitters(""); ok {
		t.Error("an unnamed notification routed with two requests in flight")
	}
	if _, ok := xs.emitters("unknown"); ok {
		t.Error("a notification of an unknown request routed")
	}
	for _, c := range []struct {
		x   *exchange
		who string
	}{{x2, "two"}, {x1, "one"}} {
		e, ok := xs.emitters(c.x.id)
		if !ok {
			t.Fatalf("no emitters for %s", c.who)
		}
		e.progress(1, 2, c.who)
		if n := recv(t, notes, "note"); n != (note{c.who, "progress " + c.who}) {
			t.Errorf("progress of %s reached %+v", c.who, n)
		}
	}
	close(release)
	for range 2 {
		if err := recv(t, awaited, "await"); err != nil {
			t.Error(err)
		}
	}
	if _, ok := xs.emitters(x1.id); ok {
		t.Error("emitters of an ended exchange")
	}
}

func TestExchangeBound(t *testing.T) {
	var xs exchanges
	release := make(chan struct{})
	var held []*exchange
	for range maxExchanges {
		x, err := xs.start(func(context.Context, *exchange) (json.RawMessage, error) { <-release; return nil, nil })
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, x)
	}
	if _, err := xs.start(func(context.Context, *exchange) (json.RawMessage, error) { return nil, nil }); err == nil {
		t.Errorf("exchange %d started", maxExchanges+1)
	}
	close(release)
	for _, x := range held {
		_, _ = xs.await(t.Context(), x, emitters{})
	}
	if _, err := xs.start(func(context.Context, *exchange) (json.RawMessage, error) { return nil, nil }); err != nil {
		t.Errorf("after the others ended: %v", err)
	}
}

// A retry answers the round it was asked: a stale or duplicated retry
// (the first round's answers, sent again once the server asked its next
// question) must not answer the next round's question, which the client
// never saw; nor may two retries of one round both resume the request.
func TestExchangeStaleRetry(t *testing.T) {
	var xs exchanges
	got := make(chan string, 2)
	x, err := xs.start(func(context.Context, *exchange) (json.RawMessage, error) {
		for _, q := range []string{`{"message":"read the file?"}`, `{"message":"delete everything?"}`} {
			res, err := xs.ask(context.Background(), "elicitation/create", json.RawMessage(q))
			if err != nil {
				got <- "error: " + err.Error()
				return nil, err
			}
			got <- string(res)
		}
		return json.RawMessage(`{}`), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ir1 := inputRequired(t, &xs, x)
	accept := &pluginhost.Input{State: ir1.State, Responses: json.RawMessage(`{"1":{"action":"accept"}}`)}
	if _, err := xs.resume(accept); err != nil {
		t.Fatal(err)
	}
	if a := recv(t, got, "first answer"); a != `{"action":"accept"}` {
		t.Fatalf("first answer = %s", a)
	}
	ir2 := inputRequired(t, &xs, x)
	if !strings.Contains(string(ir2.Requests), "delete everything?") {
		t.Fatalf("second round = %s", ir2.Requests)
	}
	// The first round's retry, again.
	if y, err := xs.resume(accept); err == nil {
		t.Errorf("a stale retry resumed the exchange (%v)", y)
	}
	select {
	case a := <-got:
		t.Fatalf("the second question got the stale retry's answer %s", a)
	default:
	}
	decline := &pluginhost.Input{State: ir2.State, Responses: json.RawMessage(`{"1":{"action":"decline"}}`)}
	if _, err := xs.resume(decline); err != nil {
		t.Fatal(err)
	}
	if a := recv(t, got, "second answer"); a != `{"action":"decline"}` {
		t.Errorf("second answer = %s, want the second round's", a)
	}
	// The same round's retry twice: the second finds nothing to resume.
	if _, err := xs.resume(decline); err == nil {
		t.Error("a round was resumed twice")
	}
	if res, err := xs.await(t.Context(), x, emitters{}); err != nil || string(res) != `{}` {
		t.Errorf("await = %s, %v", res, err)
	}
}
