package pluginclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/plughost/plughost/internal/lane"
	"github.com/plughost/plughost/internal/pluginpb"
)

// laneConn is the host's end of a plugin's frame lane (internal/lane): a
// callStream carrying CallsV2's frames without gRPC, and beside them the
// questions to the plugin's hooks and their answers (frames of kind
// lane.KindHook) once a question opened a hookStream on it. The calls'
// reader goroutine (mux.read) reads both: an answer goes to its question
// from there, and a broken lane fails the questions in flight with the
// calls.
type laneConn struct {
	f         *os.File
	w         *lane.Writer
	r         *lane.Reader
	onBreak   func(error) // OfferLane's; nil for none
	closeOnce sync.Once
	stallOnce sync.Once // a stall is reported once

	mu    sync.Mutex
	hooks *hookStream // the questions' stream on the lane; nil before the first
	ended bool        // the lane broke: no stream of questions opens on it
}

func newLaneConn(f *os.File, maxRecv int, onBreak func(error)) *laneConn {
	return &laneConn{f: f, w: lane.NewWriter(f), r: lane.NewReader(f, maxRecv), onBreak: onBreak}
}

// Send queues a call's frame on the lane.
func (l *laneConn) Send(f *pluginpb.HostFrame) error { return l.write(lane.KindCall, f) }

// write queues m as a frame of kind. A plugin that stopped reading its
// lane (lane.ErrStalled: a write waited past the lane's bound) is not fit
// to run: it is reported to onBreak (the manager restarts it) and the lane
// is closed, which ends its reader, so that every call and question in
// flight fails at once instead of waiting behind it.
func (l *laneConn) write(kind byte, m proto.Message) error {
	err := l.w.Write(kind, m)
	if errors.Is(err, lane.ErrStalled) {
		l.stallOnce.Do(func() {
			if l.onBreak != nil {
				l.onBreak(fmt.Errorf("the plugin stopped reading its frame lane: %w", err))
			}
			l.close()
		})
	}
	return err
}

// Recv decodes the next frame of the calls, handing a hook's answer on
// the way to its question and skipping frames of kinds of a later
// revision. A frame that does not decode breaks the lane (ErrBroken): its
// framing can no longer be trusted.
func (l *laneConn) Recv() (*pluginpb.PluginFrame, error) {
	for {
		kind, msg, err := l.r.Next()
		if err != nil {
			return nil, err
		}
		switch kind {
		case lane.KindCall:
			f := new(pluginpb.PluginFrame)
			if err := proto.Unmarshal(msg, f); err != nil {
				return nil, fmt.Errorf("%w: a frame of %d bytes does not decode: %v", lane.ErrBroken, len(msg), err)
			}
			return f, nil
		case lane.KindHook:
			a := new(pluginpb.HookAnswer)
			if err := proto.Unmarshal(msg, a); err != nil {
				return nil, fmt.Errorf("%w: a hook's answer of %d bytes does not decode: %v", lane.ErrBroken, len(msg), err)
			}
			l.mu.Lock()
			s := l.hooks
			l.mu.Unlock()
			if s != nil { // else an answer to no question: dropped
				s.m.deliver(s, a)
			}
		}
	}
}

// attachHooks makes s the stream of questions on the lane, unless the
// lane has broken (false).
func (l *laneConn) attachHooks(s *hookStream) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return false
	}
	l.hooks = s
	return true
}

// laneHookSender sends questions to the plugin's hooks on the lane.
type laneHookSender struct{ l *laneConn }

func (s laneHookSender) Send(q *pluginpb.HookCall) error { return s.l.write(lane.KindHook, q) }

func (l *laneConn) close() { l.closeOnce.Do(func() { _ = l.f.Close() }) }

// broke retires the lane after its reader stopped with err, and returns
// the error its calls in flight fail with. A lane the plugin broke (a
// frame malformed, over MaxResultSize, or not decoding) is reported to
// onBreak: the plugin is not fit to run (the manager restarts it). The
// questions to its hooks in flight on the lane fail with err too. A lane
// that ended (the plugin closed it, or its process exited) or that the
// host closed is not.
func (l *laneConn) broke(err error, exited context.Context) error {
	l.close()
	l.mu.Lock()
	l.ended = true
	hooks := l.hooks
	l.mu.Unlock()
	if hooks != nil {
		hooks.m.broke(hooks, err)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, os.ErrClosed) || exited != nil && exited.Err() != nil {
		return err
	}
	if l.onBreak != nil {
		l.onBreak(fmt.Errorf("the plugin broke its frame lane: %w", err))
	}
	return err
}

// OfferLane makes f, the host's end of a frame lane whose other end the
// plugin's process was handed at launch (named by lane.EnvFD in its
// environment), the lane Describe offers the plugin. When the plugin
// takes it, its calls go there instead of the CallsV2 rpc; when it does
// not (a plugin of another language, an older SDK), f is closed and calls
// stay on gRPC. The questions to the plugin's hooks (Hook) follow its
// calls. A lane the plugin breaks fails the calls and questions then in
// flight, calls onBreak with why (on the lane's reader goroutine: it must
// not block), and the calls and questions after go on gRPC. Call it before Describe; the
// Client owns f from then on, and closes it when the plugin exits.
func (c *Client) OfferLane(f *os.File, onBreak func(error)) {
	if _, ok := c.calls.(*mux); !ok {
		_ = f.Close() // contract 1: a CallTool stream per call, no lane
		return
	}
	if old := c.laneOffer.Swap(newLaneConn(f, c.limits.MaxResultSize, onBreak)); old != nil {
		old.close()
	}
}

// takeLane is the lane Describe offers, if any, and settles it by the
// plugin's answer: taken, the calls and hooks' questions use it (until the
// plugin exits), else it is closed. A taken lane is read from then on
// (the calls' stream opens on it at once), so that a hook's answer finds
// a reader before any call was made. Call settle exactly once, with whether the plugin
// took it (false when Describe failed).
func (c *Client) takeLane() (offered bool, settle func(taken bool)) {
	l := c.laneOffer.Swap(nil)
	if l == nil {
		return false, func(bool) {}
	}
	return true, func(taken bool) {
		m, ok := c.calls.(*mux)
		if !taken || !ok {
			l.close()
			return
		}
		if c.exited != nil {
			context.AfterFunc(c.exited, l.close)
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.cur != nil { // a call before Describe opened the CallsV2 rpc: it stays there
			l.close()
			return
		}
		c.hooks.mu.Lock()
		c.hooks.lane = l
		c.hooks.mu.Unlock()
		m.cur = newMuxStream(l, l, l.close)
		go m.read(m.cur)
	}
}

// OnLane reports whether the plugin's calls go on the frame lane: it took
// the lane at Describe and the lane has not broken.
func (c *Client) OnLane() bool {
	m, ok := c.calls.(*mux)
	if !ok {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cur != nil && m.cur.lane != nil
}

// HooksOnLane reports whether the questions to the plugin's hooks go on
// the frame lane: the first opened a stream of questions there, and the
// lane has not broken.
func (c *Client) HooksOnLane() bool {
	c.hooks.mu.Lock()
	defer c.hooks.mu.Unlock()
	if c.hooks.cur == nil {
		return false
	}
	_, ok := c.hooks.cur.stream.(laneHookSender)
	return ok
}
