package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plughost/plughost/internal/mcpschema"
)

// wireCheck sits between the go-sdk client and plughost, and validates every
// message plughost writes against the official schema of the negotiated
// protocol version.
type wireCheck struct {
	mu        sync.Mutex
	methods   map[string]string // request id (raw JSON) → method
	stateless map[string]bool   // ids of requests of the stateless revision (2026-07-28)
	version   string            // negotiated protocol version
	schema    *mcpschema.Validator
	schema26  *mcpschema.Validator // 2026-07-28's, for the stateless requests
	errs      []error
	notified  map[string]int // notifications plughost sent, by method
	answered  map[string]int // responses plughost sent, by request id (raw JSON)
	done      chan struct{}  // closed once plughost's stdout is at EOF
}

func newWireCheck() *wireCheck {
	v, err := mcpschema.New("2026-07-28")
	if err != nil {
		panic(err)
	}
	return &wireCheck{methods: map[string]string{}, stateless: map[string]bool{}, schema26: v, notified: map[string]int{}, answered: map[string]int{}, done: make(chan struct{})}
}

// notifications returns how many notifications of method plughost sent; call
// it after the host has exited, to count them all.
func (w *wireCheck) notifications(method string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.notified[method]
}

// answers returns, for every request of method the client sent, how many
// responses plughost sent to it (by request id).
func (w *wireCheck) answers(method string) map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := map[string]int{}
	for id, m := range w.methods {
		if m == method {
			n[id] = w.answered[id]
		}
	}
	return n
}

func (w *wireCheck) errors() []error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.errs
}

func (w *wireCheck) fail(format string, args ...any) {
	w.errs = append(w.errs, fmt.Errorf(format, args...))
}

// fromClient records the method of every request the client sends.
func (w *wireCheck) fromClient(stdin io.WriteCloser) io.WriteCloser {
	return &clientTap{stdin, w, nil}
}

type clientTap struct {
	io.WriteCloser
	w       *wireCheck
	partial []byte
}

func (c *clientTap) Write(p []byte) (int, error) {
	c.partial = append(c.partial, p...)
	for {
		line, rest, ok := bytes.Cut(c.partial, []byte("\n"))
		if !ok {
			break
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Meta map[string]json.RawMessage `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &msg) == nil && msg.ID != nil && msg.Method != "" {
			c.w.mu.Lock()
			c.w.methods[string(msg.ID)] = msg.Method
			if msg.Params.Meta["io.modelcontextprotocol/protocolVersion"] != nil {
				c.w.stateless[string(msg.ID)] = true
			}
			c.w.mu.Unlock()
		}
		c.partial = rest
	}
	return c.WriteCloser.Write(p)
}

// fromServer validates each line plughost writes before the client reads it,
// and goes on reading (and checking) to EOF after the client has gone.
func (w *wireCheck) fromServer(stdout io.Reader) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		defer close(w.done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		clientGone := false
		for sc.Scan() {
			w.check(sc.Bytes())
			if !clientGone {
				_, err := pw.Write(append(sc.Bytes(), '\n'))
				clientGone = err != nil
			}
		}
		pw.CloseWithError(sc.Err())
	}()
	return pr
}

func (w *wireCheck) check(line []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
		Params struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if err := json.Unmarshal(line, &msg); err != nil {
		w.fail("plughost wrote a line that is not a JSON-RPC message: %q", line)
		return
	}
	if msg.ID == nil && msg.Method != "" {
		w.notified[msg.Method]++
	}
	if msg.ID != nil && msg.Method == "" {
		w.answered[string(msg.ID)]++
	}
	method := w.methods[string(msg.ID)]
	// A stateless request's answer, and what a subscriptions/listen stream
	// carries, follow 2026-07-28's schema.
	if (msg.ID != nil && w.stateless[string(msg.ID)]) || msg.Params.Meta["io.modelcontextprotocol/subscriptionId"] != nil {
		if err := w.schema26.Check(line, method); err != nil {
			w.fail("2026-07-28: %v\n  message: %s", err, line)
		}
		return
	}
	if method == "initialize" && w.schema == nil {
		w.version = msg.Result.ProtocolVersion
		v, err := mcpschema.New(w.version)
		if err != nil {
			w.fail("initialize negotiated %q: %v", w.version, err)
			return
		}
		w.schema = v
	}
	if w.schema == nil {
		// Before negotiation (e.g. the -32601 answering server/discover)
		// a message must suit every version.
		for _, version := range mcpschema.Versions() {
			v, err := mcpschema.New(version)
			if err == nil {
				err = v.Check(line, method)
			}
			if err != nil {
				w.fail("before initialize, %s: %v\n  message: %s", version, err, line)
			}
		}
		return
	}
	if err := w.schema.Check(line, method); err != nil {
		w.fail("%s: %v\n  message: %s", w.version, err, line)
	}
}

// signalProcess sends sig to pid.
func signalProcess(t *testing.T, pid int, sig syscall.Signal) {
	t.Helper()
	p, err := os.FindProcess(pid)
	if err == nil {
		err = p.Signal(sig)
	}
	if err != nil {
		t.Fatalf("kill %d: %v", pid, err)
	}
}

// sessionEra makes a go-sdk client speak MCP 2025-11-25 (initialize, a
// session) instead of trying the stateless 2026-07-28 first: the tests
// that use it are about sessions.
var sessionEra = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
