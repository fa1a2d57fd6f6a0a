// Command conformance is the plughost plugin that serves every fixture the
// official MCP conformance suite (@modelcontextprotocol/conformance) asks of
// a server: one tool per kind of content (text, image, audio, embedded
// resource, a mix), a tool that fails, tools that log and report progress
// while they run, a tool whose input schema uses JSON Schema 2020-12
// keywords, the tool of the SSE polling scenario, tools that ask the client
// for sampling and elicitation, text and binary resources, a resource
// template, prompts (plain, with arguments, with an embedded resource, with
// an image), completion of prompt arguments, the tools and the prompt
// that answer MCP 2026-07-28's input-required results (mrtr.go), and the
// tools of 2026-07-28's stateless and custom-header scenarios
// (stateless.go): one that needs sampling, one that elicits, one that
// logs, triggers that change the tool and prompt lists, and one with an
// x-mcp-header parameter; and the tools of 2026-07-28's tasks scenarios
// (tasks.go): tools that go on as tasks, fail, panic, or ask the client
// before or during a task, and one that never is a task. Names and
// results are the ones the suite expects. `make conformance` serves it
// alone and runs the suite against the host; see README.md.
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"slices"
	"time"

	"github.com/plughost/plughost/pluginproto"
)

// version is set at build time (-X main.version=...).
var version = "dev"

// step is the pause between the log messages and progress reports of the
// logging and progress fixtures: the suite asks for about 50 ms, so that a
// client sees the notifications arrive one by one while the call runs.
const step = 50 * time.Millisecond

// The texts the suite's scenarios describe.
const (
	simpleText       = "This is a simple text response for testing."
	embeddedText     = "This is an embedded resource content."
	errorText        = "This tool intentionally returns an error for testing"
	mixedText        = "Multiple content types test:"
	mixedResource    = `{"test":"data","value":123}`
	reconnectionText = "Reconnection test completed successfully"
)

// The logging fixture's three messages, in order.
var logMessages = []string{"Tool execution started", "Tool processing data", "Tool execution completed"}

// jsonSchema2020 is the input schema of json_schema_2020_12_tool, verbatim
// from the suite 0.2.0-alpha.12 (whose json-schema-2020-12 scenario adds
// SEP-2106's $anchor, allOf/anyOf and if/then/else to the $schema, $defs
// and additionalProperties of 0.1.16's): the host must pass every keyword
// through to clients untouched. Arguments must name a phone or an email,
// the phone when contactMethod is phone, else the email.
const jsonSchema2020 = `{
	"$schema": "https://json-schema.org/draft/2020-12/schema",
	"type": "object",
	"$defs": {
		"address": {
			"$anchor": "addressDef",
			"type": "object",
			"properties": {"street": {"type": "string"}, "city": {"type": "string"}}
		}
	},
	"properties": {
		"name": {"type": "string"},
		"address": {"$ref": "#/$defs/address"},
		"contactMethod": {"type": "string", "enum": ["phone", "email"]},
		"phone": {"type": "string"},
		"email": {"type": "string"}
	},
	"allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
	"if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
	"then": {"required": ["phone"]},
	"else": {"required": ["email"]},
	"additionalProperties": false
}`

// noArguments is the input schema of the fixtures that take none.
var noArguments = json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)

func main() {
	pluginproto.Serve(newPlugin())
}

// fixture is one tool of the plugin.
type fixture struct {
	name, description string
	schema            json.RawMessage // nil: noArguments
	handler           pluginproto.Handler
	annotations       *pluginproto.Annotations // nil: readOnly
	tasks             pluginproto.TaskSupport  // whether its calls may go on as tasks
}

// readOnly are the annotations of the fixtures that change nothing.
var readOnly = &pluginproto.Annotations{ReadOnlyHint: new(true), OpenWorldHint: new(false)}

// fixtures lists the tools in the order tools/list shows them.
func fixtures() []fixture {
	return []fixture{
		{name: "test_simple_text", description: "Returns one text block.", handler: constant(pluginproto.TextResult(simpleText))},
		{name: "test_image_content", description: "Returns one image block: a 1x1 red PNG.",
			handler: constant(&pluginproto.Result{Content: []pluginproto.Content{pluginproto.Image(redPixelPNG, "image/png")}})},
		{name: "test_audio_content", description: "Returns one audio block: a tenth of a second of a 440 Hz tone as WAV.",
			handler: constant(&pluginproto.Result{Content: []pluginproto.Content{pluginproto.Audio(toneWAV, "audio/wav")}})},
		{name: "test_embedded_resource", description: "Returns one embedded text resource (test://embedded-resource).",
			handler: constant(&pluginproto.Result{Content: []pluginproto.Content{
				pluginproto.EmbeddedText("test://embedded-resource", "text/plain", embeddedText)}})},
		{name: "test_multiple_content_types", description: "Returns a text, an image and an embedded JSON resource in one result.",
			handler: constant(&pluginproto.Result{Content: []pluginproto.Content{
				pluginproto.Text(mixedText),
				pluginproto.Image(redPixelPNG, "image/png"),
				pluginproto.EmbeddedText("test://mixed-content-resource", "application/json", mixedResource),
			}})},
		{name: "test_tool_with_logging", description: "Sends three info log messages 50 ms apart while it runs, then returns.", handler: withLogging},
		{name: "test_tool_with_progress", description: "Reports progress 0, 50 and 100 of 100, 50 ms apart, when the client asks for progress; then returns.", handler: withProgress},
		{name: "test_error_handling", description: "Always fails: returns an isError result.", handler: constant(pluginproto.ErrorResult(errorText))},
		{name: "json_schema_2020_12_tool", description: "Tool with JSON Schema 2020-12 features ($schema, $defs, $anchor, $ref, allOf/anyOf, if/then/else, additionalProperties); returns its arguments.",
			schema: json.RawMessage(jsonSchema2020), handler: echoArguments},
		{name: "test_reconnection", description: "Runs for 100 ms, then returns. The SSE polling scenario calls it; whether its stream is closed and resumed is up to the host's transport.",
			handler: reconnection},
	}
}

