package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/manager"
	"github.com/plughost/plughost/host/serve"
	"github.com/plughost/plughost/host/tool"
)

// poisonHooks is an in-process tool.Hooks standing in for the operator's
// chain with one on_definitions hook, "defs": it hides a definition whose
// description addresses the model in an <IMPORTANT> tag (the bundled
// definitions scanner finds that and more; this test is about what the
// host does with its answer).
type poisonHooks struct {
	mu    sync.Mutex
	asked []json.RawMessage
}

func (*poisonHooks) Has(p tool.HookPoint) bool { return p == tool.OnDefinitions }

func (h *poisonHooks) Apply(_ context.Context, q *tool.HookCall) (json.RawMessage, error) {
	h.mu.Lock()
	h.asked = append(h.asked, q.Definition)
	h.mu.Unlock()
	var d struct{ Description string }
	if err := json.Unmarshal(q.Definition, &d); err != nil {
		return nil, err
	}
	if strings.Contains(d.Description, "<IMPORTANT>") {
		return nil, tool.Errorf(tool.ErrRefused, `refused by hook "defs": hidden instructions to the model in the description`)
	}
	return q.Definition, nil
}

// publications is a manager.Publisher that hands on what it is given.
type publications chan tool.Provider

func (p publications) Set(pr tool.Provider) { p <- pr }
func (p publications) Remove(string)        {}

// A declared server wrapped by plughost (its hidden wrapper command, as a
// serving host runs it) is screened as a plugin is: the poisoned tool of
// a real stdio server on the official TypeScript SDK is held back with
// the hook's reason, a call of it refused with it, and its clean tool is
// served.
func TestWrappedServerPoisonedDefinitionHeld(t *testing.T) {
	t.Parallel()
	_, node := referenceServer(t, "server-everything") // node, and the conformance packages
	modules, err := filepath.Abs(filepath.Join("..", "..", "conformance", "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(filepath.Join("testdata", "poisoned-server.cjs"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	declare(t, dir, "poisoned", map[string]any{"command": node, "args": []string{script}, "env": map[string]string{"NODE_PATH": modules}})

	hooks := &poisonHooks{}
	pub := make(publications, 16)
	var logs bytes.Buffer
	var logMu sync.Mutex
	m, err := manager.New(&manager.Options{
		Dir:       dir,
		Wrapper:   []string{bin.plughost, serve.WrappedCommand},
		Publisher: pub,
		Hooks:     hooks,
		Logger:    hclog.New(&hclog.LoggerOptions{Output: &lockedWriter{w: &logs, mu: &logMu}, Level: hclog.Debug}),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		if t.Failed() {
			logMu.Lock()
			t.Logf("manager log:\n%s", logs.String())
			logMu.Unlock()
		}
	})

	var p tool.Provider
	select {
	case p = <-pub:
	case <-time.After(60 * time.Second):
		t.Fatal("the wrapped server was not published")
	}
	var names []string
	for _, d := range p.Tools() {
		names = append(names, d.Name)
	}
	if !slices.Equal(names, []string{"subtract"}) {
		t.Fatalf("published tools %v, want subtract alone: add is poisoned", names)
	}
	const reason = `refused by hook "defs": hidden instructions to the model in the description`
	var st manager.PluginStatus
	for _, s := range m.Status() {
		if s.Name == "poisoned" {
			st = s
		}
	}
	if len(st.Held) != 1 || st.Held[0].Name != "add" || st.Held[0].State != manager.DefFlagged || st.Held[0].Reason != reason ||
		!strings.Contains(string(st.Held[0].Listed), "mcp.json") {
		t.Fatalf("held = %+v, want add flagged with the hook's reason, as the server lists it", st.Held)
	}
	callCtx, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	_, err = p.CallTool(callCtx, &tool.Call{Name: "add", Arguments: json.RawMessage(`{"a":1,"b":2}`)})
	if !errors.Is(err, tool.ErrRefused) || !strings.Contains(err.Error(), reason) {
		t.Fatalf("call of add: %v, want the hook's refusal", err)
	}
	res, err := p.CallTool(callCtx, &tool.Call{Name: "subtract", Arguments: json.RawMessage(`{"a":5,"b":2}`)})
	if err != nil || !strings.Contains(string(res), `"text":"3"`) {
		t.Fatalf("call of subtract: %s, %v", res, err)
	}
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
