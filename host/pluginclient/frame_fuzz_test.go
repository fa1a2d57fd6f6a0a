package pluginclient

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/internal/pluginpb"
	"github.com/plughost/plughost/internal/pluginwire"
	"github.com/plughost/plughost/pluginproto"
)

// FuzzPluginFrame is what a plugin sends back for a call, as the host's
// Client reads it: any bytes, decoded as the frame of the plugin's
// CallsV2 stream (progress, log, result, error, input_required, detach).
// Whatever they are, the Client never panics; a notification reaches its
// callback; a final frame is either a result that is a JSON object, or an
// error naming the call and saying what the plugin did wrong (an
// *InputRequiredError or *CapabilityRequiredError carries only what
// passed its checks). The same bytes as a resource's or prompt's answer
// go through answer's checks. The corpus the fuzzer kept
// (testdata/fuzz/FuzzPluginFrame) replays in every `go test`.
func FuzzPluginFrame(f *testing.F) {
	for _, fr := range []*pluginpb.PluginFrame{
		{Msg: &pluginpb.PluginFrame_Result{Result: []byte(`{"content":[{"type":"text","text":"ok"}]}`)}},
		{Msg: &pluginpb.PluginFrame_Result{Result: []byte(`{"content":`)}},
		{Msg: &pluginpb.PluginFrame_Result{Result: []byte(` ["x"]`)}},
		{Msg: &pluginpb.PluginFrame_Progress{Progress: &pluginpb.Progress{Progress: 1, Total: 2, Message: "half"}}},
		{Msg: &pluginpb.PluginFrame_Log{Log: &pluginpb.LogMessage{Level: "loud", Logger: "x", Data: []byte(`not json`)}}},
		{Msg: &pluginpb.PluginFrame_Error{Error: &pluginpb.CallError{Code: 13, Message: "tool \"x\" panicked: boom"}}},
		{Msg: &pluginpb.PluginFrame_Error{Error: &pluginpb.CallError{Code: 5, Message: "no tool"}}},
		{Msg: &pluginpb.PluginFrame_Error{Error: &pluginpb.CallError{Code: 9, Message: "needs", RequiredCapabilities: []byte(`{"sampling":{}}`)}}},
		{Msg: &pluginpb.PluginFrame_InputRequired{InputRequired: &pluginpb.InputRequired{
			Requests:     []byte(`{"q":{"method":"elicitation/create","params":{"message":"?","requestedSchema":{"type":"object","properties":{}}}}}`),
			RequestState: "state"}}},
		{Msg: &pluginpb.PluginFrame_InputRequired{InputRequired: &pluginpb.InputRequired{Requests: []byte(`{"":{"method":"ping"}}`)}}},
	} {
		b, err := proto.Marshal(fr)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("\"\x0e{\"\":[{\"\x94\":\"\"}]}")) // a result with invalid UTF-8 in a string
	f.Fuzz(func(t *testing.T, b []byte) {
		var fr pluginpb.PluginFrame
		if proto.Unmarshal(b, &fr) != nil {
			return // gRPC refuses the frame: the stream breaks (ErrPluginClosed)
		}
		notified := 0
		req := &pluginhost.CallRequest{Tool: "fuzzed",
			Progress: func(float64, float64, string) { notified++ },
			Log:      func(string, string, json.RawMessage) { notified++ },
		}
		res, final, err := (&mux{}).frame(t.Context(), req, &fr)
		switch {
		case !final && (res != nil || err != nil):
			t.Fatalf("frame %v: not final, but answered %q, %v", &fr, res, err)
		case !final && (fr.GetProgress() != nil || fr.GetLog() != nil) && notified != 1:
			t.Fatalf("frame %v: %d callbacks, want 1", &fr, notified)
		case !final:
		case err == nil && (!pluginwire.IsObject(res) || !utf8.Valid(res)):
			t.Fatalf("frame %v: the result %q is not a JSON object in UTF-8", &fr, res)
		case err != nil:
			checkFrameError(t, &fr, err, `call "fuzzed"`)
		}
		if fr.GetResult() == nil && fr.GetInputRequired() == nil {
			return
		}
		res, err = answer("read resource", fr.GetResult(), fr.GetInputRequired())
		if err == nil && !pluginwire.IsObject(res) {
			t.Fatalf("frame %v: the resource's answer %q is not a JSON object", &fr, res)
		}
		if err != nil {
			checkFrameError(t, &fr, err, "read resource")
		}
	})
}

// checkFrameError fails t unless err is one a host can act on: an
// *InputRequiredError whose requests passed the checks, a
// *CapabilityRequiredError whose capabilities are an object, or an error
// whose message names what (the call, the read).
func checkFrameError(t *testing.T, fr *pluginpb.PluginFrame, err error, what string) {
	var ir *pluginproto.InputRequiredError
	var cr *pluginproto.CapabilityRequiredError
	switch {
	case errors.As(err, &ir):
		if pluginwire.CheckRequests(ir.Requests) != nil || len(ir.State) > pluginwire.MaxRequestState {
			t.Fatalf("frame %v: input_required passed with bad requests %q", fr, ir.Requests)
		}
	case errors.As(err, &cr):
		if !pluginwire.IsObject(cr.Capabilities) {
			t.Fatalf("frame %v: required capabilities %q passed", fr, cr.Capabilities)
		}
	case !strings.HasPrefix(err.Error(), what+": "):
		t.Fatalf("frame %v: the error %q does not name %s", fr, err, what)
	}
}

// A result whose strings hold bytes that are not UTF-8 is valid JSON to
// json.Valid, but not JSON text: the Client refuses it (FuzzSession found
// the host passing one on to a client).
func TestResultNotUTF8(t *testing.T) {
	fr := &pluginpb.PluginFrame{Msg: &pluginpb.PluginFrame_Result{Result: []byte("{\"content\":[{\"type\":\"text\",\"text\":\"\x94\"}]}")}}
	_, final, err := (&mux{}).frame(t.Context(), &pluginhost.CallRequest{Tool: "t"}, fr)
	if !final || !errors.Is(err, ErrInvalidResult) {
		t.Fatalf("final %v, err %v; want ErrInvalidResult", final, err)
	}
}
