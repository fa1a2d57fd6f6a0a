package mcp

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestInputWaitsOffWorkers: calls waiting for the client hold no worker of
// the read loop, through which the client's answers come. With
// MaxInFlight 1 (4 workers, at most 4 calls in input rounds), 4 calls
// wait for roots/list; one more call needing input is answered at once
// with the limit (-32602 for a read, an isError result for a tool), a
// call needing none runs, and the 4 answers, read at once, let the
// waiting calls finish; the limit then has room again. Over stdio (tools
// start inline) and over a transport whose calls all run on workers (as
// the legacy HTTP+SSE endpoint's).
func TestInputWaitsOffWorkers(t *testing.T) {
	t.Parallel()
	const limit = `the provider needs the client's input, but 4 requests of this session already wait for the client, the most allowed; answer or cancel one of them first`
	read := `{"jsonrpc":"2.0","id":%q,"method":"resources/read","params":{"uri":"input://roots"}}`
	prompt := `{"jsonrpc":"2.0","id":%q,"method":"prompts/get","params":{"name":"roots"}}`
	call := `{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":"roots","arguments":{}}}`
	tests := map[string]struct {
		stdio   bool
		waiting []string // the calls that wait; over stdio tools/call starts inline, holding no worker anyway
	}{
		"stdio":   {stdio: true, waiting: []string{read, prompt, read, prompt}},
		"workers": {waiting: []string{read, prompt, call, read}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// Before the fix the read loop froze until the input timeout:
			// a long one turns that into a failure, never a wait.
			c := newClient(t, clientOptions{stdio: tt.stdio, server: Options{MaxInFlight: 1, InputTimeout: time.Minute}})
			c.initializeWith("2025-11-25", `{"roots":{}}`, true)
			var asked []string
			for i, msg := range tt.waiting {
				c.write(sprintf(msg, "w"+itoa(i)))
				r := decode(t, c.next())
				if r.Method != "roots/list" {
					t.Fatalf("call %d: got %+v, want its roots/list request", i, r)
				}
				asked = append(asked, string(r.ID))
			}
			// One more needing input: refused at once, naming the limit.
			if r := c.one(sprintf(read, "over-read")); r.Error == nil || r.Error.Code != -32602 || r.Error.Message != "invalid params: "+limit {
				t.Errorf("a read over the limit: %s %+v, want -32602 %q", r.Result, r.Error, limit)
			}
			if r := c.one(sprintf(call, "over-call")); r.Error != nil || !strings.Contains(string(r.Result), `"isError":true`) ||
				!strings.Contains(string(r.Result), limit) {
				t.Errorf("a tool over the limit: %s %+v, want an isError result naming the limit", r.Result, r.Error)
			}
			// A call needing no input runs: a worker is free.
			if r := c.one(`{"jsonrpc":"2.0","id":"e","method":"tools/call","params":{"name":"echo","arguments":{"text":"free"}}}`); r.Error != nil ||
				!strings.Contains(string(r.Result), "free") {
				t.Errorf("a call while 4 wait for the client: %s %+v", r.Result, r.Error)
			}
			for _, id := range asked {
				c.write(`{"jsonrpc":"2.0","id":` + id + `,"result":{"roots":[{"uri":"file:///w"}]}}`)
			}
			answered := map[string]string{}
			for range asked {
				r := decode(t, c.next())
				answered[string(r.ID)] = string(r.Result) + string(mustJSON(r.Error))
			}
			for i := range asked {
				if got := answered[`"w`+itoa(i)+`"`]; !strings.Contains(got, "roots: file:///w") {
					t.Errorf("waiting call %d answered %s", i, got)
				}
			}
			// The limit has room again.
			c.write(sprintf(read, "after"))
			r := decode(t, c.next())
			if r.Method != "roots/list" {
				t.Fatalf("a read after the others finished: %+v, want its roots/list request", r)
			}
			if r := c.one(`{"jsonrpc":"2.0","id":` + string(r.ID) + `,"result":{"roots":[]}}`); !strings.Contains(string(r.Result), "roots: ") {
				t.Errorf("the read after: %s %+v", r.Result, r.Error)
			}
		})
	}
}

// TestInputRoundsInBatch: in a 2025-03-26 batch, a call waiting for the
// client holds no worker either; the batch's response, written once its
// last call finishes, holds every answer.
func TestInputRoundsInBatch(t *testing.T) {
	t.Parallel()
	c := newClient(t, clientOptions{server: Options{MaxInFlight: 1}})
	c.initializeWith("2025-03-26", `{"roots":{}}`, true)
	c.write(`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"roots","arguments":{}}},` +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"batched"}}}]`)
	r := decode(t, c.next())
	if r.Method != "roots/list" {
		t.Fatalf("got %+v, want the roots/list request", r)
	}
	// Three more batches whose calls wait (4 in all, as many as the read
	// loop has workers), then one needing none: it runs.
	var asked []string
	for i := range 3 {
		c.write(`[{"jsonrpc":"2.0","id":"b` + itoa(i) + `","method":"tools/call","params":{"name":"roots","arguments":{}}}]`)
		asked = append(asked, string(decode(t, c.next()).ID))
	}
	if got := c.writeNext(`[{"jsonrpc":"2.0","id":"e","method":"tools/call","params":{"name":"echo","arguments":{"text":"free"}}}]`); !strings.Contains(got, "free") {
		t.Errorf("a batch while 4 calls wait for the client: %s", got)
	}
	c.write(`{"jsonrpc":"2.0","id":` + string(r.ID) + `,"result":{"roots":[{"uri":"file:///w"}]}}`)
	got := c.next()
	var elems []response
	if err := json.Unmarshal([]byte(got), &elems); err != nil || len(elems) != 2 {
		t.Fatalf("the batch's response %s, want 2 answers", got)
	}
	if !strings.Contains(got, "roots: file:///w") || !strings.Contains(got, "batched") {
		t.Errorf("the batch's response %s", got)
	}
	for _, id := range asked {
		c.write(`{"jsonrpc":"2.0","id":` + id + `,"result":{"roots":[]}}`)
	}
	for range asked {
		if got := c.next(); !strings.HasPrefix(got, `[{"jsonrpc":"2.0","id":"b`) || !strings.Contains(got, "roots: ") {
			t.Errorf("a one-call batch answered %s", got)
		}
	}
}

// writeNext sends msg and returns the next message the server writes.
func (c *client) writeNext(msg string) string {
	c.t.Helper()
	c.write(msg)
	return c.next()
}

func sprintf(format, id string) string { return strings.Replace(format, "%q", `"`+id+`"`, 1) }

func itoa(i int) string { return string(rune('0' + i)) }

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
