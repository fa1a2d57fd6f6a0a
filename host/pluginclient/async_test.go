package pluginclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/internal/pluginpb"
)

// started is what a StartCall delivered: the progress messages and result
// in the order they came, and how often done ran.
type started struct {
	events []string
	dones  atomic.Int32
	done   chan error
}

// start runs StartCall for tool, recording what it delivers.
func start(ctx context.Context, c *Client, tool string) *started {
	st := &started{done: make(chan error, 2)}
	c.StartCall(ctx, &pluginhost.CallRequest{Tool: tool, Progress: func(_, _ float64, m string) {
		st.events = append(st.events, "progress "+m)
	}}, func(res json.RawMessage, err error) {
		if st.dones.Add(1) == 1 && err == nil {
			st.events = append(st.events, "result "+string(res))
		}
		st.done <- err
	})
	return st
}

// wait returns done's error and checks that done ran exactly once.
func (st *started) wait(t *testing.T) error {
	t.Helper()
	err := <-st.done
	if n := st.dones.Load(); n != 1 {
		t.Errorf("done ran %d times", n)
	}
	return err
}

// StartCall delivers a call's notifications, then its answer, without a
// goroutine waiting; errors are CallTool's.
func TestStartCall(t *testing.T) {
	t.Parallel()
	c, _ := serve(t, 2, &fake{calls: func(s callsStream) error {
		for {
			f, err := s.Recv()
			if err != nil {
				return nil
			}
			id := f.GetCallId()
			var out []*pluginpb.PluginFrame
			switch f.GetStart().GetTool() {
			case "ok":
				out = []*pluginpb.PluginFrame{progressFrame(id, "one"), progressFrame(id, "two"), resultFrame(id, `{"content":[]}`)}
			case "unknown":
				out = []*pluginpb.PluginFrame{errorFrame(id, codes.NotFound, `unknown tool "unknown"`)}
			case "invalid":
				out = []*pluginpb.PluginFrame{resultFrame(id, `[]`)}
			default:
				continue
			}
			if err := sendAll(s, out...); err != nil {
				return err
			}
		}
	}})
	st := start(t.Context(), c, "ok")
	if err := st.wait(t); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(st.events, "; "), `progress one; progress two; result {"content":[]}`; got != want {
		t.Errorf("delivered %s, want %s", got, want)
	}
	for tool, want := range map[string]string{
		"unknown": `call "unknown": unknown tool: unknown tool "unknown"`,
		"invalid": `call "invalid": plugin sent an invalid result: not a JSON object: "[]"`,
	} {
		if err := start(t.Context(), c, tool).wait(t); err == nil || err.Error() != want {
			t.Errorf("%s: err = %v, want %s", tool, err, want)
		}
	}
}

// Cancelling a started call answers done at once with ctx's error and
// sends the plugin a Cancel; the plugin's late answer goes nowhere.
func TestStartCallCancel(t *testing.T) {
	t.Parallel()
	cancelled := make(chan uint64, 1)
	c, _ := serve(t, 2, &fake{calls: func(s callsStream) error {
		ids, err := recvStarts(s, 1)
		if err != nil {
			return err
		}
		f, err := s.Recv()
		if err != nil {
			return err
		}
		if f.GetCancel() == nil {
			return fmt.Errorf("got %v, want a Cancel", f)
		}
		cancelled <- f.GetCallId()
		return sendAll(s, resultFrame(ids["slow"], `{"content":[],"too":"late"}`))
	}})
	ctx, cancel := context.WithCancel(t.Context())
	st := start(ctx, c, "slow")
	cancel()
	if err := st.wait(t); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if id := <-cancelled; id != 1 {
		t.Errorf("Cancel for call %d, want 1", id)
	}
	if len(st.events) != 0 {
		t.Errorf("delivered %q after the cancellation", st.events)
	}
}

// The end of ctx while a callback runs ends the call after that callback,
// and nothing of the call runs after done: not the progress queued behind
// the callback, nor the plugin's late answer. CallTool, which waits for
// StartCall's done, returns ctx's error.
func TestCallEndsAfterTheRunningCallback(t *testing.T) {
	t.Parallel()
	cancelled := make(chan struct{})
	c, _ := serve(t, 2, &fake{calls: func(s callsStream) error {
		ids, err := recvStarts(s, 1)
		if err != nil {
			return err
		}
		if err := sendAll(s, progressFrame(ids["busy"], "one"), progressFrame(ids["busy"], "two")); err != nil {
			return err
		}
		if f, err := s.Recv(); err != nil || f.GetCancel() == nil {
			return fmt.Errorf("got %v, %v; want a Cancel", f, err)
		}
		close(cancelled)
		return sendAll(s, progressFrame(ids["busy"], "late"), resultFrame(ids["busy"], `{"content":[]}`))
	}})
	ctx, cancel := context.WithCancel(t.Context())
	var events []string
	var returned atomic.Bool
	_, err := c.CallTool(ctx, &pluginhost.CallRequest{Tool: "busy", Progress: func(_, _ float64, m string) {
		if returned.Load() {
			t.Errorf("progress %q after CallTool returned", m)
		}
		events = append(events, m)
		if m == "one" {
			cancel()
			<-cancelled // the plugin was told while this callback runs
		}
	}})
	returned.Store(true)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if got := strings.Join(events, "; "); got != "one" && got != "one; two" {
		t.Errorf("delivered %q, want the progress before the cancellation", got)
	}
}

// A stream that breaks answers every started call with ErrPluginClosed.
func TestStartCallStreamBreaks(t *testing.T) {
	t.Parallel()
	c, _ := serve(t, 2, &fake{calls: func(s callsStream) error {
		if _, err := recvStarts(s, 2); err != nil {
			return err
		}
		return errors.New("the plugin gave up")
	}})
	calls := []*started{start(t.Context(), c, "x"), start(t.Context(), c, "y")}
	for _, st := range calls {
		if err := st.wait(t); !errors.Is(err, ErrPluginClosed) {
			t.Errorf("err = %v, want ErrPluginClosed", err)
		}
	}
}

// A contract-1 plugin's started call runs on its own stream, as CallTool.
func TestStartCallContract1(t *testing.T) {
	t.Parallel()
	c, _ := serve(t, 1, &fake{call: func(s grpc.BidiStreamingServer[pluginpb.CallToolHostMessage, pluginpb.CallToolPluginMessage]) error {
		return s.Send(&pluginpb.CallToolPluginMessage{Msg: &pluginpb.CallToolPluginMessage_Result{Result: []byte(`{"content":[]}`)}})
	}})
	st := start(t.Context(), c, "t")
	if err := st.wait(t); err != nil || len(st.events) != 1 {
		t.Errorf("err = %v, events %q", err, st.events)
	}
}
