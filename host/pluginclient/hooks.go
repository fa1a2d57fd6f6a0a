package pluginclient

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"google.golang.org/grpc"

	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/internal/pluginpb"
	"github.com/plughost/plughost/internal/pluginwire"
	"github.com/plughost/plughost/pluginproto"
)

// Questions to a hook plugin: every question of the host to one plugin
// goes on one stream, opened at the first question and kept for the
// plugin's lifetime, each named by an id: the frame lane's when the plugin
// took one at Describe (frames of kind lane.KindHook beside its calls),
// else the Hooks rpc's. The calling goroutine queues its question for the
// stream's writer goroutine and waits for its answer, which the stream's
// reader (the lane's, or read) receives and hands over; when the
// caller's ctx ends first, it queues a cancel frame for the id and returns
// at once, and the late answer is dropped. The writer, not the caller,
// sends (see hookStream.write). The queue holds Limits.MaxHookQuestions frames; a
// question that finds it full fails at once. A broken stream fails every
// question in flight on it at once, and the next question opens a new one.

// DefaultMaxHookQuestions is Limits.MaxHookQuestions' default: the
// questions in flight to one plugin at once (as many as a plugin of the
// SDK answers at once).
const DefaultMaxHookQuestions = 1024

// Errors of Hook besides those of the Client's calls.
var (
	// ErrHookFailed: the hook could not decide (its handler returned an
	// error or panicked, or the plugin refused the question); the
	// error's text ends with the plugin's message.
	ErrHookFailed = errors.New("the hook failed")
	// ErrBadHookAnswer: the plugin's answer breaks the contract's rules.
	ErrBadHookAnswer = pluginwire.ErrBadHookAnswer
	// ErrTooManyQuestions: Limits.MaxHookQuestions are in flight to the
	// plugin already; the question was not sent.
	ErrTooManyQuestions = errors.New("too many hook questions in flight")
)

