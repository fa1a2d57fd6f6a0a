package pluginproto

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/plughost/plughost/internal/lane"
	"github.com/plughost/plughost/internal/pluginpb"
	"github.com/plughost/plughost/internal/pluginwire"
)

// laneState is the plugin's end of the frame lane (see internal/lane):
// taken at the first Describe whose host offers one, then served for the
// process's life. Nothing for a plugin author to do: Serve takes the lane
// a host hands it, and a host that hands none keeps gRPC.
type laneState struct {
	mu     sync.Mutex
	given  *os.File // SetLane's, for a plugin served in the host's process
	taken  bool     // a Describe offered a lane: the answer is decided
	serves bool     // the lane is served
}

// SetLane makes f the lane the plugin takes at the next Describe that
// offers one, instead of the one PLUGHOST_LANE_FD names.
func (h *hostPlugin) SetLane(f *os.File) {
	p := (*Plugin)(h)
	p.lane.mu.Lock()
	p.lane.given = f
	p.lane.mu.Unlock()
}

// takeLane answers a Describe that offers a lane: whether the plugin
// serves CallsV2 and its hooks' questions on it. The first such Describe decides; the lane is
// served on a goroutine of its own until the host closes it.
func (p *Plugin) takeLane() bool {
	p.lane.mu.Lock()
	defer p.lane.mu.Unlock()
	if p.lane.taken {
		return p.lane.serves
	}
	p.lane.taken = true
	f := p.lane.given
	if f == nil {
		var err error
		if f, err = lane.FromEnv(); err != nil {
			p.logger.Warn("the host's frame lane is unusable: calls stay on gRPC", "error", err)
			return false
		}
	}
	if f == nil {
		return false // the host offered a lane but handed none
	}
	p.lane.serves = true
	go p.serveLane(f)
	return true
}

// serveLane serves CallsV2 and the questions to the plugin's hooks on the
// lane f until the host closes it (or it breaks), then cancels the calls
// and questions still running on it and closes f. Each frame is handled
// on this goroutine as it is read, as CallsV2's and Hooks' loops do with
// gRPC's messages.
func (p *Plugin) serveLane(f *os.File) {
	defer f.Close()
	w := lane.NewWriter(f)
	c, endCalls := p.serveCalls(context.Background(), laneSender{w})
	defer endCalls()
	h, endHooks := p.serveHooks(context.Background(), laneHookSender{w})
	defer endHooks()
	r := lane.NewReader(f, pluginwire.MaxPluginMessage+64)
	for {
		kind, msg, err := r.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				p.logger.Warn("the frame lane broke: its calls are cancelled", "error", err)
			}
			return
		}
		switch kind {
		case lane.KindCall:
			frame := new(pluginpb.HostFrame)
			if err := proto.Unmarshal(msg, frame); err != nil {
				p.logger.Warn("the host sent a frame that does not decode: the lane is closed", "error", err)
				return
			}
			c.handle(frame)
		case lane.KindHook:
			q := new(pluginpb.HookCall)
			if err := proto.Unmarshal(msg, q); err != nil {
				p.logger.Warn("the host sent a hook question that does not decode: the lane is closed", "error", err)
				return
			}
			h.handle(q)
		}
		// A frame of another kind is of a later revision: skipped.
	}
}

// laneSender sends CallsV2's frames on the lane.
type laneSender struct{ w *lane.Writer }

func (s laneSender) Send(f *pluginpb.PluginFrame) error { return s.w.Write(lane.KindCall, f) }

// laneHookSender sends hooks' answers on the lane.
type laneHookSender struct{ w *lane.Writer }

func (s laneHookSender) Send(a *pluginpb.HookAnswer) error { return s.w.Write(lane.KindHook, a) }
