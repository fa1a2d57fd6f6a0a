package pluginclient

import (
	"errors"
	"strings"
	"testing"

	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/internal/pluginpb"
)

// A plugin that ignores DescribeRequest.max_message_size (one not built
// with this SDK) and sends a larger answer anyway is refused from gRPC's
// length prefix: the stream breaks, so its call and every other call in
// flight on it fail with ErrTooLarge naming both sizes; the host never
// holds the message.
func TestResultOverLimitFromAPluginThatIgnoresIt(t *testing.T) {
	t.Parallel()
	var big, other uint64
	c, _ := serveLimited(t, 2, &fake{calls: func(s callsStream) error {
		for big == 0 || other == 0 {
			f, err := s.Recv()
			if err != nil {
				return err
			}
			if st, ok := f.GetMsg().(*pluginpb.HostFrame_Start); ok {
				if st.Start.GetTool() == "big" {
					big = f.GetCallId()
				} else {
					other = f.GetCallId()
				}
			}
		}
		if err := s.Send(resultFrame(big, `{"content":[],"pad":"`+strings.Repeat("x", 2<<20)+`"}`)); err != nil {
			return err
		}
		<-s.Context().Done()
		return nil
	}}, &Limits{MaxResultSize: 1 << 20})
	otherDone := make(chan error, 1)
	go func() {
		_, err := c.CallTool(t.Context(), &pluginhost.CallRequest{Tool: "other"})
		otherDone <- err
	}()
	_, err := c.CallTool(t.Context(), &pluginhost.CallRequest{Tool: "big"})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "over MaxResultSize (1048576 bytes)") {
		t.Errorf("big: %v, want ErrTooLarge naming the limit", err)
	}
	if err := <-otherDone; !errors.Is(err, ErrTooLarge) {
		t.Errorf("the call beside it: %v, want ErrTooLarge (the stream broke)", err)
	}
}
