package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/plughost/plughost/host/mcp/internal/mcptest"
	"github.com/plughost/plughost/host/tool"
)

// pluginReply is what a plugin sends back for one call, as FuzzSession
// makes it up: one progress report, one log message and a result, each
// passed on as pluginproto's Client passes them: log data unchecked, a
// result only when it is valid JSON text, UTF-8 included (the Client
// refuses anything but a JSON object, FuzzPluginFrame checks that; Catalog.StartCall's contract
// is valid JSON, and the server turns a non-object into an isError).
type pluginReply struct {
	level, message  string
	data, result    []byte
	progress, total float64
}

// replyCatalog is mcptest's catalog with one more tool, "plugin", whose
// answer is reply: a catalog that passes on whatever a plugin said.
type replyCatalog struct {
	*mcptest.Catalog
	reply pluginReply
}

// StartCall answers on a goroutine of its own, as a plugin's stream
// reader does.
func (c *replyCatalog) StartCall(ctx context.Context, call *tool.Call, done func(json.RawMessage, error)) {
	if call.Name != "plugin" {
		c.Catalog.StartCall(ctx, call, done)
		return
	}
	go func() { done(c.reply.answer(call)) }()
}

// answer is what the plugin said to call.
func (r pluginReply) answer(call *tool.Call) (json.RawMessage, error) {
	if call.Progress != nil {
		call.Progress(tool.Progress{Progress: r.progress, Total: r.total, Message: r.message})
	}
	if call.Log != nil {
		call.Log(tool.Log{Level: r.level, Logger: r.message, Data: r.data})
	}
	if !json.Valid(r.result) || !utf8.Valid(r.result) {
		return nil, errors.New("the plugin's result is not valid JSON text")
	}
	return r.result, nil
}

// callAnswer starts the answer to FuzzSession's call of the plugin.
const callAnswer = `{"jsonrpc":"2.0","id":"fuzz-call","result":`

// lockedBuffer is the stdio session's output; answered is closed once it
// holds callAnswer.
type lockedBuffer struct {
	mu       sync.Mutex
	buf      bytes.Buffer
	answered chan struct{}
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	select {
	case <-b.answered:
	default:
		if bytes.Contains(b.buf.Bytes(), []byte(callAnswer)) {
			close(b.answered)
		}
	}
	return n, err
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// FuzzSession is a whole stdio session: initialize, a call of a tool whose
// plugin answers with fuzzed progress, log and result, then the fuzzed
// script, one JSON-RPC message per line (malformed lines, batches, calls,
// cancellations, anything). Whatever the client and the plugin send, the
// session ends cleanly at end of input, writes only complete single-line
// JSON messages, and answers the plugin's call exactly once. The corpus
// the fuzzer kept (testdata/fuzz/FuzzSession) replays in every `go test`.
func FuzzSession(f *testing.F) {
	scripts := []string{
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n" +
			`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"chatty","_meta":{"progressToken":"p"}}}` + "\n" +
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"ping"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"x"}]` + "\n" + `{"jsonrpc":"2.0","id":`,
		`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{}}` + "\n\n" + `{"jsonrpc":"2.0","id":9,"result":{}}`,
		`{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"x:/"}}` + "\n" + "\xff\xfe",
	}
	replies := []pluginReply{
		{"info", "working", []byte(`{"step":1}`), []byte(`{"content":[{"type":"text","text":"ok"}]}`), 1, 2},
		{"loud", "", []byte(`not json`), []byte(`{oops`), -1, 0},
		{"debug", "\u2028", []byte(`"a\nb"`), []byte("{\n\"content\":[]\n}"), 1e308, -0.5},
		{"", "", nil, []byte(`[]`), 0, 0},
	}
	for i, s := range scripts {
		r := replies[i%len(replies)]
		f.Add([]byte(s), r.level, r.message, r.data, r.result, r.progress, r.total)
	}
	f.Fuzz(func(t *testing.T, script []byte, level, message string, data, result []byte, progress, total float64) {
		cat := &replyCatalog{Catalog: mcptest.NewCatalog(), reply: pluginReply{level, message, data, result, progress, total}}
		cat.NoPark = true
		// The script follows once the call is answered: at end of input
		// the session cancels the calls still running, unanswered (the
		// client is gone), which would make the check below a race.
		pr, pw := io.Pipe()
		defer pr.Close() // ends the writer below, should the session end early
		out := &lockedBuffer{answered: make(chan struct{})}
		served := make(chan error, 1)
		go func() { served <- NewServer(cat, nil).ServeStdio(t.Context(), pr, out) }()
		go func() {
			io.WriteString(pw, strings.Join([]string{mcptest.InitMsg("2025-11-25"),
				`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
				`{"jsonrpc":"2.0","id":"s","method":"logging/setLevel","params":{"level":"debug"}}`,
				`{"jsonrpc":"2.0","id":"fuzz-call","method":"tools/call","params":{"name":"plugin","_meta":{"progressToken":1}}}`,
				""}, "\n"))
			select {
			case <-out.answered:
				pw.Write(script)
			case <-t.Context().Done():
			}
			pw.Close()
		}()
		// The session ends once the script is in; the script goes in once
		// the call is answered.
		select {
		case err := <-served:
			if err != nil {
				t.Fatalf("the session ended with %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the plugin's call is not answered:\n%s", out)
		}
		select {
		case <-out.answered:
		default:
			t.Fatalf("the session ended before answering the plugin's call:\n%s", out)
		}
		answered := 0
		for line := range strings.Lines(out.String()) {
			line = strings.TrimSuffix(line, "\n")
			if strings.ContainsRune(line, '\r') || !jsonValid(line) {
				t.Fatalf("the server wrote %q", line)
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Result json.RawMessage `json:"result"`
			}
			if json.Unmarshal([]byte(line), &m) == nil && string(m.ID) == `"fuzz-call"` && m.Result != nil {
				answered++
			}
		}
		if answered > 1 && !bytes.Contains(script, []byte("fuzz-call")) {
			t.Fatalf("the plugin's call was answered %d times:\n%s", answered, out.String())
		}
	})
}