func newPlugin() *pluginproto.Plugin {
	p := pluginproto.New("conformance", version)
	for _, f := range slices.Concat(fixtures(), askFixtures(), inputRequiredFixtures(), statelessFixtures(p), taskFixtures()) {
		schema := f.schema
		if schema == nil {
			schema = noArguments
		}
		annotations := f.annotations
		if annotations == nil {
			annotations = readOnly
		}
		p.AddTool(pluginproto.Tool{
			Name:        f.name,
			Description: f.description,
			InputSchema: schema,
			Annotations: annotations,
			TaskSupport: f.tasks,
		}, f.handler)
	}
	addResources(p)
	addPrompts(p)
	addInputRequiredPrompt(p)
	return p
}

// constant returns a handler that always returns r.
func constant(r *pluginproto.Result) pluginproto.Handler {
	return func(context.Context, *pluginproto.Request) (*pluginproto.Result, error) { return r, nil }
}

// pause waits d, or returns the context's error if the call is cancelled
// first.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func withLogging(ctx context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
	for i, msg := range logMessages {
		if i > 0 {
			if err := pause(ctx, step); err != nil {
				return nil, fmt.Errorf("cancelled after %d of %d log messages: %w", i, len(logMessages), err)
			}
		}
		req.Log(pluginproto.LevelInfo, msg)
	}
	return pluginproto.TextResult(fmt.Sprintf("Tool with logging executed successfully: sent %d log messages", len(logMessages))), nil
}

func withProgress(ctx context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
	const total = 100
	for i, p := range []float64{0, 50, 100} {
		if i > 0 {
			if err := pause(ctx, step); err != nil {
				return nil, fmt.Errorf("cancelled at progress %v of %d: %w", p, total, err)
			}
		}
		req.Progress(p, total, fmt.Sprintf("%v of %d", p, total))
	}
	return pluginproto.TextResult(fmt.Sprintf("Tool with progress executed successfully: progress 0, 50 and 100 of %d", total)), nil
}

func echoArguments(_ context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
	args := req.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, args); err != nil {
		return nil, fmt.Errorf("invalid arguments for tool %q: %w", req.Tool, err)
	}
	return pluginproto.TextResult("Received arguments: " + compact.String()), nil
}

func reconnection(ctx context.Context, _ *pluginproto.Request) (*pluginproto.Result, error) {
	if err := pause(ctx, 2*step); err != nil {
		return nil, fmt.Errorf("test_reconnection cancelled: %w", err)
	}
	return pluginproto.TextResult(reconnectionText), nil
}

// redPixelPNG is a 1x1 PNG of one opaque red pixel.
var redPixelPNG = func() []byte {
	img := image.NewNRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.NRGBA{R: 0xff, A: 0xff})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err) // cannot happen: a 1x1 image always encodes
	}
	return buf.Bytes()
}()

// toneWAV is 100 ms of a 440 Hz sine at 8 kHz, 16-bit mono PCM, as a WAV
// file (RIFF header, fmt chunk, data chunk).
var toneWAV = func() []byte {
	const (
		rate     = 8000
		samples  = rate / 10
		channels = 1
		bits     = 16
	)
	pcm := make([]byte, 0, samples*bits/8)
	for i := range samples {
		v := int16(math.Round(0.3 * math.MaxInt16 * math.Sin(2*math.Pi*440*float64(i)/rate)))
		pcm = binary.LittleEndian.AppendUint16(pcm, uint16(v))
	}
	var b []byte
	b = append(b, "RIFF"...)
	b = binary.LittleEndian.AppendUint32(b, uint32(36+len(pcm)))
	b = append(b, "WAVEfmt "...)
	b = binary.LittleEndian.AppendUint32(b, 16) // fmt chunk size
	b = binary.LittleEndian.AppendUint16(b, 1)  // PCM
	b = binary.LittleEndian.AppendUint16(b, channels)
	b = binary.LittleEndian.AppendUint32(b, rate)
	b = binary.LittleEndian.AppendUint32(b, rate*channels*bits/8) // byte rate
	b = binary.LittleEndian.AppendUint16(b, channels*bits/8)      // block align
	b = binary.LittleEndian.AppendUint16(b, bits)
	b = append(b, "data"...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(pcm)))
	return append(b, pcm...)
}()