// Hook asks the plugin one question as the hook q.Hook at q.Point, and
// returns its answer. The question goes on the plugin's one stream of
// questions (see above); ctx bounds the wait: when it ends, the plugin is told to
// cancel the question and Hook returns an error wrapping ctx's at once.
//
// Errors wrap ErrNotOffered when the plugin did not offer q.Point in
// Describe (no question is sent), ErrTooLarge when the question is over
// what a plugin accepts in one message (pluginwire.MaxPluginMessage,
// 4 MiB) or the answer was over Limits.MaxResultSize, ErrTooManyQuestions
// over Limits.MaxHookQuestions, ErrHookFailed when the hook could not
// decide, ErrBadHookAnswer when the answer breaks the contract (a hide
// outside on_definitions, a rewrite that is not a JSON object, a reason
// over pluginwire.MaxHookReason), ErrPluginClosed when the stream broke
// (the plugin died), or ctx's error.
//
// q.Caller is sent whole, its claims included: the caller of Hook decides
// what the plugin may see (the manager passes on Options.PassClaims only).
func (c *Client) Hook(ctx context.Context, q *tool.HookCall) (*tool.HookAnswer, error) {
	what := fmt.Sprintf("hook %q at %s", q.Hook, q.Point)
	if !slices.Contains(c.offered().Hooks, pluginproto.HookPoint(q.Point)) {
		return nil, fmt.Errorf("%s: %w: the plugin serves no hook there (it offers %v)", what, ErrNotOffered, c.offered().Hooks)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	msg, err := hookCallPB(q)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := pluginwire.CheckSize(what, msg); err != nil {
		return nil, fmt.Errorf("%w (%w)", err, ErrTooLarge)
	}
	a, err := c.hooks.ask(ctx, what, msg)
	if err != nil {
		return nil, err
	}
	if a.GetError() != "" {
		return nil, fmt.Errorf("%s: %w: %s", what, ErrHookFailed, a.GetError())
	}
	if err := pluginwire.CheckHookAnswer(string(q.Point), a); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return &tool.HookAnswer{Decision: decisions[a.GetDecision()], Reason: a.GetReason(), Rewritten: a.GetRewritten()}, nil
}

// decisions are the wire's decisions in the host's words.
var decisions = map[pluginpb.HookAnswer_Decision]tool.HookDecision{
	pluginpb.HookAnswer_PASS: tool.HookPass, pluginpb.HookAnswer_REFUSE: tool.HookRefuse,
	pluginpb.HookAnswer_REWRITE: tool.HookRewrite, pluginpb.HookAnswer_HIDE: tool.HookHide,
}

// hookCallPB is q for the wire (its id set by ask).
func hookCallPB(q *tool.HookCall) (*pluginpb.HookCall, error) {
	m := &pluginpb.HookCall{
		Point: string(q.Point), Hook: q.Hook,
		Kind: string(q.Item.Kind), Name: q.Item.Name, Exposed: q.Item.Exposed, Uri: q.Item.URI, Provider: q.Item.Provider,
		Definition: q.Definition, Arguments: q.Arguments, Result: q.Result,
	}
	if c := q.Caller; c != nil && (c.Subject != "" || c.ClientID != "" || c.Local) {
		m.Caller = &pluginpb.Caller{Subject: c.Subject, ClientId: c.ClientID, Issuer: c.Issuer, Scopes: c.Scopes, Local: c.Local}
		if len(c.Claims) > 0 {
			b, err := json.Marshal(c.Claims)
			if err != nil {
				return nil, fmt.Errorf("the caller's claims: %w", err)
			}
			m.Caller.Claims = b
		}
	}
	return m, nil
}

// hookMux is the host's side of a plugin's questions to its hooks.
type hookMux struct {
	rpc    pluginpb.PluginClient
	exited context.Context // the plugin process's lifetime; nil in some tests
	recv   grpc.CallOption // bounds each answer (Limits.MaxResultSize)
	max    int             // Limits.MaxHookQuestions

	mu     sync.Mutex
	cur    *hookStream // the open stream; nil before the first question and after a break
	lane   *laneConn   // the frame lane, until the first question opens its stream there; nil: gRPC
	nextID uint64
}

// hookSender sends questions on one stream: the Hooks rpc's, or the frame
// lane's (laneHookSender). Answers come back through hookMux.deliver,
// from the rpc's reader goroutine (read) or the lane's (laneConn.Recv),
// and the end of either through hookMux.broke.
type hookSender interface {
	Send(*pluginpb.HookCall) error
}

// hookStream is one stream of questions and the questions waiting on it.
type hookStream struct {
	m       *hookMux
	stream  hookSender
	ctx     context.Context // the stream's; ends when it breaks
	cancel  context.CancelFunc
	out     chan *pluginpb.HookCall   // the frames the writer sends, in order
	waiting map[uint64]chan hookReply // guarded by hookMux.mu
}

// hookReply is what read hands a waiting question: its answer, or why the
// stream broke.
type hookReply struct {
	answer *pluginpb.HookAnswer
	err    error
}

// ask sends q with a new id and waits for its answer or ctx's end.
func (m *hookMux) ask(ctx context.Context, what string, q *pluginpb.HookCall) (*pluginpb.HookAnswer, error) {
	s, id, ch, err := m.register()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	q.Id = id
	select {
	case s.out <- q:
	default:
		m.finish(s, id)
		return nil, fmt.Errorf("%s: %w: %d questions are queued for a plugin that reads none (hung?)", what, ErrTooManyQuestions, cap(s.out))
	}
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, brokenError(ctx, m.exited, what, r.err)
		}
		return r.answer, nil
	case <-ctx.Done():
		m.mu.Lock()
		_, waiting := s.waiting[id]
		delete(s.waiting, id)
		m.mu.Unlock()
		if waiting {
			select {
			case s.out <- &pluginpb.HookCall{Id: id, Cancel: true}:
			default: // the plugin reads nothing: it will not miss the cancel
			}
		}
		return nil, fmt.Errorf("%s: %w", what, ctx.Err())
	}
}

// register adds a question with a new id to the open stream, opening one
// if needed.
func (m *hookMux) register() (*hookStream, uint64, chan hookReply, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cur == nil {
		s, err := m.open()
		if err != nil {
			return nil, 0, nil, err
		}
		m.cur = s
		go s.write()
	}
	if len(m.cur.waiting) >= m.max {
		return nil, 0, nil, fmt.Errorf("%w: %d questions wait for the plugin's answers, its bound (MaxHookQuestions)", ErrTooManyQuestions, m.max)
	}
	m.nextID++
	ch := make(chan hookReply, 1)
	m.cur.waiting[m.nextID] = ch
	return m.cur, m.nextID, ch, nil
}

