package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"image/color"
	"image/png"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/plughost/plughost/internal/pluginhost"
)

// block is a content block as a client decodes it.
type block struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	Data     string `json:"data,omitempty"`
	MIMEType string `json:"mimeType,omitempty"`
	Resource *struct {
		URI      string `json:"uri"`
		MIMEType string `json:"mimeType"`
		Text     string `json:"text"`
	} `json:"resource,omitempty"`
}

type result struct {
	Content []block `json:"content"`
	IsError bool    `json:"isError"`
}

func call(t *testing.T, ctx context.Context, req *pluginhost.CallRequest) result {
	t.Helper()
	raw, err := pluginhost.Of(newPlugin()).CallTool(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var r result
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("result %s: %v", raw, err)
	}
	return r
}

func TestToolNamesAreTheSuites(t *testing.T) {
	t.Parallel()
	// The names @modelcontextprotocol/conformance 0.1.16 calls (see its
	// server scenarios); a renamed tool fails a scenario.
	want := []string{
		"test_simple_text", "test_image_content", "test_audio_content", "test_embedded_resource",
		"test_multiple_content_types", "test_tool_with_logging", "test_tool_with_progress",
		"test_error_handling", "json_schema_2020_12_tool", "test_reconnection",
		"test_sampling", "test_elicitation", "test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums",
		// and those 0.2.0-alpha.12 adds for 2026-07-28's input-required results
		"test_input_required_result_elicitation", "test_input_required_result_sampling",
		"test_input_required_result_list_roots", "test_input_required_result_request_state",
		"test_input_required_result_multiple_inputs", "test_input_required_result_multi_round",
		"test_input_required_result_tampered_state", "test_input_required_result_capabilities",
		// and those its server-stateless and http-custom-header-server-validation
		// scenarios call (test_dynamic_tool is absent until
		// test_trigger_tool_change adds it)
		"test_missing_capability", "test_streaming_elicitation", "test_logging_tool",
		"test_trigger_tool_change", "test_trigger_prompt_change", "test_header_param",
		// and those its tasks scenarios call
		"greet", "slow_compute", "failing_job", "protocol_error_job", "confirm_delete", "multi_input", "test_tool_with_task",
	}
	var got []string
	for _, raw := range newPlugin().Tools() {
		var tool struct {
			Name, Description string
			InputSchema       map[string]any
		}
		if err := json.Unmarshal(raw, &tool); err != nil {
			t.Fatal(err)
		}
		got = append(got, tool.Name)
		if tool.Description == "" || tool.InputSchema["type"] != "object" {
			t.Errorf("tool %s: description %q, inputSchema %v; the tools-list scenario wants both", tool.Name, tool.Description, tool.InputSchema)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
}

func TestContentFixtures(t *testing.T) {
	t.Parallel()
	png64 := base64.StdEncoding.EncodeToString(redPixelPNG)
	wav64 := base64.StdEncoding.EncodeToString(toneWAV)
	type res = struct {
		URI      string `json:"uri"`
		MIMEType string `json:"mimeType"`
		Text     string `json:"text"`
	}
	tests := map[string]struct {
		args string
		want result
	}{
		"test_simple_text":   {want: result{Content: []block{{Type: "text", Text: simpleText}}}},
		"test_image_content": {want: result{Content: []block{{Type: "image", Data: png64, MIMEType: "image/png"}}}},
		"test_audio_content": {want: result{Content: []block{{Type: "audio", Data: wav64, MIMEType: "audio/wav"}}}},
		"test_embedded_resource": {want: result{Content: []block{{Type: "resource",
			Resource: &res{URI: "test://embedded-resource", MIMEType: "text/plain", Text: embeddedText}}}}},
		"test_multiple_content_types": {want: result{Content: []block{
			{Type: "text", Text: mixedText},
			{Type: "image", Data: png64, MIMEType: "image/png"},
			{Type: "resource", Resource: &res{URI: "test://mixed-content-resource", MIMEType: "application/json", Text: `{"test":"data","value":123}`}},
		}}},
		"test_error_handling": {want: result{Content: []block{{Type: "text", Text: errorText}}, IsError: true}},
		"json_schema_2020_12_tool": {args: `{"name": "Ada", "address": {"city": "London"}, "email": "ada@example.com"}`,
			want: result{Content: []block{{Type: "text", Text: `Received arguments: {"name":"Ada","address":{"city":"London"},"email":"ada@example.com"}`}}}},
		"test_reconnection": {want: result{Content: []block{{Type: "text", Text: reconnectionText}}}},
	}
	for tool, tc := range tests {
		t.Run(tool, func(t *testing.T) {
			t.Parallel()
			got := call(t, t.Context(), &pluginhost.CallRequest{Tool: tool, Arguments: json.RawMessage(tc.args)})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

func TestImageIsOneRedPixel(t *testing.T) {
	t.Parallel()
	img, err := png.Decode(bytes.NewReader(redPixelPNG))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 1 || b.Dy() != 1 {
		t.Fatalf("image is %dx%d, want 1x1", b.Dx(), b.Dy())
	}
	if got := color.NRGBAModel.Convert(img.At(0, 0)); got != (color.NRGBA{R: 0xff, A: 0xff}) {
		t.Errorf("pixel = %v, want opaque red", got)
	}
}

func TestAudioIsPCMWAV(t *testing.T) {
	t.Parallel()
	var h struct {
		Riff        [4]byte
		Size        uint32
		Wave, Fmt   [4]byte
		FmtSize     uint32
		Format      uint16
		Channels    uint16
		Rate        uint32
		ByteRate    uint32
		Align, Bits uint16
		Data        [4]byte
		DataSize    uint32
	}
	if err := binary.Read(bytes.NewReader(toneWAV), binary.LittleEndian, &h); err != nil {
		t.Fatal(err)
	}
	got := []any{string(h.Riff[:]), h.Size, string(h.Wave[:]), string(h.Fmt[:]), h.Format, h.Channels, h.Rate, h.Bits, string(h.Data[:]), h.DataSize}
	want := []any{"RIFF", uint32(len(toneWAV) - 8), "WAVE", "fmt ", uint16(1), uint16(1), uint32(8000), uint16(16), "data", uint32(len(toneWAV) - 44)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("WAV header (-want +got):\n%s", diff)
	}
	if h.DataSize != 1600 {
		t.Errorf("data is %d bytes, want 100 ms of 8 kHz 16-bit mono (1600)", h.DataSize)
	}
}

func TestLoggingSendsThreeInfoMessagesInOrder(t *testing.T) {
	t.Parallel()
	type logged struct{ Level, Data string }
	var mu sync.Mutex
	var got []logged
	r := call(t, t.Context(), &pluginhost.CallRequest{Tool: "test_tool_with_logging", Log: func(level, _ string, data json.RawMessage) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, logged{level, string(data)})
	}})
	want := []logged{{"info", `"Tool execution started"`}, {"info", `"Tool processing data"`}, {"info", `"Tool execution completed"`}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log messages (-want +got):\n%s", diff)
	}
	if r.IsError || len(r.Content) != 1 || !strings.Contains(r.Content[0].Text, "3 log messages") {
		t.Errorf("result = %+v", r)
	}
}

func TestProgress(t *testing.T) {
	t.Parallel()
	t.Run("reported when asked", func(t *testing.T) {
		t.Parallel()
		var mu sync.Mutex
		var got [][2]float64
		r := call(t, t.Context(), &pluginhost.CallRequest{Tool: "test_tool_with_progress", Progress: func(p, total float64, _ string) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, [2]float64{p, total})
		}})
		if diff := cmp.Diff([][2]float64{{0, 100}, {50, 100}, {100, 100}}, got); diff != "" {
			t.Errorf("progress (-want +got):\n%s", diff)
		}
		if r.IsError {
			t.Errorf("result = %+v", r)
		}
	})
	t.Run("silent otherwise", func(t *testing.T) {
		t.Parallel()
		// Without a Progress callback the SDK tells the handler no client
		// asked; the call still runs to its result.
		r := call(t, t.Context(), &pluginhost.CallRequest{Tool: "test_tool_with_progress"})
		if r.IsError || len(r.Content) != 1 {
			t.Errorf("result = %+v", r)
		}
	})
}

func TestCancelledCallsStop(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"test_tool_with_logging", "test_tool_with_progress", "test_reconnection"} {
		t.Run(tool, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			r := call(t, ctx, &pluginhost.CallRequest{Tool: tool})
			if !r.IsError || len(r.Content) != 1 || !strings.Contains(r.Content[0].Text, "cancel") {
				t.Errorf("result of a cancelled call = %+v, want an isError result saying it was cancelled", r)
			}
		})
	}
}
