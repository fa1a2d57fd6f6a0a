package device

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/tools/txtar"

	"github.com/plughost/plughost/host/mcp"
)

var update = flag.Bool("update", false, "rewrite the server's lines (<) of testdata/*.txtar")

// TestTranscripts replays the exchanges of seeds 000 and 001 (and others)
// in testdata/*.txtar: a scripted device over a real TCP socket, the
// official go-sdk MCP client over an in-memory pipe, and a fake sampling
// client whose model answers are scripted.
//
// Lines ">" are what the test sends into plughost, "<" what plughost must
// send out (with -update they are rewritten from what it did send):
//
//	device> "FRAME"     the device writes these bytes (Go-quoted)
//	device< "FRAME"     plughost writes this frame to the device
//	mcp> tools/list     the MCP client lists tools...
//	mcp> call NAME ARGS ...or starts calling a tool (it runs in the background)
//	mcp< JSON           ...and gets this result
//	mcp< list_changed   the MCP client is told that the tool list changed
//	sampling< JSON      plughost asks the client's model (CreateMessageRequestParams)
//	sampling> JSON      and the model answers (CreateMessageResult)
//	# text              a comment
//
// At the end, every byte the device received must be the device< frames,
// in order, and nothing else.
func TestTranscripts(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	schemas := samplingSchemas(t)
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			t.Parallel()
			runTranscript(t, file, schemas)
		})
	}
}

// fakeSampler hands each sampling request to the transcript runner.
type fakeSampler struct {
	tools bool
	reqs  chan samplingReq
}

type samplingReq struct {
	params json.RawMessage
	reply  chan json.RawMessage
}

func (f *fakeSampler) SamplingTools() bool { return f.tools }

