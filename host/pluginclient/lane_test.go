package pluginclient

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/plughost/plughost/internal/lane"
	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/internal/pluginpb"
)

// laneFake is a plugin that takes the lane at Describe and whose CallsV2
// rpc answers every call "grpc": what a call that falls back gets.
func laneFake(t *testing.T) (*Client, *os.File, <-chan error) {
	t.Helper()
	f := &fake{
		describe: &pluginpb.DescribeResponse{Name: "bad-lane", ContractVersion: 2, Lane: true},
		calls: func(s callsStream) error {
			for {
				fr, err := s.Recv()
				if err != nil {
					return err
				}
				if fr.GetStart() != nil {
					if err := s.Send(&pluginpb.PluginFrame{CallId: fr.GetCallId(), Msg: &pluginpb.PluginFrame_Result{Result: []byte(`{"content":[],"via":"grpc"}`)}}); err != nil {
						return err
					}
				}
			}
		},
	}
	c, plugin, broke := describedOnLane(t, f)
	if !c.OnLane() {
		t.Fatal("the plugin took the lane, but calls are not on it")
	}
	return c, plugin, broke
}

// describedOnLane serves f (MaxResultSize 1 MiB), offers it a lane and
// has it described: it returns the client, the plugin's end of the lane
// and what the lane's breaks report.
func describedOnLane(t *testing.T, f *fake) (*Client, *os.File, <-chan error) {
	t.Helper()
	c, _ := serveLimited(t, 2, f, &Limits{MaxResultSize: 1 << 20})
	host, plugin, err := lane.Pair()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = plugin.Close() })
	broke := make(chan error, 1)
	c.OfferLane(host, func(err error) { broke <- err })
	if _, err := c.Describe(t.Context(), "test"); err != nil {
		t.Fatal(err)
	}
	return c, plugin, broke
}

// A plugin that breaks its lane's framing loses the calls then in flight
// (with an error naming the cause), the host is told why (the manager
// restarts the plugin), and the next calls go on gRPC.
func TestMalformedLane(t *testing.T) {
	for _, tc := range []struct {
		name    string
		garbage []byte
		want    error  // the call's error
		why     string // in the break's error
	}{
		{"garbage", append(binary.BigEndian.AppendUint32(nil, 6), lane.KindCall, 0xff, 0xff, 0xff, 0xff, 0xff), ErrPluginClosed, "does not decode"},
		{"oversized length", append(binary.BigEndian.AppendUint32(nil, 1<<20+100), lane.KindCall), ErrTooLarge, "over the bound of 1048576"},
		{"truncated frame", append(binary.BigEndian.AppendUint32(nil, 100), lane.KindCall, 8), ErrPluginClosed, "ended inside a frame of 100 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, plugin, broke := laneFake(t)
			answer := make(chan error, 1)
			c.StartCall(t.Context(), &pluginhost.CallRequest{Tool: "echo"}, func(_ json.RawMessage, err error) { answer <- err })
			// The Start reached the lane: the plugin answers with its breach.
			r := lane.NewReader(plugin, 1<<20)
			if kind, _, err := r.Next(); err != nil || kind != lane.KindCall {
				t.Fatalf("the Start on the lane: kind %d, %v", kind, err)
			}
			if _, err := plugin.Write(tc.garbage); err != nil {
				t.Fatal(err)
			}
			if tc.name == "truncated frame" {
				plugin.Close() // the lane ends inside the frame
			}
			if err := <-answer; !errors.Is(err, tc.want) {
				t.Errorf("the call in flight: %v, want %v", err, tc.want)
			}
			if err := <-broke; !errors.Is(err, lane.ErrBroken) && !errors.Is(err, lane.ErrTooLarge) || !strings.Contains(err.Error(), tc.why) {
				t.Errorf("the break: %v, want ErrBroken or ErrTooLarge naming %q", err, tc.why)
			}
			if c.OnLane() {
				t.Error("calls are still on the broken lane")
			}
			res, err := c.CallTool(t.Context(), &pluginhost.CallRequest{Tool: "echo"})
			if err != nil || !strings.Contains(string(res), `"via":"grpc"`) {
				t.Errorf("the next call = %s, %v; want the gRPC stream's answer", res, err)
			}
		})
	}
}

// A plugin that does not take the lane (another language's, an older
// SDK's) keeps its calls on gRPC, and the host's end is closed.
func TestLaneDeclined(t *testing.T) {
	f := &fake{describe: &pluginpb.DescribeResponse{Name: "node", ContractVersion: 2}}
	c, _ := serve(t, 2, f)
	host, plugin, err := lane.Pair()
	if err != nil {
		t.Fatal(err)
	}
	defer plugin.Close()
	c.OfferLane(host, func(err error) { t.Errorf("a declined lane broke: %v", err) })
	if _, err := c.Describe(t.Context(), "test"); err != nil {
		t.Fatal(err)
	}
	if c.OnLane() {
		t.Error("calls on a lane the plugin did not take")
	}
	if n, err := plugin.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Errorf("the plugin's end reads %d, %v: the host's end is still open", n, err)
	}
}
