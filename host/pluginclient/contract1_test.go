package pluginclient

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"

	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/internal/pluginpb"
)

// The tests of the contract-1 adapter: a Client whose plugin's handshake
// named contract 1 makes each call on a CallTool stream of its own.

func TestContract1CallErrors(t *testing.T) {
	t.Parallel()
	type stream = grpc.BidiStreamingServer[pluginpb.CallToolHostMessage, pluginpb.CallToolPluginMessage]
	result := func(b string) *pluginpb.CallToolPluginMessage {
		return &pluginpb.CallToolPluginMessage{Msg: &pluginpb.CallToolPluginMessage_Result{Result: []byte(b)}}
	}
	tests := map[string]struct {
		call    func(stream) error
		wantErr error
		wantMsg string
	}{
		"no result": {
			call:    func(stream) error { return nil },
			wantErr: ErrNoResult,
			wantMsg: `call "t": plugin ended the call without a result`,
		},
		"result not JSON": {
			call:    func(s stream) error { return s.Send(result(`{"content":`)) },
			wantErr: ErrInvalidResult,
			wantMsg: `call "t": plugin sent an invalid result: not a JSON object: "{\"content\":"`,
		},
		"result not an object": {
			call:    func(s stream) error { return s.Send(result(`[]`)) },
			wantErr: ErrInvalidResult,
		},
		"empty result": {
			call:    func(s stream) error { return s.Send(result(``)) },
			wantErr: ErrInvalidResult,
		},
		"plugin error status": {
			call:    func(stream) error { return errors.New("handler exploded") },
			wantMsg: `call "t": rpc error: code = Unknown desc = handler exploded`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, _ := serve(t, 1, &fake{call: tc.call})
			_, err := c.CallTool(t.Context(), &pluginhost.CallRequest{Tool: "t"})
			if err == nil {
				t.Fatal("CallTool succeeded, want an error")
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("err = %v, want %v", err, tc.wantErr)
			}
			if tc.wantMsg != "" && err.Error() != tc.wantMsg {
				t.Errorf("err = %q, want %q", err, tc.wantMsg)
			}
		})
	}
}

func TestContract1CallPluginDies(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	var srv *grpc.Server
	c, srv := serve(t, 1, &fake{call: func(s grpc.BidiStreamingServer[pluginpb.CallToolHostMessage, pluginpb.CallToolPluginMessage]) error {
		close(started)
		<-s.Context().Done()
		return s.Context().Err()
	}})
	go func() {
		<-started
		srv.Stop() // the plugin goes away mid-call
	}()
	_, err := c.CallTool(t.Context(), &pluginhost.CallRequest{Tool: "t"})
	if !errors.Is(err, ErrPluginClosed) {
		t.Errorf("err = %v, want ErrPluginClosed", err)
	}
}

// A plugin that sends its result but does not end the stream still gives
// the host its result at once, and its stream is cancelled rather than left
// open.
func TestContract1CallEndsStreamHeldOpenAfterResult(t *testing.T) {
	t.Parallel()
	cancelled := make(chan struct{})
	c, _ := serve(t, 1, &fake{call: func(s grpc.BidiStreamingServer[pluginpb.CallToolHostMessage, pluginpb.CallToolPluginMessage]) error {
		if err := s.Send(&pluginpb.CallToolPluginMessage{Msg: &pluginpb.CallToolPluginMessage_Result{Result: []byte(`{"content":[]}`)}}); err != nil {
			return err
		}
		<-s.Context().Done() // hold the stream open until the host gives up on it
		close(cancelled)
		return nil
	}})
	res, err := c.CallTool(t.Context(), &pluginhost.CallRequest{Tool: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if string(res) != `{"content":[]}` {
		t.Errorf("result = %s", res)
	}
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the plugin's stream was never cancelled")
	}
}

func TestContract1CallSkipsUnknownMessagesAndKeepsOrder(t *testing.T) {
	t.Parallel()
	c, _ := serve(t, 1, &fake{call: func(s grpc.BidiStreamingServer[pluginpb.CallToolHostMessage, pluginpb.CallToolPluginMessage]) error {
		for _, m := range []*pluginpb.CallToolPluginMessage{
			{Msg: &pluginpb.CallToolPluginMessage_Log{Log: &pluginpb.LogMessage{Level: "info", Logger: "db", Data: []byte(`1`)}}},
			{}, // a message kind this host does not know
			{Msg: &pluginpb.CallToolPluginMessage_Progress{Progress: &pluginpb.Progress{Progress: 1, Total: 3, Message: "m"}}},
			{Msg: &pluginpb.CallToolPluginMessage_Result{Result: []byte(`{"content":[]}`)}},
		} {
			if err := s.Send(m); err != nil {
				return err
			}
		}
		return nil
	}})
	var got []string
	res, err := c.CallTool(t.Context(), &pluginhost.CallRequest{
		Tool:     "t",
		Progress: func(p, total float64, msg string) { got = append(got, "progress "+msg) },
		Log: func(level, logger string, data json.RawMessage) {
			got = append(got, "log "+level+" "+logger+" "+string(data))
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if string(res) != `{"content":[]}` {
		t.Errorf("result = %s", res)
	}
	if diff := cmp.Diff([]string{"log info db 1", "progress m"}, got); diff != "" {
		t.Errorf("notifications (-want +got):\n%s", diff)
	}
}