func (f *fakeSampler) CreateMessage(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	r := samplingReq{params, make(chan json.RawMessage, 1)}
	select {
	case f.reqs <- r:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case res := <-r.reply:
		return res, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// tee records every byte the device reads.
type tee struct {
	r   io.Reader
	mu  sync.Mutex
	buf bytes.Buffer
}

func (t *tee) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.mu.Lock()
	t.buf.Write(p[:n])
	t.mu.Unlock()
	return n, err
}

func runTranscript(t *testing.T, file string, schemas *samplingSchema) {
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(ar.Files) != 1 || ar.Files[0].Name != "transcript" {
		t.Fatalf("want one section, transcript")
	}
	sampler := &fakeSampler{tools: true, reqs: make(chan samplingReq)}
	b := startBridge(t, &Options{Sampler: sampler})

	// The MCP side: our server over a pipe, the go-sdk client.
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	served := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { served <- mcp.NewServer(b.cat, nil).ServeStdio(ctx, serverIn, serverOut) }()
	changed := make(chan struct{}, 10)
	client := sdk.NewClient(&sdk.Implementation{Name: "transcript", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := client.Connect(ctx, &sdk.IOTransport{Reader: clientIn, Writer: clientOut}, sessionEra)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		clientOut.Close()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("ServeStdio = %v, want nil after the client hung up", err)
			}
		case <-time.After(waitLong):
			t.Error("ServeStdio did not return after the client hung up")
		}
		cancel()
	})

	d := dial(t, b.addr)
	rec := &tee{r: d.nc}
	d.dec = NewDecoder(rec, 0)

	var want bytes.Buffer // every device< frame, in order
	var pendingMCP chan string
	var pendingSampling *samplingReq
	wait := func(what string) { t.Fatalf("%s: timed out", what) }
	lines := strings.Split(string(ar.Files[0].Data), "\n")
	for i, line := range lines {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		verb, arg, _ := strings.Cut(line, " ")
		where := fmt.Sprintf("%s:%d", filepath.Base(file), i+1)
		golden := func(got string) {
			if *update {
				lines[i] = verb + " " + got
				return
			}
			if got != arg {
				t.Fatalf("%s: got\n%s\nwant\n%s", where, got, arg)
			}
		}
		switch verb {
		case "device>":
			raw, err := strconv.Unquote(arg)
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			d.send(raw)
		case "device<":
			f := d.next()
			enc, _ := AppendFrame(nil, f)
			want.Write(enc)
			golden(strconv.Quote(string(enc)))
			if *update {
				continue
			}
			raw, _ := strconv.Unquote(arg)
			if raw != string(enc) {
				t.Fatalf("%s: transcript line is not a frame", where)
			}
		case "mcp>":
			res := make(chan string, 1)
			pendingMCP = res
			switch {
			case arg == "tools/list":
				go func() {
					r, err := cs.ListTools(ctx, nil)
					if err != nil {
						res <- jsonOrErr(nil, err)
						return
					}
					res <- jsonOrErr(r.Tools, nil)
				}()
			case strings.HasPrefix(arg, "call "):
				name, args, _ := strings.Cut(strings.TrimPrefix(arg, "call "), " ")
				go func() {
					r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
					res <- jsonOrErr(r, err)
				}()
			default:
				t.Fatalf("%s: unknown mcp request", where)
			}
		case "mcp<":
			if arg == "list_changed" {
				select {
				case <-changed:
				case <-time.After(waitLong):
					wait(where)
				}
				continue
			}
			select {
			case got := <-pendingMCP:
				golden(got)
			case <-time.After(waitLong):
				wait(where)
			}
		case "sampling<":
			select {
			case r := <-sampler.reqs:
				pendingSampling = &r
				if err := schemas.params.Validate(mustAny(t, r.params)); err != nil {
					t.Errorf("%s: sampling request does not match CreateMessageRequestParams: %v", where, err)
				}
				golden(string(r.params))
			case <-time.After(waitLong):
				wait(where)
			}
		case "sampling>":
			if pendingSampling == nil {
				t.Fatalf("%s: no sampling request to answer", where)
			}
			if err := schemas.result.Validate(mustAny(t, []byte(arg))); err != nil {
				t.Fatalf("%s: the scripted answer is no CreateMessageResult: %v", where, err)
			}
			pendingSampling.reply <- json.RawMessage(arg)
			pendingSampling = nil
		default:
			t.Fatalf("%s: unknown line %q", where, line)
		}
	}
	// Nothing more may arrive: a ping's answer must be the next frame.
	d.sendFrame(TypeStatus, SystemTask, 0, "##PING")
	d.expect(TypeStatus, "##INFO:PONG")
	rec.mu.Lock()
	got := rec.buf.String()
	rec.mu.Unlock()
	if !*update && got != want.String()+"##START\x05000000000000##INFO:PONG##END" {
		t.Errorf("the device received, byte for byte,\n%q\nwant\n%q", got, want.String())
	}
	if *update {
		ar.Files[0].Data = []byte(strings.Join(lines, "\n"))
		if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func jsonOrErr(v any, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "error: " + err.Error()
	}
	return string(b)
}

func mustAny(t *testing.T, b []byte) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	return v
}

// samplingSchema checks sampling messages against the official 2025-11-25
// schema.
type samplingSchema struct{ params, result *jsonschema.Schema }

func samplingSchemas(t *testing.T) *samplingSchema {
	t.Helper()
	const file = "../../internal/mcpschema/testdata/2025-11-25.json"
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	const url = "https://modelcontextprotocol.io/schema/2025-11-25.json"
	c := jsonschema.NewCompiler()
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	var s samplingSchema
	if s.params, err = c.Compile(url + "#/$defs/CreateMessageRequestParams"); err != nil {
		t.Fatal(err)
	}
	if s.result, err = c.Compile(url + "#/$defs/CreateMessageResult"); err != nil {
		t.Fatal(err)
	}
	return &s
}

// sessionEra makes a go-sdk client speak MCP 2025-11-25 (initialize, a
// session) instead of trying the stateless 2026-07-28 first: the tests
// that use it are about sessions.
var sessionEra = &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