// open opens a stream of questions: on the frame lane, once, when the
// plugin took one and it has not broken, else the Hooks rpc. Under m.mu.
// The stream lives as long as the plugin, as the calls' does.
func (m *hookMux) open() (*hookStream, error) {
	sctx, cancel := context.WithCancel(cmp.Or(m.exited, context.Background()))
	s := &hookStream{m: m, ctx: sctx, cancel: cancel, out: make(chan *pluginpb.HookCall, m.max),
		waiting: make(map[uint64]chan hookReply)}
	if l := m.lane; l != nil {
		m.lane = nil // a broken lane is not reopened: gRPC then
		s.stream = laneHookSender{l}
		if l.attachHooks(s) {
			// The stream breaks when its ctx ends, as the rpc's does.
			context.AfterFunc(sctx, func() { m.broke(s, errHooksStreamEnded) })
			return s, nil
		}
	}
	stream, err := m.rpc.Hooks(sctx, m.recv)
	if err != nil {
		cancel()
		return nil, err
	}
	s.stream = stream
	go m.read(s, stream)
	return s, nil
}

// write sends the queued frames until the stream ends. The writer, not
// the caller, sends: a plugin that stops reading blocks a Send (gRPC's
// once its flow-control window is full, the lane's once the socket's
// buffer is), and that must not keep a question past its ctx. A failed
// Send ends the stream, and its reader reports it to every question in
// flight.
func (s *hookStream) write() {
	for {
		select {
		case q := <-s.out:
			if s.stream.Send(q) != nil {
				return
			}
		case <-s.ctx.Done():
			return
		}
	}
}

// finish forgets a question that was not sent.
func (m *hookMux) finish(s *hookStream, id uint64) {
	m.mu.Lock()
	delete(s.waiting, id)
	m.mu.Unlock()
}

// read hands the answers on the Hooks rpc's stream to their questions
// until it breaks.
func (m *hookMux) read(s *hookStream, stream grpc.BidiStreamingClient[pluginpb.HookCall, pluginpb.HookAnswer]) {
	for {
		a, err := stream.Recv()
		if err != nil {
			m.broke(s, err)
			return
		}
		m.deliver(s, a)
	}
}

// deliver hands an answer to its question. An answer to an id that waits
// no more (cancelled, or never sent) is dropped.
func (m *hookMux) deliver(s *hookStream, a *pluginpb.HookAnswer) {
	m.mu.Lock()
	ch := s.waiting[a.GetId()]
	delete(s.waiting, a.GetId())
	m.mu.Unlock()
	if ch != nil {
		ch <- hookReply{answer: a}
	}
}

// broke retires a broken stream, failing the questions still waiting on
// it with err: the next question opens a new one.
func (m *hookMux) broke(s *hookStream, err error) {
	s.cancel()
	if errors.Is(err, io.EOF) {
		err = errHooksEnded
	}
	m.mu.Lock()
	if m.cur == s {
		m.cur = nil
	}
	waiting := s.waiting
	s.waiting = nil
	m.mu.Unlock()
	for _, ch := range waiting {
		ch <- hookReply{err: err}
	}
}

// errHooksStreamEnded is a stream of questions on the lane whose context
// ended (the plugin exited).
var errHooksStreamEnded = errors.New("the hooks stream ended")

// errHooksEnded is a stream of questions the plugin ended with questions
// in flight.
var errHooksEnded = errors.New("the plugin ended its hooks stream")

// hookPoints is what Describe's offers.hooks names that the host knows,
// in the order of a request, each once; the rest (a later contract
// revision's) is dropped.
func hookPoints(names []string) []pluginproto.HookPoint {
	var out []pluginproto.HookPoint
	for _, p := range tool.HookPoints {
		if slices.Contains(names, string(p)) {
			out = append(out, pluginproto.HookPoint(p))
		}
	}
	return out
}
