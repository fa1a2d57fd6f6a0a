package pluginproto

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/plughost/plughost/internal/pluginpb"
)

// maxHookQuestions bounds the questions a plugin answers at once on its
// Hooks stream; one more is answered at once with an error, so a host
// that floods a hook cannot make it hold unbounded goroutines.
const maxHookQuestions = 1024

// Hooks serves the host's questions to the plugin's hooks (AddHook) on the
// Hooks rpc's stream: each question runs on a goroutine of its own, a
// cancel frame cancels its handler's context, and every answer goes out
// through one mutex. When the stream ends, every question still running is
// cancelled, and Hooks returns once their handlers have. A plugin on the
// frame lane gets its questions there instead (serveLane), served the same.
func (s *server) Hooks(stream grpc.BidiStreamingServer[pluginpb.HookCall, pluginpb.HookAnswer]) error {
	h, end := s.p.serveHooks(stream.Context(), &lockedSender[pluginpb.HookAnswer]{stream: stream})
	defer end()
	for {
		q, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		h.handle(q)
	}
}

// serveHooks returns the plugin's side of one stream of questions, whose
// answers go to out, and end: it cancels the questions still running and
// returns once their handlers have.
func (p *Plugin) serveHooks(ctx context.Context, out sender[pluginpb.HookAnswer]) (h *hookStream, end func()) {
	ctx, cancelAll := context.WithCancel(ctx)
	h = &hookStream{p: p, ctx: ctx, out: out, running: make(map[uint64]context.CancelFunc)}
	return h, func() {
		cancelAll()
		h.wg.Wait()
	}
}

// hookStream is the plugin's side of one stream of questions.
type hookStream struct {
	p   *Plugin
	ctx context.Context // the stream's: ends when it does
	out sender[pluginpb.HookAnswer]
	wg  sync.WaitGroup

	mu      sync.Mutex
	running map[uint64]context.CancelFunc // questions not answered yet
}

// handle acts on one frame of the host: a cancel cancels its question's
// handler, a question starts one.
func (h *hookStream) handle(q *pluginpb.HookCall) {
	if !q.GetCancel() {
		h.start(h.ctx, q)
		return
	}
	h.mu.Lock()
	cancel := h.running[q.GetId()]
	h.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// start runs the handler of q on a goroutine of its own, unless its id is
// running already (ignored) or maxHookQuestions run (answered with an
// error).
func (h *hookStream) start(ctx context.Context, q *pluginpb.HookCall) {
	id := q.GetId()
	h.mu.Lock()
	_, dup := h.running[id]
	full := len(h.running) >= maxHookQuestions
	var cancel context.CancelFunc
	if !dup && !full {
		ctx, cancel = context.WithCancel(ctx)
		h.running[id] = cancel
	}
	h.mu.Unlock()
	switch {
	case dup:
		h.p.logger.Warn("host reused the id of a question still running; ignored", "question_id", id)
		return
	case full:
		h.send(&pluginpb.HookAnswer{Id: id, Error: fmt.Sprintf("the plugin answers at most %d questions at once", maxHookQuestions)})
		return
	}
	h.wg.Go(func() {
		defer cancel()
		a := h.p.answerHook(ctx, q)
		a.Id = id
		h.mu.Lock()
		delete(h.running, id)
		h.mu.Unlock()
		h.send(a)
	})
}

// send sends a, or, when a is over the host's limit
// (DescribeRequest.max_message_size), an error naming both sizes in its
// place: sent, it would break the stream and every question on it.
func (h *hookStream) send(a *pluginpb.HookAnswer) {
	if max := int(h.p.hostMaxMessage.Load()); max > 0 {
		if size := proto.Size(a); size > max {
			h.p.logger.Warn("a hook's answer is over the host's limit; the question fails instead", "bytes", size, "limit", max)
			a = &pluginpb.HookAnswer{Id: a.GetId(), Error: fmt.Sprintf("the hook's answer, a message of %d bytes, is over the host's MaxResultSize (%d bytes); it was not sent", size, max)}
		}
	}
	_ = h.out.Send(a) // a failed Send ends the stream, and every question's context
}

// Hook answers q in-process, as the Hooks stream does (pluginhost.Plugin).
func (hp *hostPlugin) Hook(ctx context.Context, q *pluginpb.HookCall) *pluginpb.HookAnswer {
	return (*Plugin)(hp).answerHook(ctx, q)
}

// answerHook runs the handler of q's point and turns what it returned
// into the wire's answer: a point the plugin does not serve, an error and
// a panic (logged with its stack) are the answer's error.
func (p *Plugin) answerHook(ctx context.Context, q *pluginpb.HookCall) (a *pluginpb.HookAnswer) {
	point := HookPoint(q.GetPoint())
	p.mu.RLock()
	h := p.hooks[point]
	p.mu.RUnlock()
	if h == nil {
		return &pluginpb.HookAnswer{Error: fmt.Sprintf("this plugin serves no hook at %q (it serves %v)", point, p.Offers().Hooks)}
	}
	defer func() {
		if v := recover(); v != nil {
			p.logger.Error("hook panicked", "hook", q.GetHook(), "point", point, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			a = &pluginpb.HookAnswer{Error: fmt.Sprintf("hook %q panicked at %s: %v", q.GetHook(), point, v)}
		}
	}()
	ans, err := h(ctx, hookRequestOf(q))
	if err != nil {
		return &pluginpb.HookAnswer{Error: err.Error()}
	}
	out := &pluginpb.HookAnswer{Reason: ans.Reason, Rewritten: ans.Rewritten}
	switch ans.Decision {
	case HookPass:
		out.Decision = pluginpb.HookAnswer_PASS
	case HookRefuse:
		out.Decision = pluginpb.HookAnswer_REFUSE
	case HookRewrite:
		out.Decision = pluginpb.HookAnswer_REWRITE
	case HookHide:
		out.Decision = pluginpb.HookAnswer_HIDE
	default:
		return &pluginpb.HookAnswer{Error: fmt.Sprintf("hook %q answered an unknown decision %d: build answers with Pass, Refuse, Rewrite or Hide", q.GetHook(), ans.Decision)}
	}
	return out
}

// hookRequestOf is the handler's view of q.
func hookRequestOf(q *pluginpb.HookCall) *HookRequest {
	return &HookRequest{
		Point: HookPoint(q.GetPoint()), Hook: q.GetHook(), Caller: callerOf(q.GetCaller()),
		Kind: q.GetKind(), Name: q.GetName(), Exposed: q.GetExposed(), URI: q.GetUri(), Provider: q.GetProvider(),
		Definition: q.GetDefinition(), Arguments: q.GetArguments(), Result: q.GetResult(),
	}
}

// hookStrings is points as Describe names them.
func hookStrings(points []HookPoint) []string {
	out := make([]string, len(points))
	for i, pt := range points {
		out[i] = string(pt)
	}
	return out
}
